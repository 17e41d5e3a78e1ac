#include "bench/table_policy_bench.h"

#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "gtest/gtest.h"

namespace distrt::bench {
namespace {

// The bookkeeping case at a size that runs in about a second: it reaches
// the policy table's max_rows, times a few steps and reports its figures.
TEST(TablePolicyBenchTest, ReportsEveryFigureAtASmallSize) {
  TablePolicyBenchSetup setup;
  setup.max_rows = 20000;
  setup.ttl_steps = 3;
  setup.max_warmup_steps = 20;
  setup.timed_steps = 3;
  BenchReport report;
  report.set_output(nullptr);
  ASSERT_TRUE(RunTablePolicyBench(setup, &report).ok());

  const std::string suffix = "/hash_zipf1.1/dim16_adagrad/10M_vocab/100k_ids";
  const std::vector<std::string> names = {
      "sparse/policy/pull+push" + suffix,
      "sparse/policy_bookkeeping/pull" + suffix,
      "sparse/policy_bookkeeping/push" + suffix,
      "sparse/policy_bookkeeping/pull+push" + suffix};
  ASSERT_EQ(report.figures().size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const BenchFigure& figure = report.figures()[i];
    EXPECT_EQ(figure.name, names[i]);
    EXPECT_EQ(figure.unit, "rows/s");
    EXPECT_GT(figure.value, 0) << figure.name;
    EXPECT_GT(figure.baseline_value, 0) << figure.name;
  }
  EXPECT_EQ(report.figures()[0].baseline, "no_policy");
  EXPECT_EQ(report.figures()[1].baseline, "no_policy_same_rows");
  // One step's figures: pull+push is slower than either alone.
  EXPECT_LT(report.figures()[3].value, report.figures()[1].value);
  EXPECT_LT(report.figures()[3].value, report.figures()[2].value);
  EXPECT_TRUE(report.CheckNamesUnique().ok());
}

// A policy table that never fills (max_rows above what the warm-up
// reaches) is still timed, with a note saying so, rather than failing.
TEST(TablePolicyBenchTest, TimesATableBelowCapacity) {
  TablePolicyBenchSetup setup;
  setup.max_rows = 100000000;
  setup.max_warmup_steps = 2;
  setup.timed_steps = 2;
  BenchReport report;
  report.set_output(nullptr);
  ASSERT_TRUE(RunTablePolicyBench(setup, &report).ok());
  EXPECT_EQ(report.figures().size(), 4u);
}

}  // namespace
}  // namespace distrt::bench
