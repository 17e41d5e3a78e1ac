#include "runtime/metrics/metrics_registry.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// What every registry exports about itself (see the header).
constexpr char kArityErrors0[] =
    "# HELP distrt_metrics_label_arity_errors_total WithLabels calls with the "
    "wrong number of label values (a bug in the caller); their updates were "
    "dropped.\n"
    "# TYPE distrt_metrics_label_arity_errors_total counter\n"
    "distrt_metrics_label_arity_errors_total 0\n";

TEST(MetricsRegistryTest, EmptyRegistryExportsOnlyItsOwnCounter) {
  MetricsRegistry registry;
  EXPECT_EQ(registry.Exposition(), kArityErrors0);
}

TEST(MetricsRegistryTest, ExpositionOfASmallRegistry) {
  MetricsRegistry registry;
  absl::StatusOr<Counter*> requests = registry.AddCounter(
      "distrt_rpc_requests_total", "RPCs handled, by method and status code.",
      {"method", "code"});
  ASSERT_TRUE(requests.ok()) << requests.status();
  absl::StatusOr<Gauge*> workers =
      registry.AddGauge("distrt_workers", "Workers connected.");
  ASSERT_TRUE(workers.ok()) << workers.status();
  absl::StatusOr<Histogram*> latency =
      registry.AddHistogram("distrt_rpc_latency_seconds", "RPC latency.",
                            {"method"}, {0.005, 0.01, 0.1});
  ASSERT_TRUE(latency.ok()) << latency.status();
  ASSERT_TRUE(registry
                  .AddCallbackGauge("distrt_variables_held", "Variables held.",
                                    [] { return 12.0; })
                  .ok());

  (*requests)->WithLabels({"PushDense", "OK"})->Increment();
  (*requests)->WithLabels({"PushDense", "OK"})->Increment(2);
  (*requests)->WithLabels({"Pull", "UNAVAILABLE"})->Increment();
  (*workers)->WithLabels({})->Set(4);
  (*workers)->WithLabels({})->Add(-1.5);
  HistogramCell* pull = (*latency)->WithLabels({"Pull"});
  pull->Observe(0.001);
  pull->Observe(0.005);  // le is inclusive
  pull->Observe(0.05);
  pull->Observe(7);

  EXPECT_EQ(
      registry.Exposition(),
      std::string(kArityErrors0) +
          "# HELP distrt_rpc_latency_seconds RPC latency.\n"
          "# TYPE distrt_rpc_latency_seconds histogram\n"
          "distrt_rpc_latency_seconds_bucket{method=\"Pull\",le=\"0.005\"} 2\n"
          "distrt_rpc_latency_seconds_bucket{method=\"Pull\",le=\"0.01\"} 2\n"
          "distrt_rpc_latency_seconds_bucket{method=\"Pull\",le=\"0.1\"} 3\n"
          "distrt_rpc_latency_seconds_bucket{method=\"Pull\",le=\"+Inf\"} 4\n"
          "distrt_rpc_latency_seconds_sum{method=\"Pull\"} 7.056\n"
          "distrt_rpc_latency_seconds_count{method=\"Pull\"} 4\n"
          "# HELP distrt_rpc_requests_total RPCs handled, by method and "
          "status code.\n"
          "# TYPE distrt_rpc_requests_total counter\n"
          "distrt_rpc_requests_total{method=\"Pull\",code=\"UNAVAILABLE\"} 1\n"
          "distrt_rpc_requests_total{method=\"PushDense\",code=\"OK\"} 3\n"
          "# HELP distrt_variables_held Variables held.\n"
          "# TYPE distrt_variables_held gauge\n"
          "distrt_variables_held 12\n"
          "# HELP distrt_workers Workers connected.\n"
          "# TYPE distrt_workers gauge\n"
          "distrt_workers 2.5\n");
}

