#include "runtime/ps/hash_embedding_table.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"
#include "runtime/optimizer/optimizer.h"

namespace distrt {
namespace {

HashEmbeddingSpec Spec(int64_t dim) {
  HashEmbeddingSpec spec;
  spec.name = "user_emb";
  spec.dim = dim;
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.initializer.seed = 5;
  spec.optimizer.learning_rate = 1.0f;
  return spec;
}

std::unique_ptr<HashEmbeddingTable> MustCreate(const HashEmbeddingSpec& spec) {
  absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> table =
      HashEmbeddingTable::Create(spec);
  EXPECT_TRUE(table.ok()) << table.status();
  return table.ok() ? *std::move(table) : nullptr;
}

std::unique_ptr<HashEmbeddingTable> MustCreate(const HashEmbeddingSpec& spec,
                                               int64_t rows_per_block) {
  HashEmbeddingTable::Options options;
  options.rows_per_block = rows_per_block;
  absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> table =
      HashEmbeddingTable::Create(spec, options);
  EXPECT_TRUE(table.ok()) << table.status();
  return table.ok() ? *std::move(table) : nullptr;
}

// Row `id` of `table`, pulled alone.
std::vector<float> PullRow(HashEmbeddingTable& table, int64_t id) {
  std::vector<float> row(table.spec().dim);
  EXPECT_TRUE(table.Pull({id}, absl::MakeSpan(row)).ok());
  return row;
}

// Multiples of 1/4 small enough that sums of them are exact in any order.
std::vector<float> Gradients(size_t num_ids, int64_t dim, int seed) {
  std::vector<float> grads(num_ids * dim);
  for (size_t i = 0; i < grads.size(); ++i) {
    grads[i] =
        static_cast<float>((static_cast<int>(i) * 7 + seed) % 9 - 4) * 0.25f;
  }
  return grads;
}

void ExpectSameState(const HashTableState& a, const HashTableState& b) {
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.slots, b.slots);
  EXPECT_EQ(a.steps, b.steps);
}

TEST(HashEmbeddingTableTest, RowsAreCreatedOnFirstUseForAnyId) {
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(Spec(4));
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->num_rows(), 0);
  const std::vector<int64_t> ids = {int64_t{1} << 62, -7, 3};
  std::vector<float> out(12);
  ASSERT_TRUE(table->Pull(ids, absl::MakeSpan(out)).ok());
  EXPECT_EQ(table->num_rows(), 3);
  EXPECT_EQ(table->bytes(), 3 * 4 * 4);
  for (float v : out) {
    EXPECT_GE(v, -0.05f);
    EXPECT_LT(v, 0.05f);
  }
  // Same id, same initial row, in another table with the same spec.
  std::unique_ptr<HashEmbeddingTable> other = MustCreate(Spec(4));
  std::vector<float> again(4);
  ASSERT_TRUE(other->Pull({-7}, absl::MakeSpan(again)).ok());
  EXPECT_EQ(std::vector<float>(out.begin() + 4, out.begin() + 8), again);
}

TEST(HashEmbeddingTableTest, PushSumsRepeatedIdsAndCreatesRows) {
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(Spec(2));
  std::vector<float> before(2);
  ASSERT_TRUE(table->Pull({9}, absl::MakeSpan(before)).ok());
  ASSERT_TRUE(table->Push({9, 42, 9}, {1, 2, 5, 5, 3, 4}).ok());
  std::vector<float> after(4);
  ASSERT_TRUE(table->Pull({9, 42}, absl::MakeSpan(after)).ok());
  EXPECT_FLOAT_EQ(after[0], before[0] - 4);
  EXPECT_FLOAT_EQ(after[1], before[1] - 6);
  EXPECT_EQ(table->num_rows(), 2);
}

