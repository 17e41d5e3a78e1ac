#include "runtime/training/progress_meter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

TEST(ProgressMeterTest, OneLinePerIntervalWithRateLossAndEta) {
  const absl::Time start = absl::FromUnixSeconds(1000);
  ProgressMeter meter(/*target_steps=*/100, absl::Seconds(5), start);
  EXPECT_FALSE(meter.Line(0, start).has_value());
  for (int i = 0; i < 10; ++i) meter.AddStep(50, 25.0);  // loss 0.5 each
  EXPECT_FALSE(meter.Line(10, start + absl::Seconds(4)).has_value());
  std::optional<std::string> line = meter.Line(20, start + absl::Seconds(10));
  ASSERT_TRUE(line.has_value());
  // 500 examples in 10 s; 20 global steps in 10 s, 80 to go: 40 s.
  EXPECT_EQ(*line,
            "step 20/100: 50 examples/s, loss 0.5000, elapsed 10s, ETA 40s");
  EXPECT_DOUBLE_EQ(meter.recent_loss(), 0.5);  // kept until the next steps
  meter.AddStep(10, 1.0);
  EXPECT_DOUBLE_EQ(meter.recent_loss(), 0.1);
  EXPECT_EQ(meter.total_examples(), 510);
  EXPECT_EQ(meter.total_steps(), 11);
}

TEST(ProgressMeterTest, NoEtaWithoutATarget) {
  const absl::Time start = absl::FromUnixSeconds(0);
  ProgressMeter meter(0, absl::Seconds(1), start);
  meter.AddStep(8, 8.0);
  std::optional<std::string> line = meter.Line(1, start + absl::Seconds(2));
  ASSERT_TRUE(line.has_value());
  EXPECT_THAT(*line, ::testing::Not(::testing::HasSubstr("ETA")));
  EXPECT_THAT(*line, ::testing::StartsWith("step 1: 4 examples/s"));
}

TEST(ProgressMeterTest, FormatsDurations) {
  EXPECT_EQ(FormatSeconds(0), "0s");
  EXPECT_EQ(FormatSeconds(59.4), "59s");
  EXPECT_EQ(FormatSeconds(90), "1m30s");
  EXPECT_EQ(FormatSeconds(7500), "2h05m");
  EXPECT_EQ(FormatSeconds(-3), "0s");
}

}  // namespace
}  // namespace distrt
