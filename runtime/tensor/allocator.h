#ifndef DISTRT_RUNTIME_TENSOR_ALLOCATOR_H_
#define DISTRT_RUNTIME_TENSOR_ALLOCATOR_H_

// Allocator: where a device's tensor buffers come from. Each device has one
// (the GPU issue adds a CUDA one); tensors free their buffer through the
// allocator that made it. Implementations are thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>

namespace distrt {

class Allocator {
 public:
  virtual ~Allocator() = default;

  // E.g. "cpu". For messages.
  virtual std::string name() const = 0;
  // `bytes` (> 0) aligned to at least kAlignment; nullptr when out of
  // memory.
  virtual void* Allocate(size_t bytes) = 0;
  // `ptr` from Allocate on this allocator, with the same `bytes`.
  virtual void Deallocate(void* ptr, size_t bytes) = 0;

  // Bytes allocated and not yet freed, and the most there ever were.
  virtual int64_t bytes_in_use() const = 0;
  virtual int64_t peak_bytes_in_use() const = 0;

  // Buffers are aligned for the widest vector loads Eigen uses on CPUs
  // (AVX-512) and for a cache line.
  static constexpr size_t kAlignment = 64;
};

// The process's host-memory allocator, shared by every CPU device.
Allocator* CpuAllocator();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TENSOR_ALLOCATOR_H_
