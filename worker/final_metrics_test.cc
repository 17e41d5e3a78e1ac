#include "worker/final_metrics.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace distrt {
namespace {

using ::testing::HasSubstr;

TEST(FinalMetricsTest, JsonHasEveryDocumentedKeyWithNullsWhereUnset) {
  FinalMetrics m;
  m.global_step = 1000;
  m.train_loss = 0.25;
  m.eval_accuracy = 0.875;
  m.examples_per_sec = 5400;
  m.wall_secs = 61.5;
  const nlohmann::json json = nlohmann::json::parse(FinalMetricsJson(m));
  EXPECT_EQ(json["global_step"], 1000);
  EXPECT_EQ(json["train_loss"], 0.25);
  EXPECT_EQ(json["eval_accuracy"], 0.875);
  EXPECT_TRUE(json["eval_loss"].is_null());
  EXPECT_TRUE(json["eval_auc"].is_null());
  EXPECT_TRUE(json["eval_rmse"].is_null());
  EXPECT_EQ(json["examples_per_sec"], 5400);
  EXPECT_EQ(json["wall_secs"], 61.5);
  EXPECT_EQ(json.size(), 8u);
}

TEST(FinalMetricsTest, EvaluatorMetricsHaveNullTrainLossAndTheirOwnSummary) {
  FinalMetrics m;
  m.global_step = 300;
  m.eval_rmse = 0.5;
  EXPECT_TRUE(
      nlohmann::json::parse(FinalMetricsJson(m))["train_loss"].is_null());
  const std::vector<std::string> lines = SummaryLines(m);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0],
              HasSubstr("evaluated the checkpoint of global step 300"));
  EXPECT_EQ(lines[1], "eval: rmse 0.5000");
}

TEST(FinalMetricsTest, EvaluatorMetricsPathSitsBesideTheChiefs) {
  EXPECT_EQ(EvaluatorMetricsPath("out/metrics.json"),
            "out/metrics.evaluator.json");
  EXPECT_EQ(EvaluatorMetricsPath("metrics"), "metrics.evaluator");
  EXPECT_EQ(EvaluatorMetricsPath("a.b/metrics"), "a.b/metrics.evaluator");
  EXPECT_EQ(EvaluatorMetricsPath("dir/.hidden"), "dir/.hidden.evaluator");
}

}  // namespace
}  // namespace distrt
