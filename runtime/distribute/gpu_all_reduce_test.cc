// The in-replica all-reduce of GPU replicas: NcclAllReduce (what all-GPU
// replicas get automatically) and hierarchical copy on device memory, over
// every GPU of the machine (one is enough: NCCL then reduces a group of
// one). Skipped without a GPU.
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/distribute/cross_device_ops.h"
#include "runtime/distribute/hierarchical_copy_all_reduce.h"
#include "runtime/distribute/nccl_all_reduce.h"
#include "runtime/distribute/replica_group.h"
#include "runtime/gpu/gpu_probe.h"
#include "runtime/local_devices/local_devices.h"

namespace distrt {
namespace {

float ValueOf(int replica, int64_t i) {
  return static_cast<float>(replica + 1) + static_cast<float>(i % 13) * 0.25f;
}

class GpuAllReduceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu::GpuProbeResult probe = gpu::ProbeGpus();
    if (probe.gpus.empty()) {
      GTEST_SKIP() << "no usable GPU: " << probe.unavailable_reason;
    }
    LocalDevicesOptions options;
    ASSERT_TRUE(ParseDeviceSelection("gpu", &options).ok());
    absl::StatusOr<LocalDevices> local = CreateLocalDevices(options);
    ASSERT_TRUE(local.ok()) << local.status();
    local_ = *std::move(local);
  }

  // Every replica all-reduces its value with `ops`; returns each one's
  // result, read back to the host.
  std::vector<std::vector<float>> AllReduce(CrossDeviceOps& ops, ReduceOp op,
                                            int64_t size) {
    const int n = static_cast<int>(local_.devices.size());
    ReplicaGroup group(local_.pointers(), absl::Minutes(1));
    std::vector<std::vector<float>> results(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        std::vector<float> values(size);
        for (int64_t i = 0; i < size; ++i) values[i] = ValueOf(r, i);
        Device* device = group.device(r);
        absl::StatusOr<Tensor> value =
            device->CopyFrom(*Tensor::FromFloats(values, {size}));
        ASSERT_TRUE(value.ok()) << value.status();
        absl::Status s = ops.AllReduce(group, r, op, *value);
        ASSERT_TRUE(s.ok()) << s;
        absl::StatusOr<Tensor> host = HostDevice().CopyFrom(*value);
        ASSERT_TRUE(host.ok()) << host.status();
        auto flat = host->flat<float>();
        results[r].assign(flat.begin(), flat.end());
      });
    }
    for (std::thread& t : threads) t.join();
    return results;
  }

  void ExpectReduced(const std::vector<std::vector<float>>& results,
                     ReduceOp op, int64_t size) {
    const int n = static_cast<int>(results.size());
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(static_cast<int64_t>(results[r].size()), size);
      for (int64_t i = 0; i < size; ++i) {
        double expected = 0;
        for (int k = 0; k < n; ++k) expected += ValueOf(k, i);
        if (op == ReduceOp::kMean) expected /= n;
        ASSERT_NEAR(results[r][i], expected, 1e-4 * (1 + expected))
            << "replica " << r << " element " << i;
      }
    }
  }

  LocalDevices local_;
};

TEST_F(GpuAllReduceTest, NcclIsTheAutomaticChoiceAndReduces) {
  std::unique_ptr<CrossDeviceOps> ops = ChooseCrossDeviceOps(local_.pointers());
  EXPECT_EQ(ops->name(), "nccl");
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    for (int64_t size : {int64_t{1}, int64_t{1000}, int64_t{3} << 20}) {
      ExpectReduced(AllReduce(*ops, op, size), op, size);
    }
  }
}

TEST_F(GpuAllReduceTest, HierarchicalCopyReducesDeviceMemory) {
  HierarchicalCopyAllReduce ops(/*group_size=*/2);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    ExpectReduced(AllReduce(ops, op, 4099), op, 4099);
  }
}

TEST_F(GpuAllReduceTest, NcclRefusesCpuDevices) {
  CpuDevice cpu(DeviceName(), 0);
  Device* devices[] = {&cpu};
  EXPECT_EQ(CreateNcclAllReduce(devices).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt
