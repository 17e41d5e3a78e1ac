#include "runtime/ps/hash_embedding_table.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace distrt
