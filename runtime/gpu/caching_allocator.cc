#include "runtime/gpu/caching_allocator.h"

#include <algorithm>
#include <utility>

namespace distrt::gpu {

CachingAllocator::CachingAllocator(std::string name,
                                   std::unique_ptr<RawMemory> raw)
    : name_(std::move(name)), raw_(std::move(raw)) {}

CachingAllocator::~CachingAllocator() {
  absl::MutexLock lock(&mutex_);
  ReleaseCachedLocked();
}

size_t CachingAllocator::RoundedSize(size_t bytes) {
  constexpr size_t kSmallUnit = 512;
  constexpr size_t kLargeUnit = size_t{1} << 20;
  const size_t unit = bytes < kLargeUnit ? kSmallUnit : kLargeUnit;
  return std::max<size_t>(1, (bytes + unit - 1) / unit) * unit;
}

void* CachingAllocator::Allocate(size_t bytes) {
  const size_t size = RoundedSize(bytes);
  absl::MutexLock lock(&mutex_);
  void* ptr = nullptr;
  size_t block = size;
  auto cached = cached_.lower_bound(size);
  if (cached != cached_.end() && cached->first <= size + size / 4) {
    block = cached->first;
    ptr = cached->second;
    cached_.erase(cached);
    stats_.bytes_cached -= block;
    ++stats_.cache_hits;
  } else {
    ptr = raw_->Allocate(size);
    if (ptr == nullptr && !cached_.empty()) {
      ReleaseCachedLocked();
      ptr = raw_->Allocate(size);
    }
    if (ptr == nullptr) return nullptr;
    ++stats_.raw_allocations;
    stats_.bytes_reserved += size;
  }
  in_use_[ptr] = block;
  stats_.bytes_in_use += bytes;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return ptr;
}

void CachingAllocator::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  absl::MutexLock lock(&mutex_);
  auto used = in_use_.find(ptr);
  // Only a caller's bug gets here; keeping the block beats corrupting the
  // cache with it.
  if (used == in_use_.end()) return;
  cached_.emplace(used->second, ptr);
  stats_.bytes_cached += used->second;
  stats_.bytes_in_use -= bytes;
  in_use_.erase(used);
}

int64_t CachingAllocator::bytes_in_use() const {
  absl::MutexLock lock(&mutex_);
  return stats_.bytes_in_use;
}

int64_t CachingAllocator::peak_bytes_in_use() const {
  absl::MutexLock lock(&mutex_);
  return stats_.peak_bytes_in_use;
}

CachingAllocatorStats CachingAllocator::stats() const {
  absl::MutexLock lock(&mutex_);
  return stats_;
}

void CachingAllocator::ReleaseCached() {
  absl::MutexLock lock(&mutex_);
  ReleaseCachedLocked();
}

void CachingAllocator::ReleaseCachedLocked() {
  for (const auto& [size, ptr] : cached_) {
    raw_->Free(ptr);
    stats_.bytes_reserved -= size;
  }
  cached_.clear();
  stats_.bytes_cached = 0;
}

}  // namespace distrt::gpu
