#include "runtime/tensor/allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace distrt {

absl::Status Allocator::CopyToHost(const void* from, void* to, size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
  return absl::OkStatus();
}

absl::Status Allocator::CopyFromHost(const void* from, void* to, size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
  return absl::OkStatus();
}

absl::Status Allocator::CopyWithin(const void* from, void* to, size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
  return absl::OkStatus();
}

absl::Status Allocator::SetZero(void* to, size_t bytes) {
  if (bytes > 0) std::memset(to, 0, bytes);
  return absl::OkStatus();
}

namespace {

class HostAllocator final : public Allocator {
 public:
  std::string name() const override { return "cpu"; }

  void* Allocate(size_t bytes) override {
    // aligned_alloc wants a multiple of the alignment.
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* ptr = std::aligned_alloc(kAlignment, rounded);
    if (ptr == nullptr) return nullptr;
    const int64_t now =
        in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return ptr;
  }

  void Deallocate(void* ptr, size_t bytes) override {
    if (ptr == nullptr) return;
    std::free(ptr);
    in_use_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  int64_t bytes_in_use() const override {
    return in_use_.load(std::memory_order_relaxed);
  }
  int64_t peak_bytes_in_use() const override {
    return peak_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
};

}  // namespace

Allocator* CpuAllocator() {
  static Allocator* const allocator = new HostAllocator();
  return allocator;
}

}  // namespace distrt
