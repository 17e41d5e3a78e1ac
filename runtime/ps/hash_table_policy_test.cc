// Admission and eviction of HashEmbeddingTable (TablePolicy) on
// deterministic id streams, and a table at its capacity under concurrent
// pulls, pushes and exports (the ThreadSanitizer stage runs it).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"
#include "runtime/ps/hash_embedding_table.h"

namespace distrt {
namespace {

constexpr int64_t kDim = 4;

HashEmbeddingSpec Spec() {
  HashEmbeddingSpec spec;
  spec.name = "ads";
  spec.dim = kDim;
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.initializer.seed = 3;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.5f;
  return spec;
}

std::unique_ptr<HashEmbeddingTable> MustCreate(const HashEmbeddingSpec& spec) {
  absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> table =
      HashEmbeddingTable::Create(spec);
  EXPECT_TRUE(table.ok()) << table.status();
  return table.ok() ? *std::move(table) : nullptr;
}

std::vector<float> PullRow(HashEmbeddingTable& table, int64_t id) {
  std::vector<float> row(kDim);
  EXPECT_TRUE(table.Pull({id}, absl::MakeSpan(row)).ok());
  return row;
}

void PushIds(HashEmbeddingTable& table, std::vector<int64_t> ids,
             int64_t step) {
  std::vector<float> grads(ids.size() * kDim, 0.25f);
  ASSERT_TRUE(table.Push(ids, grads, SparseIds::kMayRepeat, step).ok());
}

std::vector<int64_t> IdsHeld(const HashEmbeddingTable& table) {
  return table.Export().ids;  // sorted
}

bool AllZero(const std::vector<float>& row) {
  return std::all_of(row.begin(), row.end(), [](float v) { return v == 0; });
}

TEST(HashTablePolicyTest, MinCountAdmitsOnTheNthPull) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.admission.kind = AdmissionKind::kMinCount;
  spec.policy.admission.min_count = 3;
  spec.policy.admission.sketch_width = 1 << 10;
  auto table = MustCreate(spec);
  EXPECT_TRUE(AllZero(PullRow(*table, 7)));
  PushIds(*table, {7}, 1);  // no row yet: dropped
  EXPECT_TRUE(AllZero(PullRow(*table, 7)));
  EXPECT_EQ(table->num_rows(), 0);
  const std::vector<float> admitted = PullRow(*table, 7);  // the third
  EXPECT_FALSE(AllZero(admitted));
  EXPECT_EQ(table->num_rows(), 1);
  // The row trains from here on.
  PushIds(*table, {7}, 2);
  EXPECT_NE(PullRow(*table, 7), admitted);

  const HashTableCounters counters = table->counters();
  EXPECT_EQ(counters.admitted, 1);
  EXPECT_EQ(counters.unknown_lookups, 2);
  EXPECT_EQ(counters.dropped_pushes, 1);
  EXPECT_EQ(counters.rows, 1);
  EXPECT_EQ(counters.clock, 2);
}

TEST(HashTablePolicyTest, UnknownIdsShareOneUntrainedRow) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.admission.kind = AdmissionKind::kMinCount;
  spec.policy.admission.min_count = 100;
  spec.policy.admission.unknown = UnknownRow::kSharedRow;
  spec.policy.admission.sketch_width = 1 << 10;
  auto table = MustCreate(spec);
  const std::vector<float> shared = PullRow(*table, 1);
  EXPECT_FALSE(AllZero(shared));
  PushIds(*table, {1, 2}, 1);
  EXPECT_EQ(PullRow(*table, 2), shared);
  EXPECT_EQ(PullRow(*table, 1), shared);
  EXPECT_EQ(table->num_rows(), 0);
  EXPECT_EQ(table->counters().dropped_pushes, 2);
}

TEST(HashTablePolicyTest, ProbabilityAdmitsAboutThatShareAndRepeats) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.admission.kind = AdmissionKind::kProbability;
  spec.policy.admission.probability = 0.25;
  auto first = MustCreate(spec);
  auto second = MustCreate(spec);
  std::vector<int64_t> ids(8000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 1000 + 3 * i;
  std::vector<float> out(ids.size() * kDim);
  ASSERT_TRUE(first->Pull(ids, absl::MakeSpan(out)).ok());
  ASSERT_TRUE(second->Pull(ids, absl::MakeSpan(out)).ok());
  // 2000 expected; 4 standard deviations (sqrt(8000 * 0.25 * 0.75) = 39).
  EXPECT_NEAR(first->num_rows(), 2000, 160);
  EXPECT_EQ(IdsHeld(*first), IdsHeld(*second));  // seeded by the name
  EXPECT_EQ(first->counters().unknown_lookups,
            static_cast<int64_t>(ids.size()) - first->num_rows());
}

