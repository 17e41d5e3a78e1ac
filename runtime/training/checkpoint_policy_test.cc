#include "runtime/training/checkpoint_policy.h"

#include "gtest/gtest.h"

namespace distrt {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);

TEST(CheckpointPolicyTest, EveryNStepsCountsFromTheLastSave) {
  CheckpointPolicy policy(50, absl::ZeroDuration(), /*step=*/100, kStart);
  EXPECT_FALSE(policy.Due(149, kStart + absl::Hours(1)));
  EXPECT_TRUE(policy.Due(150, kStart));
  policy.Saved(152, kStart);
  EXPECT_FALSE(policy.Due(201, kStart));
  EXPECT_TRUE(policy.Due(202, kStart));
}

TEST(CheckpointPolicyTest, EverySoManySecondsOrWhicheverComesFirst) {
  CheckpointPolicy timed(0, absl::Seconds(30), 0, kStart);
  EXPECT_FALSE(timed.Due(1000, kStart + absl::Seconds(29)));
  EXPECT_TRUE(timed.Due(1, kStart + absl::Seconds(30)));
  timed.Saved(1, kStart + absl::Seconds(31));
  EXPECT_FALSE(timed.Due(2, kStart + absl::Seconds(60)));

  CheckpointPolicy both(10, absl::Seconds(30), 0, kStart);
  EXPECT_TRUE(both.Due(10, kStart));
  EXPECT_TRUE(both.Due(1, kStart + absl::Minutes(1)));

  CheckpointPolicy never(0, absl::ZeroDuration(), 0, kStart);
  EXPECT_FALSE(never.Due(1 << 30, kStart + absl::Hours(100)));
}

}  // namespace
}  // namespace distrt
