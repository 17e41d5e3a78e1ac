#include "rpc/ps_server_metrics.h"

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/ps_service.pb.h"
#include "runtime/metrics/metrics_registry.h"

namespace distrt::rpc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kMethods[] = {"PullHash", "PushHash"};

// What the request handler would say of its hash tables; the test changes
// it between scrapes.
struct FakeHoldings {
  absl::Mutex mu;
  ps::GetStatusResponse status ABSL_GUARDED_BY(mu);

  void Fill(ps::GetStatusResponse* out) {
    absl::MutexLock lock(&mu);
    *out = status;
  }
  void SetTable(int index, const std::string& name, int64_t rows,
                int64_t admitted, int64_t by_ttl, int64_t by_capacity,
                int64_t unknown, int64_t dropped, int64_t clock) {
    absl::MutexLock lock(&mu);
    while (status.hash_tables_size() <= index) status.add_hash_tables();
    status.set_num_hash_tables(status.hash_tables_size());
    ps::HashTableInfo* t = status.mutable_hash_tables(index);
    t->mutable_spec()->set_name(name);
    t->set_num_rows(rows);
    t->set_admitted(admitted);
    t->set_evicted_by_ttl(by_ttl);
    t->set_evicted_by_capacity(by_capacity);
    t->set_unknown_lookups(unknown);
    t->set_dropped_pushes(dropped);
    t->set_clock(clock);
  }
};

class PsServerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<PsServerMetrics>> metrics =
        PsServerMetrics::Create(
            &registry_, kMethods,
            [this](ps::GetStatusResponse* s) { holdings_.Fill(s); },
            /*restored_from_checkpoint=*/false);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = *std::move(metrics);
  }

  MetricsRegistry registry_;
  FakeHoldings holdings_;
  std::unique_ptr<PsServerMetrics> metrics_;
};

TEST_F(PsServerMetricsTest, PerTableCountersAreThoseOfTheScrape) {
  // No table yet: the families are there, with no cells.
  std::string text = registry_.Exposition();
  EXPECT_THAT(text, HasSubstr("# TYPE distrt_ps_table_evicted_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE distrt_ps_table_rows gauge"));
  EXPECT_THAT(text, Not(HasSubstr("distrt_ps_table_rows{")));

  holdings_.SetTable(0, "C1", 100, 130, 20, 10, 7, 3, 55);
  holdings_.SetTable(1, "C2", 5, 5, 0, 0, 0, 0, 55);
  // The first scrape after the change already has it.
  text = registry_.Exposition();
  EXPECT_THAT(text, HasSubstr("distrt_ps_hash_tables 2\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_rows{table=\"C1\"} 100\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_rows{table=\"C2\"} 5\n"));
  EXPECT_THAT(text,
              HasSubstr("distrt_ps_table_admitted_total{table=\"C1\"} 130\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_evicted_total{table=\"C1\","
                              "reason=\"ttl\"} 20\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_evicted_total{table=\"C1\","
                              "reason=\"capacity\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_unknown_lookups_total{table="
                              "\"C1\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_dropped_pushes_total{table="
                              "\"C1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_clock{table=\"C1\"} 55\n"));

  // Scraping again without a change changes nothing (the counters are not
  // added twice); a change is followed.
  EXPECT_EQ(registry_.Exposition(), text);
  holdings_.SetTable(0, "C1", 90, 140, 35, 15, 9, 4, 70);
  text = registry_.Exposition();
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_rows{table=\"C1\"} 90\n"));
  EXPECT_THAT(text,
              HasSubstr("distrt_ps_table_admitted_total{table=\"C1\"} 140\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_evicted_total{table=\"C1\","
                              "reason=\"ttl\"} 35\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_evicted_total{table=\"C1\","
                              "reason=\"capacity\"} 15\n"));
  EXPECT_THAT(text, HasSubstr("distrt_ps_table_clock{table=\"C1\"} 70\n"));
}

}  // namespace
}  // namespace distrt::rpc
