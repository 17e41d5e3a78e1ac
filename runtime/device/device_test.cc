#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/device/local_devices.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CpuDeviceTest, NameAndCopy) {
  absl::StatusOr<DeviceName> task =
      DeviceName::Parse("/job:worker/replica:0/task:1");
  ASSERT_TRUE(task.ok());
  CpuDevice device(*task, 2);
  EXPECT_EQ(device.name().ToString(),
            "/job:worker/replica:0/task:1/device:CPU:2");
  EXPECT_EQ(device.type(), "CPU");
  EXPECT_EQ(device.id(), 2);
  absl::StatusOr<Tensor> t = Tensor::FromFloats({1, 2, 3}, {3});
  ASSERT_TRUE(t.ok());
  absl::StatusOr<Tensor> copy = device.CopyFrom(*t);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_NE(copy->raw_data(), t->raw_data());
  EXPECT_THAT(copy->flat<float>(), ElementsAre(1, 2, 3));
  EXPECT_TRUE(device.Synchronize().ok());
}

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

}  // namespace
}  // namespace distrt