TEST(HashTablePolicyTest, TtlEvictsRowsNotUpdatedForThatManySteps) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.ttl_steps = 3;
  auto table = MustCreate(spec);
  PushIds(*table, {1, 2}, 10);
  PushIds(*table, {2}, 11);
  PushIds(*table, {3}, 12);
  EXPECT_EQ(IdsHeld(*table), (std::vector<int64_t>{1, 2, 3}));
  PushIds(*table, {3}, 13);  // 1 was last updated at 10 = 13 - 3: it goes
  EXPECT_EQ(IdsHeld(*table), (std::vector<int64_t>{2, 3}));
  PushIds(*table, {3}, 14);
  EXPECT_EQ(IdsHeld(*table), (std::vector<int64_t>{3}));
  EXPECT_EQ(table->counters().evicted_by_ttl, 2);
  EXPECT_EQ(table->counters().evicted_by_capacity, 0);
}

TEST(HashTablePolicyTest, MaxRowsEvictsTheLeastRecentlyUpdated) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = 3;
  auto table = MustCreate(spec);
  for (int64_t id = 1; id <= 4; ++id) PushIds(*table, {id}, id);
  EXPECT_EQ(IdsHeld(*table), (std::vector<int64_t>{2, 3, 4}));
  const std::vector<float> row4 = PullRow(*table, 4);
  PushIds(*table, {2}, 5);  // 2 is now the most recent, 3 the least
  PushIds(*table, {5}, 6);
  EXPECT_EQ(IdsHeld(*table), (std::vector<int64_t>{2, 4, 5}));
  // Evicting moved rows; what stayed is intact.
  EXPECT_EQ(PullRow(*table, 4), row4);
  EXPECT_EQ(table->counters().evicted_by_capacity, 2);
  EXPECT_EQ(table->counters().admitted, 5);
  // Two new rows push out the two least recent (4 at step 4, 2 at 5); a
  // pull is not an update.
  PushIds(*table, {6, 7}, 7);
  EXPECT_EQ(IdsHeld(*table), (std::vector<int64_t>{5, 6, 7}));
}

// Past 4096 rows a sweep spans calls and finds max_rows' cut-off from a
// sample: the table still comes back to max_rows, shedding the oldest.
TEST(HashTablePolicyTest, MaxRowsOfALargeTableKeepsTheRecentRows) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = 5000;
  auto table = MustCreate(spec);
  for (int64_t step = 0; step < 20; ++step) {
    std::vector<int64_t> ids(1000);
    for (int64_t i = 0; i < 1000; ++i) ids[i] = step * 1000 + i;
    PushIds(*table, ids, step);
    EXPECT_LE(table->num_rows(), 5000 + 4096);  // the ceiling
  }
  for (int64_t step = 20; step < 25; ++step) PushIds(*table, {1}, step);
  const std::vector<int64_t> held = IdsHeld(*table);
  EXPECT_LE(held.size(), 5000u);
  EXPECT_GE(held.size(), 4000u);
  // Rows of the last 4 batches (steps 16..19) are the most recent: all kept
  // (id 1, pushed again since, too).
  EXPECT_EQ(std::count_if(held.begin(), held.end(),
                          [](int64_t id) { return id >= 16000; }),
            4000);
  EXPECT_TRUE(std::binary_search(held.begin(), held.end(), 1));
}

TEST(HashTablePolicyTest, AnEvictedIdComesBackFromItsInitializer) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = 1;
  auto table = MustCreate(spec);
  auto fresh = MustCreate(Spec());
  const std::vector<float> initial = PullRow(*fresh, 3);
  PushIds(*table, {3}, 1);
  EXPECT_NE(PullRow(*table, 3), initial);
  PushIds(*table, {4}, 2);
  EXPECT_EQ(IdsHeld(*table), (std::vector<int64_t>{4}));
  EXPECT_EQ(PullRow(*table, 3), initial);
}

