#include "bench/repeated_runs.h"

#include <vector>

#include "bench/bench_report.h"
#include "gtest/gtest.h"

namespace distrt::bench {
namespace {

BenchFigure Figure(const char* name, double value, double baseline_value) {
  BenchFigure figure;
  figure.name = name;
  figure.value = value;
  figure.unit = "GB/s";
  figure.baseline = "grpc";
  figure.baseline_value = baseline_value;
  figure.ratio = baseline_value != 0 ? value / baseline_value : 0;
  figure.ratio_min = figure.ratio;
  figure.ratio_max = figure.ratio;
  return figure;
}

TEST(MedianFiguresTest, TakesTheRunWithTheMedianRatioNotTheMedianValue) {
  // Run 2 has the median ratio (1.0) but neither the median value nor the
  // median baseline: the figure keeps that run's value and baseline, so
  // its ratio is still value / baseline.
  const std::vector<std::vector<BenchFigure>> runs = {{Figure("a", 2.0, 1.0)},
                                                      {Figure("a", 3.0, 3.0)},
                                                      {Figure("a", 0.5, 1.0)}};
  const std::vector<BenchFigure> medians = MedianFigures(runs);
  ASSERT_EQ(medians.size(), 1u);
  EXPECT_DOUBLE_EQ(medians[0].value, 3.0);
  EXPECT_DOUBLE_EQ(medians[0].baseline_value, 3.0);
  EXPECT_DOUBLE_EQ(medians[0].ratio, 1.0);
  EXPECT_EQ(medians[0].runs, 3);
  EXPECT_DOUBLE_EQ(medians[0].ratio_min, 0.5);
  EXPECT_DOUBLE_EQ(medians[0].ratio_max, 2.0);
}

TEST(MedianFiguresTest, KeepsFirstSeenOrderAndCountsMissingRunsOut) {
  const std::vector<std::vector<BenchFigure>> runs = {
      {Figure("b", 1.0, 1.0), Figure("a", 1.0, 1.0)},
      {Figure("a", 3.0, 1.0)},
      {Figure("c", 5.0, 1.0), Figure("a", 2.0, 1.0)}};
  const std::vector<BenchFigure> medians = MedianFigures(runs);
  ASSERT_EQ(medians.size(), 3u);
  EXPECT_EQ(medians[0].name, "b");
  EXPECT_EQ(medians[1].name, "a");
  EXPECT_EQ(medians[2].name, "c");
  EXPECT_EQ(medians[0].runs, 1);
  EXPECT_EQ(medians[1].runs, 3);
  EXPECT_DOUBLE_EQ(medians[1].ratio, 2.0);
}

TEST(MedianFiguresTest, EvenCountsTakeTheLowerMiddleRun) {
  const std::vector<std::vector<BenchFigure>> runs = {{Figure("a", 4.0, 1.0)},
                                                      {Figure("a", 1.0, 1.0)},
                                                      {Figure("a", 3.0, 1.0)},
                                                      {Figure("a", 2.0, 1.0)}};
  EXPECT_DOUBLE_EQ(MedianFigures(runs)[0].ratio, 2.0);
}

TEST(MedianFiguresTest, FiguresWithoutABaselineAreOrderedByValue) {
  const std::vector<std::vector<BenchFigure>> runs = {
      {Figure("a", 9.0, 0)}, {Figure("a", 1.0, 0)}, {Figure("a", 5.0, 0)}};
  EXPECT_DOUBLE_EQ(MedianFigures(runs)[0].value, 5.0);
}

TEST(FiguresSettledTest, NeedsTheMinimumNumberOfRuns) {
  std::vector<std::vector<BenchFigure>> runs = {{Figure("a", 1.0, 1.0)},
                                                {Figure("a", 1.0, 1.0)}};
  EXPECT_FALSE(FiguresSettled(runs, 3));
  runs.push_back({Figure("a", 1.0, 1.0)});
  EXPECT_TRUE(FiguresSettled(runs, 3));
}

TEST(FiguresSettledTest, NeedsAMajorityNearTheMedian) {
  // 1.0 and 1.05 lie within 7.5% of the median 1.05, 1.3 does not: two of
  // three is a majority.
  std::vector<std::vector<BenchFigure>> runs = {{Figure("a", 1.0, 1.0)},
                                                {Figure("a", 1.3, 1.0)},
                                                {Figure("a", 1.05, 1.0)}};
  EXPECT_TRUE(FiguresSettled(runs, 3));
  // 0.7, 1.0, 1.3: only the median itself is near it.
  runs = {{Figure("a", 0.7, 1.0)},
          {Figure("a", 1.3, 1.0)},
          {Figure("a", 1.0, 1.0)}};
  EXPECT_FALSE(FiguresSettled(runs, 3));
  // A fourth run near the median makes two of four: still not a majority.
  runs.push_back({Figure("a", 1.05, 1.0)});
  EXPECT_FALSE(FiguresSettled(runs, 3));
  // A fifth: three of five.
  runs.push_back({Figure("a", 0.98, 1.0)});
  EXPECT_TRUE(FiguresSettled(runs, 3));
}

TEST(FiguresSettledTest, OneUnsettledFigureKeepsTheFamilyGoing) {
  const std::vector<std::vector<BenchFigure>> runs = {
      {Figure("steady", 1.0, 1.0), Figure("noisy", 0.5, 1.0)},
      {Figure("steady", 1.0, 1.0), Figure("noisy", 1.0, 1.0)},
      {Figure("steady", 1.0, 1.0), Figure("noisy", 2.0, 1.0)}};
  EXPECT_FALSE(FiguresSettled(runs, 3));
}

}  // namespace
}  // namespace distrt::bench
