#ifndef DISTRT_RUNTIME_DEVICE_OPAQUE_MEMORY_DEVICE_H_
#define DISTRT_RUNTIME_DEVICE_OPAQUE_MEMORY_DEVICE_H_

// OpaqueMemoryDevice (tests only): a CPU that pretends, as a GPU does, that
// the host cannot read its memory. Its allocator says host_accessible() ==
// false, so everything takes the path it takes on a GPU: uploads, scratch
// arrays, downloads, reductions through the device's math and the
// allocator's copies, and Tensor::flat on its tensors aborts. Its math is
// CpuMath, so results must equal a CPU device's. Counts the bytes that
// cross to and from the host, to check where copies happen. Type "OPAQUE":
// cross-device ops pick hierarchical copy for it, not a CPU or NCCL path.

#include <atomic>
#include <cstdint>

#include "runtime/device/device.h"

namespace distrt {

class OpaqueMemoryDevice final : public Device {
 public:
  explicit OpaqueMemoryDevice(int id);

  Allocator* allocator() override { return &memory_; }
  DeviceMath& math() override;
  absl::StatusOr<Tensor> CopyFrom(const Tensor& source) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }

  int64_t bytes_to_host() const { return memory_.to_host.load(); }
  int64_t bytes_from_host() const { return memory_.from_host.load(); }

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

    std::atomic<int64_t> in_use{0};
    std::atomic<int64_t> to_host{0};
    std::atomic<int64_t> from_host{0};
  };
  Memory memory_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DEVICE_OPAQUE_MEMORY_DEVICE_H_