TEST(MetricsRegistryTest, UnlabeledHistogramHasOnlyTheLeLabel) {
  MetricsRegistry registry;
  absl::StatusOr<Histogram*> sizes = registry.AddHistogram(
      "distrt_batch_bytes", "Batch sizes.", {}, ExponentialBuckets(1, 10, 2));
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_THAT(registry.Exposition(),
              HasSubstr("# TYPE distrt_batch_bytes histogram\n"
                        "distrt_batch_bytes_bucket{le=\"1\"} 0\n"
                        "distrt_batch_bytes_bucket{le=\"10\"} 0\n"
                        "distrt_batch_bytes_bucket{le=\"+Inf\"} 0\n"
                        "distrt_batch_bytes_sum 0\n"
                        "distrt_batch_bytes_count 0\n"));
}

TEST(MetricsRegistryTest, LabeledFamilyExportsOnlyCellsUsed) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry.AddGauge("g", "A gauge.", {"shard"}).ok());
  EXPECT_THAT(registry.Exposition(), HasSubstr("# TYPE g gauge\n"));
  EXPECT_THAT(registry.Exposition(), Not(HasSubstr("g{")));
}

TEST(MetricsRegistryTest, EscapesHelpAndLabelValues) {
  MetricsRegistry registry;
  absl::StatusOr<Gauge*> gauge =
      registry.AddGauge("g", "Back\\slash, \"quote\"\nand newline.", {"path"});
  ASSERT_TRUE(gauge.ok()) << gauge.status();
  (*gauge)->WithLabels({"C:\\tmp\n\"x\""})->Set(1);
  EXPECT_THAT(registry.Exposition(),
              HasSubstr("# HELP g Back\\\\slash, \"quote\"\\nand newline.\n"
                        "# TYPE g gauge\n"
                        "g{path=\"C:\\\\tmp\\n\\\"x\\\"\"} 1\n"));
}

TEST(MetricsRegistryTest, WithLabelsReturnsTheSameCell) {
  MetricsRegistry registry;
  Counter* counter = registry.AddCounter("c_total", "C.", {"a", "b"}).value();
  CounterCell* cell = counter->WithLabels({"x", "y"});
  std::string a = "x";
  EXPECT_EQ(counter->WithLabels({a, "y"}), cell);
  EXPECT_NE(counter->WithLabels({"x", "z"}), cell);
  EXPECT_NE(counter->WithLabels({"xy", ""}), cell);
}

TEST(MetricsRegistryTest, WrongNumberOfLabelValuesIsCountedAndDropped) {
  MetricsRegistry registry;
  Counter* counter = registry.AddCounter("c_total", "C.", {"a"}).value();
  CounterCell* wrong = counter->WithLabels({"x", "y"});
  ASSERT_NE(wrong, nullptr);
  wrong->Increment();
  counter->WithLabels({})->Increment();
  const std::string text = registry.Exposition();
  EXPECT_THAT(text, HasSubstr("\ndistrt_metrics_label_arity_errors_total 2\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE c_total counter\n"));
  EXPECT_THAT(text, Not(HasSubstr("c_total{")));
  EXPECT_THAT(text, Not(HasSubstr("c_total 1")));
}

TEST(MetricsRegistryTest, CounterIgnoresNegativeAndNaNIncrements) {
  CounterCell cell;
  cell.Increment(2.5);
  cell.Increment(-1);
  cell.Increment(std::nan(""));
  EXPECT_EQ(cell.value(), 2.5);
}

TEST(MetricsRegistryTest, HistogramNaNGoesToInfBucket) {
  HistogramCell cell({1, 2});
  cell.Observe(std::nan(""));
  cell.Observe(1.5);
  HistogramCell::Snapshot snapshot = cell.Read();
  EXPECT_EQ(snapshot.cumulative_counts, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(snapshot.count, 2u);
  EXPECT_TRUE(std::isnan(snapshot.sum));
}

TEST(MetricsRegistryTest, TrailingInfBoundIsDropped) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry
                  .AddHistogram("h", "H.", {},
                                {1, std::numeric_limits<double>::infinity()})
                  .ok());
  const std::string text = registry.Exposition();
  EXPECT_THAT(text, HasSubstr("h_bucket{le=\"1\"} 0\n"
                              "h_bucket{le=\"+Inf\"} 0\n"
                              "h_sum 0\n"));
}

