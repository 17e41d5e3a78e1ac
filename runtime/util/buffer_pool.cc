#include "runtime/util/buffer_pool.h"

#include <cstdlib>
#include <new>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace distrt {
namespace {

constexpr size_t kAlignment = 64;
constexpr int kMinClassLog2 = 12;  // 4 KiB
constexpr int kNumClasses = 48;

// The size class holding `bytes`: the smallest power of two at least as
// large, and at least 4 KiB.
int ClassOf(size_t bytes) {
  int log2 = kMinClassLog2;
  while ((size_t{1} << log2) < bytes) ++log2;
  return log2 - kMinClassLog2;
}

size_t CapacityOf(int size_class) {
  return size_t{1} << (size_class + kMinClassLog2);
}

}  // namespace

// What buffers and the pool share: outlives the pool while buffers remain.
struct BufferPool::Buffer::Shared {
  explicit Shared(int64_t max_cached) : max_cached_bytes(max_cached) {}
  ~Shared() {
    for (auto& idle : idle_by_class) {
      for (char* data : idle) std::free(data);
    }
  }

  const int64_t max_cached_bytes;
  mutable absl::Mutex mu;
  // Set when the pool is destroyed: buffers given back later are freed.
  bool closed ABSL_GUARDED_BY(mu) = false;
  std::vector<char*> idle_by_class[kNumClasses] ABSL_GUARDED_BY(mu);
  int64_t cached_bytes ABSL_GUARDED_BY(mu) = 0;
};

BufferPool::BufferPool(Options options)
    : shared_(std::make_shared<Buffer::Shared>(options.max_cached_bytes)) {}

BufferPool::~BufferPool() {
  absl::MutexLock lock(&shared_->mu);
  shared_->closed = true;
}

BufferPool::Buffer BufferPool::Get(size_t bytes) {
  const int size_class = ClassOf(bytes);
  Buffer buffer;
  buffer.pool_ = shared_;
  buffer.size_ = bytes;
  buffer.capacity_ = CapacityOf(size_class);
  {
    absl::MutexLock lock(&shared_->mu);
    std::vector<char*>& idle = shared_->idle_by_class[size_class];
    if (!idle.empty()) {
      buffer.data_ = idle.back();
      idle.pop_back();
      shared_->cached_bytes -= buffer.capacity_;
      return buffer;
    }
  }
  buffer.data_ =
      static_cast<char*>(std::aligned_alloc(kAlignment, buffer.capacity_));
  if (buffer.data_ == nullptr) throw std::bad_alloc();
  return buffer;
}

int64_t BufferPool::cached_bytes() const {
  absl::MutexLock lock(&shared_->mu);
  return shared_->cached_bytes;
}

BufferPool::Buffer::~Buffer() { Release(); }

BufferPool::Buffer::Buffer(Buffer&& other) noexcept
    : pool_(std::move(other.pool_)),
      data_(other.data_),
      size_(other.size_),
      capacity_(other.capacity_) {
  other.data_ = nullptr;
  other.size_ = other.capacity_ = 0;
}

BufferPool::Buffer& BufferPool::Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::move(other.pool_);
    data_ = other.data_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

void BufferPool::Buffer::Release() {
  if (data_ == nullptr) return;
  char* data = data_;
  data_ = nullptr;
  {
    absl::MutexLock lock(&pool_->mu);
    const int64_t capacity = static_cast<int64_t>(capacity_);
    if (!pool_->closed &&
        pool_->cached_bytes + capacity <= pool_->max_cached_bytes) {
      pool_->idle_by_class[ClassOf(capacity_)].push_back(data);
      pool_->cached_bytes += capacity;
      data = nullptr;
    }
  }
  std::free(data);
  pool_.reset();
}

}  // namespace distrt
