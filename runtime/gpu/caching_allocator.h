#ifndef DISTRT_RUNTIME_GPU_CACHING_ALLOCATOR_H_
#define DISTRT_RUNTIME_GPU_CACHING_ALLOCATOR_H_

// CachingAllocator: keeps freed blocks for reuse instead of returning them,
// so that a training step, which allocates the same sizes every step, costs
// no cudaMalloc/cudaFree after the first (each of those synchronises the
// whole device). Blocks come from a RawMemory (cudaMalloc for GPUs; a fake
// in tests, which is why this file needs no CUDA).
//
// Sizes are rounded up (to 512 bytes below 1 MiB, to whole MiB above) and a
// request reuses the smallest cached block of at least its rounded size and
// at most a quarter more, so varying batch sizes do not pin huge blocks.
// When the raw memory is exhausted, every cached block is released and the
// allocation tried once more.
//
// Reuse is safe for GPU memory because all work touching a device's memory
// is queued on that device's one stream: a block freed by the host while
// kernels still read it is only reused by work queued after them.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "runtime/tensor/allocator.h"

namespace distrt::gpu {

// Where blocks come from and go back to.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  // nullptr when out of memory.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
};

struct CachingAllocatorStats {
  int64_t bytes_in_use = 0;  // as requested
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_cached = 0;     // in free blocks kept for reuse
  int64_t bytes_reserved = 0;   // held from the raw memory, in use or cached
  int64_t raw_allocations = 0;  // calls to RawMemory::Allocate that succeeded
  int64_t cache_hits = 0;       // allocations served from the cache
};

class CachingAllocator : public Allocator {
 public:
  CachingAllocator(std::string name, std::unique_ptr<RawMemory> raw);
  // Returns the cached blocks. Blocks still in use belong to tensors that
  // outlive their device: they are left to the raw memory's owner.
  ~CachingAllocator() override;

  std::string name() const override { return name_; }
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  int64_t bytes_in_use() const override;
  int64_t peak_bytes_in_use() const override;

  CachingAllocatorStats stats() const;
  // Gives every cached block back to the raw memory.
  void ReleaseCached();

  // The block size a request of `bytes` gets.
  static size_t RoundedSize(size_t bytes);

 private:
  void ReleaseCachedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::string name_;
  const std::unique_ptr<RawMemory> raw_;
  mutable absl::Mutex mutex_;
  // Free blocks by size.
  std::multimap<size_t, void*> cached_ ABSL_GUARDED_BY(mutex_);
  // Block size of every block in use.
  absl::flat_hash_map<void*, size_t> in_use_ ABSL_GUARDED_BY(mutex_);
  CachingAllocatorStats stats_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace distrt::gpu

#endif  // DISTRT_RUNTIME_GPU_CACHING_ALLOCATOR_H_
