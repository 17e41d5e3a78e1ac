#include "runtime/metrics/process_metrics.h"

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

TEST(ProcessMetricsTest, ExposesTheStartTimeInUnixSeconds) {
  MetricsRegistry registry;
  ASSERT_TRUE(
      AddProcessMetrics(&registry, absl::FromUnixSeconds(1700000000)).ok());
  const std::string text = registry.Exposition();
  EXPECT_THAT(text, HasSubstr("# TYPE process_start_time_seconds gauge\n"));
  EXPECT_THAT(text, HasSubstr("\nprocess_start_time_seconds 1700000000\n"));
  // A second registration is the registry's error, not a second series.
  EXPECT_FALSE(AddProcessMetrics(&registry, absl::Now()).ok());
}

}  // namespace
}  // namespace distrt
