#ifndef DISTRT_RUNTIME_TENSOR_ALLOCATOR_H_
#define DISTRT_RUNTIME_TENSOR_ALLOCATOR_H_

// Allocator: where a device's tensor buffers come from, and how their bytes
// are moved. Each device has one (host memory for CPUs, a caching allocator
// of device memory for GPUs); tensors free their buffer through the
// allocator that made it. Implementations are thread-safe.
//
// The host reads and writes host memory directly (Tensor::flat); memory the
// host cannot touch (a GPU's) is filled, copied and read back through the
// Copy*/SetZero methods, which the host allocator implements with memcpy and
// memset.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

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

  // Whether the host may dereference this allocator's buffers.
  virtual bool host_accessible() const { return true; }
  // `bytes` from this allocator's buffer at `from` to host memory at `to`;
  // returns when the bytes are there.
  virtual absl::Status CopyToHost(const void* from, void* to, size_t bytes);
  // `bytes` from host memory at `from` to this allocator's buffer at `to`;
  // `from` may be reused once it returns.
  virtual absl::Status CopyFromHost(const void* from, void* to, size_t bytes);
  // Between two buffers of this allocator.
  virtual absl::Status CopyWithin(const void* from, void* to, size_t bytes);
  virtual absl::Status SetZero(void* to, size_t bytes);

  // Buffers are aligned for the widest vector loads Eigen uses on CPUs
  // (AVX-512) and for a cache line.
  static constexpr size_t kAlignment = 64;
};

// The process's host-memory allocator, shared by every CPU device.
Allocator* CpuAllocator();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TENSOR_ALLOCATOR_H_