TEST(MetricsRegistryTest, ConcurrentIncrementsAreNotLost) {
  MetricsRegistry registry;
  Counter* counter = registry.AddCounter("c_total", "C.", {"t"}).value();
  Histogram* histogram = registry.AddHistogram("h", "H.", {}, {0.5}).value();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        counter->WithLabels({"same"})->Increment();
        histogram->WithLabels({})->Observe(1);
      }
    });
  }
  // A scrape racing with them sees whole lines and the cells made so far.
  threads.emplace_back([&] {
    for (int i = 0; i < 100; ++i) {
      EXPECT_THAT(registry.Exposition(), HasSubstr("# TYPE h histogram\n"));
    }
  });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter->WithLabels({"same"})->value(), kThreads * kPerThread);
  EXPECT_EQ(histogram->WithLabels({})->Read().count,
            uint64_t{kThreads * kPerThread});
  EXPECT_EQ(histogram->WithLabels({})->Read().sum, kThreads * kPerThread);
}

TEST(MetricsRegistryTest, RejectsBadMetricNames) {
  MetricsRegistry registry;
  for (const char* name : {"", "1abc", "a-b", "a b", "é"}) {
    absl::StatusOr<Gauge*> gauge = registry.AddGauge(name, "Help.");
    EXPECT_EQ(gauge.status().code(), absl::StatusCode::kInvalidArgument)
        << name;
    EXPECT_THAT(gauge.status().message(), HasSubstr("does not match")) << name;
  }
  EXPECT_TRUE(registry.AddGauge("ns:sub_name9", "Colons are allowed.").ok());
}