// Pulls and pushes of many ids (prefetching ahead, rows over several
// blocks) find the same rows as one id at a time; a push whose ids are said
// to be distinct (SparseIds::kDistinct, what PsClient sends) updates as one
// that is not.
TEST(HashEmbeddingTableTest, ManyIdsAtOnceAndIdsSaidToBeDistinct) {
  HashEmbeddingSpec spec = Spec(3);
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  HashEmbeddingTable::Options small_blocks;
  small_blocks.rows_per_block = 4;
  absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> said =
      HashEmbeddingTable::Create(spec, small_blocks);
  absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> unsaid =
      HashEmbeddingTable::Create(spec, small_blocks);
  ASSERT_TRUE(said.ok() && unsaid.ok());
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 50; ++i) ids.push_back((i * 37) % 101 - 20);
  const std::vector<float> grads = Gradients(ids.size(), 3, 1);
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE((*said)->Push(ids, grads, SparseIds::kDistinct).ok());
    ASSERT_TRUE((*unsaid)->Push(ids, grads).ok());
  }
  ExpectSameState((*said)->Export(), (*unsaid)->Export());
  std::vector<float> all(ids.size() * 3);
  ASSERT_TRUE((*said)->Pull(ids, absl::MakeSpan(all)).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(std::vector<float>(all.begin() + 3 * i, all.begin() + 3 * i + 3),
              PullRow(**said, ids[i]))
        << "id " << ids[i];
  }
  EXPECT_EQ((*said)->num_rows(), 50);
}

TEST(HashEmbeddingTableTest, Errors) {
  EXPECT_EQ(HashEmbeddingTable::Create(Spec(0)).status().message(),
            "hash embedding table \"user_emb\": dim 0 is not in 1..1048576");
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(Spec(3));
  std::vector<float> out(5);
  EXPECT_EQ(table->Pull({1, 2}, absl::MakeSpan(out)).message(),
            "hash embedding table \"user_emb\": the pull buffer has 5 values "
            "for 2 ids, expected 6 (dim 3)");
  EXPECT_EQ(table->num_rows(), 0);
}

