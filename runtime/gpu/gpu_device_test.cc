// GpuDevice on a real GPU: copies both ways through the staging buffer (more
// than one chunk), device-side zeros and clones, the caching allocator's
// reuse, and errors naming the CUDA call. Skipped without a GPU.
#include "runtime/gpu/gpu_device.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/gpu/gpu_probe.h"

namespace distrt::gpu {
namespace {

class GpuDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuProbeResult probe = ProbeGpus();
    if (probe.gpus.empty()) {
      GTEST_SKIP() << "no usable GPU: " << probe.unavailable_reason;
    }
    absl::StatusOr<std::unique_ptr<GpuDevice>> made =
        GpuDevice::Create(DeviceName(), 0, probe.gpus[0].ordinal);
    ASSERT_TRUE(made.ok()) << made.status();
    device_ = *std::move(made);
  }

  std::vector<float> ToHost(const Tensor& tensor) {
    absl::StatusOr<Tensor> host = host_.CopyFrom(tensor);
    EXPECT_TRUE(host.ok()) << host.status();
    auto flat = host->flat<float>();
    return std::vector<float>(flat.begin(), flat.end());
  }

  CpuDevice host_{DeviceName(), 0};
  std::unique_ptr<GpuDevice> device_;
};

TEST_F(GpuDeviceTest, NameAndMemory) {
  EXPECT_EQ(device_->name().ToString(), "/device:GPU:0");
  EXPECT_EQ(device_->type(), "GPU");
  EXPECT_FALSE(device_->allocator()->host_accessible());
  EXPECT_THAT(device_->allocator()->name(), ::testing::HasSubstr("GPU:0"));
}

TEST_F(GpuDeviceTest, CopiesRoundTripThroughSeveralStagingChunks) {
  // 5M floats: 20 MB, five 4 MiB chunks of staging.
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{5} << 20}) {
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 9973);
    absl::StatusOr<Tensor> host = Tensor::FromFloats(values, {n});
    ASSERT_TRUE(host.ok());
    absl::StatusOr<Tensor> on_gpu = device_->CopyFrom(*host);
    ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();
    EXPECT_NE(on_gpu->allocator(), CpuAllocator());
    absl::StatusOr<Tensor> again = device_->CopyFrom(*on_gpu);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(ToHost(*again), values) << n;
  }
}

TEST_F(GpuDeviceTest, ZerosCloneAndMathOnTheDevice) {
  absl::StatusOr<Tensor> zeros =
      Tensor::Zeros(DType::kFloat32, {300}, device_->allocator());
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  ASSERT_TRUE(device_->math()
                  .Fill(100, 2.5f, static_cast<float*>(zeros->raw_data()))
                  .ok());
  absl::StatusOr<Tensor> clone = zeros->Clone();
  ASSERT_TRUE(clone.ok()) << clone.status();
  const std::vector<float> values = ToHost(*clone);
  EXPECT_EQ(values[0], 2.5f);
  EXPECT_EQ(values[99], 2.5f);
  EXPECT_EQ(values[100], 0.0f);
  EXPECT_TRUE(device_->Synchronize().ok());
}

TEST_F(GpuDeviceTest, StepsReuseCachedBlocks) {
  for (int step = 0; step < 10; ++step) {
    absl::StatusOr<Tensor> a =
        Tensor::Create(DType::kFloat32, {1 << 20}, device_->allocator());
    absl::StatusOr<Tensor> b =
        Tensor::Create(DType::kFloat32, {777}, device_->allocator());
    ASSERT_TRUE(a.ok() && b.ok());
  }
  const CachingAllocatorStats stats = device_->memory_stats();
  EXPECT_EQ(stats.raw_allocations, 2);
  EXPECT_EQ(stats.cache_hits, 18);
  EXPECT_EQ(stats.bytes_in_use, 0);
}

TEST_F(GpuDeviceTest, OutOfMemoryIsResourceExhausted) {
  absl::StatusOr<Tensor> huge =
      Tensor::Create(DType::kFloat32, {int64_t{1} << 40}, device_->allocator());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted)
      << huge.status();
  // The device is still usable.
  absl::StatusOr<Tensor> small =
      Tensor::Zeros(DType::kFloat32, {4}, device_->allocator());
  EXPECT_TRUE(small.ok()) << small.status();
}

}  // namespace
}  // namespace distrt::gpu
