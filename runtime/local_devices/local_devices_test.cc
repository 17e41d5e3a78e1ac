#include "runtime/local_devices/local_devices.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/gpu/gpu_probe.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(LocalDevicesTest, LogicalCpuDevicesWithAReason) {
  LocalDevicesOptions options;
  options.num_cpu_devices = 4;
  absl::StatusOr<LocalDevices> local = CreateLocalDevices(options);
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_EQ(local->devices.size(), 4u);
  EXPECT_EQ(local->devices[3]->name().ToString(), "/device:CPU:3");
  // This machine has no GPU: the description says why CPUs are used.
  EXPECT_THAT(local->description, HasSubstr("4 logical CPU devices"));
  EXPECT_THAT(local->description, HasSubstr("GPU"));
  options.num_cpu_devices = 0;
  EXPECT_EQ(CreateLocalDevices(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LocalDevicesTest, ParsesDeviceSelections) {
  LocalDevicesOptions options;
  ASSERT_TRUE(ParseDeviceSelection("cpu", &options).ok());
  EXPECT_FALSE(options.use_gpus);
  ASSERT_TRUE(ParseDeviceSelection("auto", &options).ok());
  EXPECT_TRUE(options.use_gpus);
  EXPECT_FALSE(options.require_gpus);
  ASSERT_TRUE(ParseDeviceSelection("gpu", &options).ok());
  EXPECT_TRUE(options.require_gpus);
  EXPECT_TRUE(options.gpu_ids.empty());
  ASSERT_TRUE(ParseDeviceSelection("gpu:2,0", &options).ok());
  EXPECT_THAT(options.gpu_ids, ElementsAre(2, 0));
  for (const char* bad : {"tpu", "gpu:", "gpu:a", "gpu:-1", "gpu:1,,2", ""}) {
    absl::Status s = ParseDeviceSelection(bad, &options);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(ParseDeviceSelection("tpu", &options).message(),
              HasSubstr("\"tpu\" is not auto, cpu, gpu or gpu:<ids>"));
}

// Without a usable GPU (this machine, CI), asking for GPUs explicitly is an
// error that says why, and auto falls back to CPUs saying the same.
TEST(LocalDevicesTest, ExplicitGpusWithoutAGpuIsAnError) {
  gpu::GpuProbeResult probe = gpu::ProbeGpus();
  if (!probe.gpus.empty()) GTEST_SKIP() << "this machine has a GPU";
  LocalDevicesOptions options;
  ASSERT_TRUE(ParseDeviceSelection("gpu:0", &options).ok());
  absl::StatusOr<LocalDevices> local = CreateLocalDevices(options);
  EXPECT_EQ(local.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(local.status().message(),
              HasSubstr("GPUs were requested, but there is no usable GPU: " +
                        probe.unavailable_reason));
  ASSERT_TRUE(ParseDeviceSelection("auto", &options).ok());
  local = CreateLocalDevices(options);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->devices[0]->type(), "CPU");
  EXPECT_THAT(local->description, HasSubstr(probe.unavailable_reason));
}

}  // namespace
}  // namespace distrt