TEST(MetricsRegistryTest, RejectsBadLabelNames) {
  MetricsRegistry registry;
  for (const char* label : {"", "__reserved", "a:b", "9a", "a-b"}) {
    absl::StatusOr<Gauge*> gauge = registry.AddGauge("g", "Help.", {label});
    EXPECT_EQ(gauge.status().code(), absl::StatusCode::kInvalidArgument)
        << label;
    EXPECT_THAT(gauge.status().message(),
                HasSubstr(absl::StrCat("label name \"", label, "\"")));
  }
  absl::StatusOr<Gauge*> twice = registry.AddGauge("g", "Help.", {"a", "a"});
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(twice.status().message(), HasSubstr("appears twice"));
  absl::StatusOr<Histogram*> le =
      registry.AddHistogram("h", "Help.", {"le"}, {1});
  EXPECT_EQ(le.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(le.status().message(), HasSubstr("reserved"));
  // None of the failures took the names.
  EXPECT_TRUE(registry.AddGauge("g", "Help.", {"_ok"}).ok());
  EXPECT_TRUE(registry.AddHistogram("h", "Help.", {}, {1}).ok());
}

TEST(MetricsRegistryTest, RejectsCounterWithoutTotalSuffix) {
  MetricsRegistry registry;
  absl::StatusOr<Counter*> counter = registry.AddCounter("requests", "R.");
  EXPECT_EQ(counter.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(counter.status().message(), HasSubstr("_total"));
}

TEST(MetricsRegistryTest, RejectsEmptyHelpAndMissingCallback) {
  MetricsRegistry registry;
  EXPECT_EQ(registry.AddGauge("g", "").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status status = registry.AddCallbackGauge("cb", "Help.", nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("no callback"));
}

TEST(MetricsRegistryTest, ScrapeHooksRunBeforeAnyFamilyIsRendered) {
  MetricsRegistry registry;
  // "a_rows" sorts before "z_source": the hook must not depend on order.
  absl::StatusOr<Gauge*> rows = registry.AddGauge("a_rows", "Rows.", {"t"});
  ASSERT_TRUE(rows.ok());
  int scrapes = 0;
  ASSERT_TRUE(registry
                  .AddCallbackGauge("z_source", "Scrapes.",
                                    [&scrapes] { return double{scrapes}; })
                  .ok());
  registry.AddScrapeHook([&] {
    ++scrapes;
    (*rows)->WithLabels({"users"})->Set(scrapes * 10);
  });
  EXPECT_THAT(registry.Exposition(), HasSubstr("a_rows{t=\"users\"} 10\n"));
  const std::string second = registry.Exposition();
  EXPECT_THAT(second, HasSubstr("a_rows{t=\"users\"} 20\n"));
  EXPECT_THAT(second, HasSubstr("z_source 2\n"));
}

TEST(MetricsRegistryTest, RejectsDuplicateAndClashingNames) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry.AddGauge("x", "X.").ok());
  absl::StatusOr<Gauge*> again = registry.AddGauge("x", "X again.");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("x"));
  EXPECT_EQ(registry.AddCallbackGauge("x", "X.", [] { return 1.0; }).code(),
            absl::StatusCode::kAlreadyExists);

  // A histogram's _sum/_count/_bucket series clash with other families.
  ASSERT_TRUE(registry.AddHistogram("lat", "L.", {}, {1}).ok());
  absl::StatusOr<Gauge*> sum = registry.AddGauge("lat_sum", "S.");
  EXPECT_EQ(sum.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(sum.status().message(), HasSubstr("lat_sum"));
  ASSERT_TRUE(registry.AddGauge("size_count", "C.").ok());
  absl::StatusOr<Histogram*> size =
      registry.AddHistogram("size", "S.", {}, {1});
  EXPECT_EQ(size.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(size.status().message(), HasSubstr("size_count"));
  EXPECT_EQ(
      registry.AddCounter("distrt_metrics_label_arity_errors_total", "Mine.")
          .status()
          .code(),
      absl::StatusCode::kAlreadyExists);
}

TEST(MetricsRegistryTest, RejectsBadBucketBounds) {
  MetricsRegistry registry;
  absl::StatusOr<Histogram*> unsorted =
      registry.AddHistogram("h", "H.", {}, {1, 1});
  EXPECT_EQ(unsorted.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unsorted.status().message(),
              HasSubstr("not strictly increasing (1 then 1)"));
  absl::StatusOr<Histogram*> nan =
      registry.AddHistogram("h", "H.", {}, {1, std::nan("")});
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nan.status().message(), HasSubstr("NaN is not finite"));
  // A factor of at most 1 gives bounds that are not increasing.
  EXPECT_EQ(registry.AddHistogram("h", "H.", {}, ExponentialBuckets(1, 1, 3))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ExponentialBucketsTest, MultipliesByFactor) {
  EXPECT_EQ(ExponentialBuckets(0.5, 2, 4), (std::vector<double>{0.5, 1, 2, 4}));
  EXPECT_TRUE(ExponentialBuckets(1, 2, 0).empty());
}

TEST(FormatMetricValueTest, IntegersFloatsAndSpecialValues) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(-0.0), "0");
  EXPECT_EQ(FormatMetricValue(3), "3");
  EXPECT_EQ(FormatMetricValue(-42), "-42");
  EXPECT_EQ(FormatMetricValue(1e6), "1000000");
  EXPECT_EQ(FormatMetricValue(1e15), "1000000000000000");
  EXPECT_EQ(FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(FormatMetricValue(2.5e-7), "2.5e-07");
  EXPECT_EQ(FormatMetricValue(1e300), "1e+300");
  EXPECT_EQ(FormatMetricValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatMetricValue(-std::numeric_limits<double>::infinity()),
            "-Inf");
  EXPECT_EQ(FormatMetricValue(std::nan("")), "NaN");
}

}  // namespace
}  // namespace distrt