TEST(HashEmbeddingTableTest, ConcurrentPushesAreNeverLost) {
  HashEmbeddingSpec spec = Spec(2);
  spec.initializer.kind = InitializerSpec::Kind::kZeros;
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(spec);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&table, t] {
      for (int i = 0; i < 1000; ++i) {
        ASSERT_TRUE(table->Push({100, 1000 + t}, {-1, -1, -1, -1}).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<float> shared(2), own(2);
  ASSERT_TRUE(table->Pull({100}, absl::MakeSpan(shared)).ok());
  ASSERT_TRUE(table->Pull({1003}, absl::MakeSpan(own)).ok());
  EXPECT_EQ(shared[0], 8000.0f);
  EXPECT_EQ(own[1], 1000.0f);
  EXPECT_EQ(table->num_rows(), 9);
}

TEST(HashEmbeddingTableTest, ExportIsSortedAndReplaceRestoresIt) {
  HashEmbeddingSpec spec = Spec(2);
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(spec);
  ASSERT_TRUE(table->Push({50, -3, 7}, {1, 2, 3, 4, 5, 6}).ok());
  ASSERT_TRUE(table->Push({7}, {1, 1}).ok());
  HashTableState state = table->Export();
  EXPECT_EQ(state.ids, (std::vector<int64_t>{-3, 7, 50}));
  EXPECT_EQ(state.steps, (std::vector<int64_t>{1, 2, 1}));
  ASSERT_EQ(state.values.size(), 6u);
  ASSERT_EQ(state.slots.size(), 1u);  // the accumulator
  std::vector<float> row(2);
  ASSERT_TRUE(table->Pull({50}, absl::MakeSpan(row)).ok());
  EXPECT_EQ(std::vector<float>(state.values.begin() + 4, state.values.end()),
            row);

  // Replace drops the rows the state does not have and keeps slots and
  // steps: the same push then gives the same result in both tables.
  std::unique_ptr<HashEmbeddingTable> copy = MustCreate(spec);
  ASSERT_TRUE(copy->Pull({1000}, absl::MakeSpan(row)).ok());
  ASSERT_TRUE(copy->Replace(state).ok());
  EXPECT_EQ(copy->num_rows(), 3);
  ASSERT_TRUE(table->Push({7, 50}, {2, 2, 2, 2}).ok());
  ASSERT_TRUE(copy->Push({7, 50}, {2, 2, 2, 2}).ok());
  HashTableState a = table->Export();
  HashTableState b = copy->Export();
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.slots, b.slots);
  EXPECT_EQ(a.steps, b.steps);
}

TEST(HashEmbeddingTableTest, ReplaceChecksSizesAndLeavesTheTableAlone) {
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(Spec(2));  // sgd
  ASSERT_TRUE(table->Push({1}, {1, 1}).ok());
  EXPECT_EQ(table->Replace({{1, 2}, {1, 2, 3}, {}, {0, 0}}).message(),
            "hash embedding table \"user_emb\": the replacement has 3 values "
            "for 2 ids, expected 4 (dim 2)");
  EXPECT_EQ(table->Replace({{1, 2}, {1, 2, 3, 4}, {{}}, {0, 0}}).message(),
            "hash embedding table \"user_emb\": the replacement has 1 "
            "optimizer slots, expected 0 (sgd)");
  EXPECT_EQ(table->Replace({{1, 2}, {1, 2, 3, 4}, {}, {0}}).message(),
            "hash embedding table \"user_emb\": the replacement has 1 steps "
            "for 2 ids");
  EXPECT_EQ(table->Replace({{1, 1}, {1, 2, 3, 4}, {}, {0, 0}}).message(),
            "hash embedding table \"user_emb\": the replacement has row 1 "
            "more than once");
  EXPECT_EQ(table->Replace({{1, 2}, {1, 2, 3, 4}, {}, {0, -1}}).message(),
            "hash embedding table \"user_emb\": the replacement's row 2 has "
            "a negative step -1");
  HashTableState state = table->Export();
  EXPECT_EQ(state.ids, std::vector<int64_t>{1});
  EXPECT_EQ(state.steps, std::vector<int64_t>{1});
  ASSERT_TRUE(table->Replace({}).ok());
  EXPECT_EQ(table->num_rows(), 0);
}

// With 4 rows per block, 11 rows fill three blocks, the last one partly; each
// row must come back as a table whose rows all share one block has it, and
// after pushes as the optimizer applied by hand makes it.
TEST(HashEmbeddingTableTest, RowsAcrossBlocksMatchTheOptimizerAppliedByHand) {
  HashEmbeddingSpec spec = Spec(3);
  spec.optimizer.kind = OptimizerKind::kAdam;  // two slots; uses the step
  spec.optimizer.learning_rate = 0.5f;
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(spec, 4);
  std::unique_ptr<HashEmbeddingTable> reference = MustCreate(spec);
  ASSERT_NE(table, nullptr);
  ASSERT_NE(reference, nullptr);
  const std::vector<int64_t> ids = {
      90, -5, int64_t{1} << 40, 7, 3, 12, 8, -100, 55, 0, 21};
  std::vector<float> pulled(ids.size() * 3);
  ASSERT_TRUE(table->Pull(ids, absl::MakeSpan(pulled)).ok());
  EXPECT_EQ(table->num_rows(), 11);
  EXPECT_EQ(table->bytes(), 11 * table->bytes_per_row());

  struct Row {
    std::vector<float> values;
    std::vector<std::vector<float>> slots;
    int64_t step = 0;
  };
  absl::flat_hash_map<int64_t, Row> expected;
  auto expected_row = [&](int64_t id) -> Row& {
    auto [it, inserted] = expected.try_emplace(id);
    if (inserted) {
      // Created in another order, all in one block.
      it->second.values = PullRow(*reference, id);
      for (int s = 0; s < 2; ++s) {
        it->second.slots.emplace_back(3, SlotInitialValue(spec.optimizer, s));
      }
    }
    return it->second;
  };
  for (int i = static_cast<int>(ids.size()) - 1; i >= 0; --i) {
    EXPECT_EQ(std::vector<float>(pulled.begin() + i * 3,
                                 pulled.begin() + (i + 1) * 3),
              expected_row(ids[i]).values)
        << "id " << ids[i];
  }

  // Repeats of rows in different blocks, and new rows: 1000 fills the third
  // block and 1001 opens a fourth halfway through a push; 1 << 20 opens a
  // fifth.
  const std::vector<std::vector<int64_t>> pushes = {
      {90, 21, 90, 8, 21, 90},
      {1000, 7, 1001, -5, 1002, 1000, 1003, 7, 1004, 1000},
      {55, 1004, 1 << 20, 3, 55, 1 << 20, 55},
  };
  for (size_t p = 0; p < pushes.size(); ++p) {
    const std::vector<int64_t>& push = pushes[p];
    const std::vector<float> grads = Gradients(push.size(), 3, p);
    ASSERT_TRUE(table->Push(push, grads).ok());
    absl::flat_hash_map<int64_t, std::vector<float>> sums;
    for (size_t i = 0; i < push.size(); ++i) {
      std::vector<float>& sum = sums[push[i]];
      sum.resize(3, 0.0f);
      for (int k = 0; k < 3; ++k) sum[k] += grads[i * 3 + k];
    }
    for (const auto& [id, sum] : sums) {
      Row& row = expected_row(id);
      std::vector<absl::Span<float>> slots;
      for (auto& slot : row.slots) slots.push_back(absl::MakeSpan(slot));
      ApplyOptimizer(spec.optimizer, ++row.step, sum,
                     absl::MakeSpan(row.values), slots);
    }
  }
  EXPECT_EQ(table->num_rows(), 17);
  EXPECT_EQ(table->bytes(), 17 * table->bytes_per_row());

  HashTableState state = table->Export();
  ASSERT_EQ(state.ids.size(), expected.size());
  ASSERT_EQ(state.slots.size(), 2u);
  for (size_t i = 0; i < state.ids.size(); ++i) {
    const Row& row = expected_row(state.ids[i]);
    EXPECT_EQ(PullRow(*table, state.ids[i]), row.values) << state.ids[i];
    EXPECT_EQ(std::vector<float>(state.values.begin() + i * 3,
                                 state.values.begin() + (i + 1) * 3),
              row.values)
        << state.ids[i];
    for (int s = 0; s < 2; ++s) {
      EXPECT_EQ(std::vector<float>(state.slots[s].begin() + i * 3,
                                   state.slots[s].begin() + (i + 1) * 3),
                row.slots[s])
          << state.ids[i] << " slot " << s;
    }
    EXPECT_EQ(state.steps[i], row.step) << state.ids[i];
  }
}

TEST(HashEmbeddingTableTest, PushSumsRepeatedIdsAcrossBlocks) {
  HashEmbeddingSpec spec = Spec(2);  // sgd, learning rate 1
  spec.initializer.kind = InitializerSpec::Kind::kZeros;
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(spec, 2);
  ASSERT_NE(table, nullptr);
  // Rows 1 and 2 in the first block, 3 and 4 in the second, 5 in the third:
  // all created by this push.
  ASSERT_TRUE(table
                  ->Push({1, 2, 3, 1, 4, 5, 1, 3},
                         {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8})
                  .ok());
  std::vector<float> out(10);
  ASSERT_TRUE(table->Pull({1, 2, 3, 4, 5}, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out,
            (std::vector<float>{-12, -12, -2, -2, -11, -11, -5, -5, -6, -6}));
  EXPECT_EQ(table->num_rows(), 5);
  // Not the sixth row the third block has room for.
  EXPECT_EQ(table->bytes(), 5 * 2 * 4);
  EXPECT_EQ(table->Export().steps, (std::vector<int64_t>{1, 1, 1, 1, 1}));
}

TEST(HashEmbeddingTableTest, ExportAndReplaceAcrossBlocks) {
  HashEmbeddingSpec spec = Spec(2);
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  std::unique_ptr<HashEmbeddingTable> table = MustCreate(spec, 3);
  ASSERT_NE(table, nullptr);
  const std::vector<int64_t> ids = {40, -2, 17, 5, 99, 3, -60, 8, 1000, 12};
  ASSERT_TRUE(table->Push(ids, Gradients(ids.size(), 2, 1)).ok());
  ASSERT_TRUE(table->Push({8, 40, 8}, Gradients(3, 2, 2)).ok());
  HashTableState state = table->Export();
  EXPECT_EQ(state.ids,
            (std::vector<int64_t>{-60, -2, 3, 5, 8, 12, 17, 40, 99, 1000}));
  EXPECT_EQ(state.steps, (std::vector<int64_t>{1, 1, 1, 1, 2, 1, 1, 2, 1, 1}));
  ASSERT_EQ(state.values.size(), 20u);
  ASSERT_EQ(state.slots.size(), 1u);
  for (size_t i = 0; i < state.ids.size(); ++i) {
    EXPECT_EQ(PullRow(*table, state.ids[i]),
              std::vector<float>(state.values.begin() + i * 2,
                                 state.values.begin() + (i + 1) * 2))
        << state.ids[i];
  }

  // Into a table with other blocks and other rows, from a state whose rows
  // are in descending id order.
  HashTableState reversed = state;
  std::reverse(reversed.ids.begin(), reversed.ids.end());
  std::reverse(reversed.steps.begin(), reversed.steps.end());
  for (std::vector<float>* v : {&reversed.values, &reversed.slots[0]}) {
    std::vector<float> rows;
    for (size_t i = state.ids.size(); i-- > 0;) {
      rows.insert(rows.end(), v->begin() + i * 2, v->begin() + (i + 1) * 2);
    }
    *v = rows;
  }
  std::unique_ptr<HashEmbeddingTable> copy = MustCreate(spec, 4);
  ASSERT_NE(copy, nullptr);
  std::vector<float> other(10);
  ASSERT_TRUE(copy->Pull({7777, 8888, 9999, 1, 2}, absl::MakeSpan(other)).ok());
  ASSERT_TRUE(copy->Replace(reversed).ok());
  EXPECT_EQ(copy->num_rows(), 10);
  EXPECT_EQ(copy->bytes(), 10 * copy->bytes_per_row());
  ExpectSameState(copy->Export(), state);
  EXPECT_EQ(PullRow(*copy, 99), PullRow(*table, 99));

  // Both go on alike: old rows and new ones, which fill the copy's partly
  // filled last block and open new blocks.
  const std::vector<int64_t> more = {12, 2000, -60, 2001, 2002, 12, 2003, 99};
  ASSERT_TRUE(table->Push(more, Gradients(more.size(), 2, 3)).ok());
  ASSERT_TRUE(copy->Push(more, Gradients(more.size(), 2, 3)).ok());
  HashTableState after = table->Export();
  EXPECT_EQ(after.ids.size(), 14u);
  ExpectSameState(copy->Export(), after);

  // A failed replacement of many rows leaves every block as it was.
  HashTableState bad = after;
  bad.ids.back() = bad.ids.front();
  EXPECT_EQ(copy->Replace(bad).message(),
            "hash embedding table \"user_emb\": the replacement has row -60 "
            "more than once");
  ExpectSameState(copy->Export(), after);
  EXPECT_EQ(copy->num_rows(), 14);
}

TEST(HashEmbeddingTableTest, RowsPerBlockIsChecked) {
  HashEmbeddingTable::Options options;
  options.rows_per_block = -1;
  EXPECT_EQ(HashEmbeddingTable::Create(Spec(2), options).status().message(),
            "hash embedding table \"user_emb\": rows_per_block -1 is not in "
            "0..16777216");
  // The default for the widest rows: one row per block, not 4 MiB of rows.
  std::unique_ptr<HashEmbeddingTable> wide = MustCreate(Spec(1 << 20));
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(PullRow(*wide, 3).size(), size_t{1} << 20);
  EXPECT_EQ(wide->bytes(), int64_t{4} << 20);
}

}  // namespace
}  // namespace distrt