TEST(HashTablePolicyTest, ExportAndReplaceCarryTheMetadata) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = 10;
  auto table = MustCreate(spec);
  PushIds(*table, {5, 6}, 20);
  PushIds(*table, {6}, 21);
  const HashTableState state = table->Export();
  EXPECT_EQ(state.ids, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(state.steps, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(state.last_updated, (std::vector<int64_t>{20, 21}));
  EXPECT_EQ(state.clock, 21);

  // Into a table of 1 row: the restore keeps all, the next push sheds the
  // least recently updated.
  spec.policy.eviction.max_rows = 1;
  auto smaller = MustCreate(spec);
  ASSERT_TRUE(smaller->Replace(state).ok());
  EXPECT_EQ(smaller->counters().clock, 21);
  EXPECT_EQ(smaller->num_rows(), 2);
  PushIds(*smaller, {6}, 22);
  EXPECT_EQ(IdsHeld(*smaller), (std::vector<int64_t>{6}));
  EXPECT_EQ(smaller->Export().steps, (std::vector<int64_t>{3}));

  HashTableState bad = state;
  bad.last_updated.pop_back();
  absl::Status status = table->Replace(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("\"ads\""), absl::string_view::npos)
      << status;
}

TEST(HashTablePolicyTest, OldStatesWithoutMetadataAreAtTheirClock) {
  auto table = MustCreate(Spec());
  HashTableState state;
  state.ids = {1, 2};
  state.values.assign(2 * kDim, 0.5f);
  state.slots.assign(1, std::vector<float>(2 * kDim, 0.1f));
  state.steps = {4, 4};
  state.clock = 7;
  ASSERT_TRUE(table->Replace(state).ok());
  EXPECT_EQ(table->Export().last_updated, (std::vector<int64_t>{7, 7}));
}

TEST(HashTablePolicyTest, BadPoliciesAreRefusedNamingTheTableAndField) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = -1;
  absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> table =
      HashEmbeddingTable::Create(spec);
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("\"ads\""), absl::string_view::npos)
      << table.status();
  EXPECT_NE(table.status().message().find("max_rows"), absl::string_view::npos)
      << table.status();
}

TEST(HashTablePolicyTest, ChangesSinceTheSaveMark) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = 3;
  auto table = MustCreate(spec);
  PushIds(*table, {1, 2, 3}, 1);
  EXPECT_EQ(table->ExportAndMark().ids, (std::vector<int64_t>{1, 2, 3}));
  PushIds(*table, {2}, 2);
  PushIds(*table, {4}, 3);  // evicts 1 (step 1, first in row order)
  const HashTableDelta delta = table->ExportChangesAndMark();
  EXPECT_EQ(delta.changed.ids, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(delta.changed.last_updated, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(delta.changed.values.size(), 2 * kDim);
  EXPECT_EQ(delta.removed, (std::vector<int64_t>{1}));
  const HashTableDelta none = table->ExportChangesAndMark();
  EXPECT_TRUE(none.changed.ids.empty());
  EXPECT_TRUE(none.removed.empty());
  // A Replace's dropped rows are removed, its rows changed.
  {
    auto replaced = MustCreate(Spec());
    PushIds(*replaced, {8, 9}, 1);
    replaced->MarkSaved();
    HashTableState nine = replaced->Export();
    nine.ids = {9};
    nine.values.resize(kDim);
    nine.slots[0].resize(kDim);
    nine.steps = {1};
    nine.last_updated = {1};
    ASSERT_TRUE(replaced->Replace(nine).ok());
    const HashTableDelta after = replaced->ExportChangesAndMark();
    EXPECT_EQ(after.changed.ids, (std::vector<int64_t>{9}));
    EXPECT_EQ(after.removed, (std::vector<int64_t>{8}));
  }
  // A removed id that came back is changed, not removed.
  PushIds(*table, {5}, 4);  // evicts 3
  PushIds(*table, {3}, 5);  // back; evicts 2
  const HashTableDelta back = table->ExportChangesAndMark();
  EXPECT_EQ(back.changed.ids, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(back.removed, (std::vector<int64_t>{2}));
}

TEST(HashTablePolicyTest, EvictionsOfATableNeverSavedAreNotKept) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = 1;
  auto table = MustCreate(spec);
  for (int64_t id = 0; id < 100; ++id) PushIds(*table, {id}, id);
  // Rows created and evicted since the (never set) mark are in no save:
  // nothing to remove, and nothing kept to say so.
  const HashTableDelta delta = table->ExportChangesAndMark();
  EXPECT_TRUE(delta.removed.empty());
  EXPECT_EQ(delta.changed.ids, (std::vector<int64_t>{99}));
}

// A call whose sweep visits and evicts exactly its budget still leaves the
// table at max_rows, and so does the next.
TEST(HashTablePolicyTest, MaxRowsHoldsAtTheSweepBudgetsEdge) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = 4000;
  auto table = MustCreate(spec);
  std::vector<int64_t> ids(4000);
  for (int64_t i = 0; i < 4000; ++i) ids[i] = i;
  PushIds(*table, ids, 1);
  std::vector<int64_t> more(96);
  for (int64_t i = 0; i < 96; ++i) more[i] = 10000 + i;
  PushIds(*table, more, 2);
  EXPECT_EQ(table->num_rows(), 4000);
  PushIds(*table, {20000, 20001, 20002}, 3);
  EXPECT_EQ(table->num_rows(), 4000);
}

