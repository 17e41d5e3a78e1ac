#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;

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

// GPU tensors are copied back through their allocator; CPU devices do the
// same for host memory, so CopyFrom works whatever the source.
TEST(CpuDeviceTest, CopiesThroughTheSourceAllocator) {
  CpuDevice device(DeviceName(), 0);
  absl::StatusOr<Tensor> zeros = Tensor::Zeros(DType::kInt64, {3});
  ASSERT_TRUE(zeros.ok());
  absl::StatusOr<Tensor> copy = device.CopyFrom(*zeros);
  ASSERT_TRUE(copy.ok());
  EXPECT_THAT(copy->flat<int64_t>(), ElementsAre(0, 0, 0));
  absl::StatusOr<Tensor> empty = device.CopyFrom(Tensor());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->is_null());
}

}  // namespace
}  // namespace distrt
