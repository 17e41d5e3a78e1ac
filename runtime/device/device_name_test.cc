#include "runtime/device/device_name.h"

#include <string>

#include "gtest/gtest.h"

namespace distrt {
namespace {

DeviceName MustParse(const std::string& text) {
  absl::StatusOr<DeviceName> name = DeviceName::Parse(text);
  EXPECT_TRUE(name.ok()) << text << ": " << name.status();
  return name.ok() ? *name : DeviceName{};
}

TEST(DeviceNameTest, FullName) {
  DeviceName name = MustParse("/job:worker/replica:0/task:1/device:GPU:0");
  EXPECT_EQ(name.job, "worker");
  EXPECT_EQ(name.replica, 0);
  EXPECT_EQ(name.task, 1);
  EXPECT_EQ(name.type, "GPU");
  EXPECT_EQ(name.id, 0);
  EXPECT_TRUE(name.IsFullySpecified());
  EXPECT_EQ(name.ToString(), "/job:worker/replica:0/task:1/device:GPU:0");
}

TEST(DeviceNameTest, PartialName) {
  DeviceName name = MustParse("/job:ps/task:0");
  EXPECT_EQ(name.job, "ps");
  EXPECT_EQ(name.replica, std::nullopt);
  EXPECT_EQ(name.task, 0);
  EXPECT_EQ(name.type, std::nullopt);
  EXPECT_FALSE(name.IsFullySpecified());
  EXPECT_EQ(name.ToString(), "/job:ps/task:0");
}

TEST(DeviceNameTest, ShortAndLocalForms) {
  EXPECT_EQ(MustParse("/gpu:0").ToString(), "/device:GPU:0");
  EXPECT_EQ(MustParse("/cpu:0").ToString(), "/device:CPU:0");
  EXPECT_EQ(MustParse("/GPU:3").ToString(), "/device:GPU:3");
  EXPECT_EQ(MustParse("GPU:1").ToString(), "/device:GPU:1");
  EXPECT_EQ(MustParse("cpu:0").ToString(), "/device:CPU:0");
  EXPECT_EQ(MustParse("/device:gpu:2").ToString(), "/device:GPU:2");
  EXPECT_EQ(MustParse("/job:worker/gpu:1").ToString(),
            "/job:worker/device:GPU:1");
  EXPECT_EQ(MustParse("/device:XLA_CPU:0").type, "XLA_CPU");
  EXPECT_EQ(MustParse("").ToString(), "");
}

TEST(DeviceNameTest, Wildcards) {
  DeviceName any_gpu = MustParse("/device:GPU:*");
  EXPECT_EQ(any_gpu.type, "GPU");
  EXPECT_EQ(any_gpu.id, std::nullopt);
  EXPECT_EQ(any_gpu.ToString(), "/device:GPU:*");
  EXPECT_EQ(MustParse("/job:*/task:*/device:CPU").ToString(), "/device:CPU:*");
}

TEST(DeviceNameTest, ShortAndLongFormsAreEqual) {
  EXPECT_EQ(MustParse("/gpu:1"), MustParse("/device:GPU:1"));
  EXPECT_EQ(MustParse("GPU:1"), MustParse("/gpu:1"));
  EXPECT_NE(MustParse("GPU:1"), MustParse("GPU:0"));
}

TEST(DeviceNameTest, InvalidNames) {
  for (const char* text :
       {"/job:", "/job:1abc", "/task:x", "/replica:-1", "/device:GPU:x",
        "/foo:1", "GPU:", "GPU:1/job:a", "/job:worker/", "/gpu:"}) {
    absl::StatusOr<DeviceName> name = DeviceName::Parse(text);
    EXPECT_EQ(name.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_EQ(DeviceName::Parse("/job:worker/foo").status().message(),
            "invalid device name \"/job:worker/foo\": unexpected \"/foo\"; "
            "expected /job:NAME, /replica:N, /task:N or /device:TYPE:N");
}

TEST(DeviceNameTest, PartialSpecLandsOnADefault) {
  DeviceName defaults = MustParse("/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(MustParse("/gpu:1").WithDefaults(defaults).ToString(),
            "/job:worker/replica:0/task:1/device:GPU:1");
  EXPECT_EQ(MustParse("/job:ps/task:0").WithDefaults(defaults).ToString(),
            "/job:ps/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(MustParse("").WithDefaults(defaults), defaults);
}

TEST(DeviceNameTest, MergeFillsInAndRefusesConflicts) {
  DeviceName name = MustParse("/job:worker/task:1");
  ASSERT_TRUE(name.MergeFrom(MustParse("/device:GPU:0")).ok());
  EXPECT_EQ(name.ToString(), "/job:worker/task:1/device:GPU:0");
  ASSERT_TRUE(name.MergeFrom(MustParse("/job:worker/replica:0")).ok());
  EXPECT_EQ(name.ToString(), "/job:worker/replica:0/task:1/device:GPU:0");

  DeviceName before = name;
  absl::Status conflict = name.MergeFrom(MustParse("/job:ps/device:CPU:0"));
  EXPECT_EQ(conflict.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(conflict.message(),
            "cannot merge device names with different jobs: 'worker' and "
            "'ps'");
  EXPECT_EQ(name, before);
  EXPECT_EQ(name.MergeFrom(MustParse("/gpu:1")).message(),
            "cannot merge device names with different device ids: '0' and "
            "'1'");
}

}  // namespace
}  // namespace distrt