TEST(HashTablePolicyTest, AHugeMaxRowsDoesNotOverflowTheCeiling) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = std::numeric_limits<int64_t>::max();
  auto table = MustCreate(spec);
  PushIds(*table, {1, 2, 3}, 1);
  EXPECT_EQ(table->num_rows(), 3);
}

// Two workers' pushes and pulls of ids from a range far larger than the
// table's max_rows, while a third thread exports (a checkpoint's save):
// every export is whole and the table stays within its bound.
TEST(HashTablePolicyTest, ATableAtCapacityUnderConcurrentTraffic) {
  HashEmbeddingSpec spec = Spec();
  spec.policy.eviction.max_rows = 500;
  spec.policy.eviction.ttl_steps = 50;
  auto table = MustCreate(spec);
  constexpr int kSteps = 300;
  std::atomic<int64_t> most_rows{0};
  auto worker = [&](int seed) {
    std::mt19937_64 random(seed);
    std::uniform_int_distribution<int64_t> id(0, 20000);
    for (int step = 0; step < kSteps; ++step) {
      std::vector<int64_t> ids(64);
      for (int64_t& i : ids) i = id(random);
      std::vector<float> rows(ids.size() * kDim);
      ASSERT_TRUE(table->Pull(ids, absl::MakeSpan(rows)).ok());
      std::vector<float> grads(ids.size() * kDim, 0.1f);
      ASSERT_TRUE(table->Push(ids, grads, SparseIds::kMayRepeat, step).ok());
      int64_t rows_now = table->num_rows();
      int64_t seen = most_rows.load();
      while (rows_now > seen &&
             !most_rows.compare_exchange_weak(seen, rows_now)) {
      }
    }
  };
  std::atomic<bool> done{false};
  int exports = 0;
  std::thread saver([&] {
    while (!done.load()) {
      const HashTableState state = table->Export();
      const size_t n = state.ids.size();
      ASSERT_EQ(state.values.size(), n * kDim);
      ASSERT_EQ(state.slots.at(0).size(), n * kDim);
      ASSERT_EQ(state.steps.size(), n);
      ASSERT_EQ(state.last_updated.size(), n);
      ASSERT_TRUE(std::is_sorted(state.ids.begin(), state.ids.end()));
      ASSERT_EQ(std::adjacent_find(state.ids.begin(), state.ids.end()),
                state.ids.end());
      for (int64_t updated : state.last_updated)
        ASSERT_LE(updated, state.clock);
      ++exports;
    }
  });
  std::thread first(worker, 1);
  std::thread second(worker, 2);
  first.join();
  second.join();
  done = true;
  saver.join();
  EXPECT_GT(exports, 0);
  const HashTableCounters counters = table->counters();
  EXPECT_LE(counters.rows, 500);  // swept back to max_rows after each push
  EXPECT_GT(counters.evicted_by_capacity + counters.evicted_by_ttl, 0);
  EXPECT_EQ(counters.admitted - counters.evicted_by_capacity -
                counters.evicted_by_ttl,
            counters.rows);
  // Each pull or push sweeps the rows it added away under its own lock.
  EXPECT_LE(most_rows.load(), 500);
}

}  // namespace
}  // namespace distrt
