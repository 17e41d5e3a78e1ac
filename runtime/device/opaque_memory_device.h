#ifndef DISTRT_RUNTIME_DEVICE_OPAQUE_MEMORY_DEVICE_H_
#define DISTRT_RUNTIME_DEVICE_OPAQUE_MEMORY_DEVICE_H_

// OpaqueMemoryDevice (tests only): a CPU that pretends, as a GPU does, that
// the host cannot read its memory. Its allocator says host_accessible() ==
// false, so everything takes the path it takes on a GPU: uploads, scratch
// arrays, downloads, reductions through the device's math and the
// allocator's copies, and Tensor::flat on its tensors aborts. Its math is
// CpuMath behind a check that every array it is given lies in this device's
// memory (so a missing upload or peer copy fails, as it would on a GPU),
// and new memory is filled with NaN bytes, as a GPU's reused blocks hold
// garbage (so an array read before it is written shows). Results must
// equal a CPU device's. Counts the bytes that cross to and from the host.
// Type "OPAQUE": cross-device ops pick hierarchical copy for it.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/device.h"

namespace distrt {

class OpaqueMemoryDevice final : public Device {
 public:
  explicit OpaqueMemoryDevice(int id);
  ~OpaqueMemoryDevice() override;

  Allocator* allocator() override { return &memory_; }
  DeviceMath& math() override { return *math_; }
  absl::StatusOr<Tensor> CopyFrom(const Tensor& source) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }

  int64_t bytes_to_host() const { return memory_.to_host.load(); }
  int64_t bytes_from_host() const { return memory_.from_host.load(); }

  // Whether [ptr, ptr + bytes) lies in one live allocation of this device.
  bool Owns(const void* ptr, size_t bytes) const {
    return memory_.Owns(ptr, bytes);
  }

 private:
  class Memory final : public Allocator {
   public:
    std::string name() const override { return "opaque"; }
    void* Allocate(size_t bytes) override;
    void Deallocate(void* ptr, size_t bytes) override;
    int64_t bytes_in_use() const override { return in_use.load(); }
    int64_t peak_bytes_in_use() const override { return 0; }
    bool host_accessible() const override { return false; }
    absl::Status CopyToHost(const void* from, void* to, size_t bytes) override;
    absl::Status CopyFromHost(const void* from, void* to,
                              size_t bytes) override;
    absl::Status CopyWithin(const void* from, void* to, size_t bytes) override;
    absl::Status SetZero(void* to, size_t bytes) override;
    bool Owns(const void* ptr, size_t bytes) const;

    std::atomic<int64_t> in_use{0};
    std::atomic<int64_t> to_host{0};
    std::atomic<int64_t> from_host{0};

   private:
    mutable absl::Mutex mu_;
    std::map<uintptr_t, size_t> live_ ABSL_GUARDED_BY(mu_);
  };

  Memory memory_;
  std::unique_ptr<DeviceMath> math_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DEVICE_OPAQUE_MEMORY_DEVICE_H_
