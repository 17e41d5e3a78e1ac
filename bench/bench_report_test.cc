#include "bench/bench_report.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace distrt::bench {
namespace {

TEST(BenchReportTest, RatioIsValueOverBaselineAndZeroWithoutOne) {
  BenchReport report;
  std::FILE* sink = std::tmpfile();
  report.set_output(sink);
  report.BeginFamily("family", "how to read");
  report.Add("a", 3.0, "GB/s", "grpc", 4.0);
  report.Add("b", 5.0, "us", "none", 0.0);
  std::fclose(sink);
  ASSERT_EQ(report.figures().size(), 2u);
  EXPECT_DOUBLE_EQ(report.figures()[0].ratio, 0.75);
  EXPECT_DOUBLE_EQ(report.figures()[1].ratio, 0.0);
}

TEST(BenchReportTest, NamesMustBeUnique) {
  BenchReport report;
  std::FILE* sink = std::tmpfile();
  report.set_output(sink);
  report.Add("dense/push/1ps/1MiB/vs_grpc", 1.0, "GB/s", "grpc", 1.0);
  report.Add("dense/push/1ps/1MiB/vs_tcp", 1.0, "GB/s", "tcp", 1.0);
  EXPECT_TRUE(report.CheckNamesUnique().ok());
  report.Add("dense/push/1ps/1MiB/vs_tcp", 1.0, "GB/s", "tcp", 2.0);
  std::fclose(sink);
  absl::Status s = report.CheckNamesUnique();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("dense/push/1ps/1MiB/vs_tcp"), std::string::npos);
}

TEST(BenchReportTest, WritesEveryFigureAsJson) {
  BenchReport report;
  std::FILE* sink = std::tmpfile();
  report.set_output(sink);
  report.Add("dense/push/1ps/1MiB", 1.5, "GB/s", "grpc_bytebuffer", 2.0);
  std::fclose(sink);
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/figures.json";
  ASSERT_TRUE(report.WriteJson(path).ok());
  std::ifstream file(path);
  nlohmann::json json = nlohmann::json::parse(file);
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["name"], "dense/push/1ps/1MiB");
  EXPECT_EQ(json[0]["unit"], "GB/s");
  EXPECT_EQ(json[0]["baseline"], "grpc_bytebuffer");
  EXPECT_DOUBLE_EQ(json[0]["value"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(json[0]["baseline_value"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(json[0]["ratio"].get<double>(), 0.75);
  EXPECT_EQ(json[0]["runs"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(json[0]["ratio_min"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(json[0]["ratio_max"].get<double>(), 0.75);
}

TEST(BenchReportTest, ASilentReportStillRecordsAndAMedianKeepsItsRuns) {
  BenchReport report;
  report.set_output(nullptr);
  report.BeginFamily("family", "how to read");
  report.Note("a note");
  report.Add("a", 1.0, "GB/s", "grpc", 2.0);
  BenchFigure median;
  median.name = "b";
  median.ratio = 1.0;
  median.runs = 5;
  median.ratio_min = 0.8;
  median.ratio_max = 1.4;
  report.AddFigure(median);
  ASSERT_EQ(report.figures().size(), 2u);
  EXPECT_EQ(report.figures()[1].runs, 5);
  EXPECT_DOUBLE_EQ(report.figures()[1].ratio_max, 1.4);
}

TEST(BenchReportTest, AnUnwritablePathIsAnErrorNamingIt) {
  BenchReport report;
  absl::Status s = report.WriteJson("/nonexistent-dir/figures.json");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("/nonexistent-dir/figures.json"),
            std::string::npos);
}

}  // namespace
}  // namespace distrt::bench
