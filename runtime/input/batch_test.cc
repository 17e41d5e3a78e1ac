#include "runtime/input/batch.h"

#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/input/example.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Example Dense(float label, std::vector<float> dense) {
  Example example;
  example.label = label;
  example.dense = std::move(dense);
  return example;
}

Example Sparse(float label, std::vector<int64_t> ids,
               std::vector<float> values) {
  Example example;
  example.label = label;
  example.ids = std::move(ids);
  example.values = std::move(values);
  return example;
}

TEST(MakeBatchTest, DenseRowsInOrder) {
  std::vector<Example> examples = {Dense(1, {1, 2, 3}), Dense(0, {4, 5, 6})};
  absl::StatusOr<Batch> batch = MakeBatch(examples);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->size, 2);
  EXPECT_THAT(batch->labels, ElementsAre(1.0f, 0.0f));
  EXPECT_EQ(batch->num_dense, 3);
  EXPECT_THAT(batch->dense, ElementsAre(1, 2, 3, 4, 5, 6));
  // No sparse features: offsets are still size + 1 zeros.
  EXPECT_THAT(batch->offsets, ElementsAre(0, 0, 0));
  EXPECT_THAT(batch->ids, IsEmpty());
  EXPECT_THAT(batch->values, IsEmpty());
}

TEST(MakeBatchTest, SparseFeaturesInCsrForm) {
  // The middle example has no features: an empty row.
  std::vector<Example> examples = {Sparse(1, {0, 7}, {0.5f, 1.0f}),
                                   Sparse(0, {}, {}),
                                   Sparse(1, {3, 4, 9}, {2, 3, 4})};
  absl::StatusOr<Batch> batch = MakeBatch(examples);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->size, 3);
  EXPECT_THAT(batch->labels, ElementsAre(1.0f, 0.0f, 1.0f));
  EXPECT_EQ(batch->num_dense, 0);
  EXPECT_THAT(batch->dense, IsEmpty());
  EXPECT_THAT(batch->offsets, ElementsAre(0, 2, 2, 5));
  EXPECT_THAT(batch->ids, ElementsAre(0, 7, 3, 4, 9));
  EXPECT_THAT(batch->values, ElementsAre(0.5f, 1.0f, 2, 3, 4));
}

// The batch's distinct ids in order, and where each entry's id is there
// (repeats within and across examples).
TEST(MakeBatchTest, IndexesTheDistinctIds) {
  std::vector<Example> examples = {Sparse(1, {9, 2, 9}, {1, 1, 1}),
                                   Sparse(0, {}, {}),
                                   Sparse(1, {5, 2}, {1, 1})};
  absl::StatusOr<Batch> batch = MakeBatch(examples);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_THAT(batch->distinct_ids, ElementsAre(2, 5, 9));
  EXPECT_THAT(batch->distinct_index, ElementsAre(2, 0, 2, 1, 0));

  // Ids over any range (hashed ids, negative ones) take a comparison sort,
  // with the same result.
  batch->ids = {int64_t{1} << 50, -3, 7, -3};
  IndexDistinctIds(*batch);
  EXPECT_THAT(batch->distinct_ids, ElementsAre(-3, 7, int64_t{1} << 50));
  EXPECT_THAT(batch->distinct_index, ElementsAre(2, 0, 1, 0));
  // Many ids over a range of 2^23 (three passes of the radix sort).
  batch->ids.clear();
  for (int64_t k = 0; k < 5000; ++k) {
    batch->ids.push_back((k * 7919) % 4099 * 2001 - 5);
  }
  IndexDistinctIds(*batch);
  ASSERT_EQ(batch->distinct_ids.size(), 4099u);
  for (size_t j = 1; j < batch->distinct_ids.size(); ++j) {
    ASSERT_LT(batch->distinct_ids[j - 1], batch->distinct_ids[j]) << j;
  }
  for (size_t k = 0; k < batch->ids.size(); ++k) {
    ASSERT_EQ(batch->distinct_ids[batch->distinct_index[k]], batch->ids[k])
        << k;
  }

  // Made again after an edit.
  batch->ids = {7, 3};
  IndexDistinctIds(*batch);
  EXPECT_THAT(batch->distinct_ids, ElementsAre(3, 7));
  EXPECT_THAT(batch->distinct_index, ElementsAre(1, 0));
  batch->ids.clear();
  IndexDistinctIds(*batch);
  EXPECT_THAT(batch->distinct_ids, IsEmpty());
  EXPECT_THAT(batch->distinct_index, IsEmpty());
}

TEST(MakeBatchTest, DenseAndSparseTogether) {
  Example a = Dense(2, {1, 2});
  a.ids = {5};
  a.values = {9};
  Example b = Dense(3, {3, 4});
  absl::StatusOr<Batch> batch = MakeBatch({a, b});
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->num_dense, 2);
  EXPECT_THAT(batch->dense, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(batch->offsets, ElementsAre(0, 1, 1));
  EXPECT_THAT(batch->ids, ElementsAre(5));
}

TEST(MakeBatchTest, NoExamplesIsAnEmptyBatch) {
  absl::StatusOr<Batch> batch = MakeBatch({});
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->size, 0);
  EXPECT_EQ(batch->num_dense, 0);
  EXPECT_THAT(batch->labels, IsEmpty());
  EXPECT_THAT(batch->dense, IsEmpty());
  EXPECT_THAT(batch->offsets, ElementsAre(0));
}

TEST(MakeBatchTest, DifferentDenseCountsNameTheFirstExampleThatDiffers) {
  std::vector<Example> examples = {
      Dense(0, {1, 2, 3, 4, 5}), Dense(0, {1, 2, 3, 4, 5}),
      Dense(0, {1, 2, 3, 4, 5}), Dense(0, {1, 2, 3, 4}), Dense(0, {})};
  absl::Status status = MakeBatch(examples).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "example 3 has 4 dense features, example 0 has 5");
}

TEST(MakeBatchTest, MismatchedIdsAndValuesAreAnError) {
  absl::Status status =
      MakeBatch({Sparse(0, {1}, {1}), Sparse(0, {1, 2}, {1})}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "example 1 has 2 sparse ids but 1 values");
}

Example WithGroups(std::vector<GroupIds> groups) {
  Example example;
  example.groups = std::move(groups);
  return example;
}

// Each group in CSR form, with the distinct ids of that group alone.
TEST(MakeBatchTest, EmbeddingGroupsInCsrForm) {
  std::vector<Example> examples = {
      WithGroups({{{4, 1, 4}, {}}, {{7}, {0.5f}}}),
      WithGroups({{{}, {}}, {{7, 8}, {}}}),
      WithGroups({{{1}, {}}, {{}, {}}}),
  };
  absl::StatusOr<Batch> batch = MakeBatch(examples);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->groups.size(), 2u);
  const Batch::Group& first = batch->groups[0];
  EXPECT_THAT(first.offsets, ElementsAre(0, 3, 3, 4));
  EXPECT_THAT(first.ids, ElementsAre(4, 1, 4, 1));
  // No example weighs its ids: no weights at all.
  EXPECT_THAT(first.weights, IsEmpty());
  EXPECT_THAT(first.distinct_ids, ElementsAre(1, 4));
  EXPECT_THAT(first.distinct_index, ElementsAre(1, 0, 1, 0));
  const Batch::Group& second = batch->groups[1];
  EXPECT_THAT(second.offsets, ElementsAre(0, 1, 3, 3));
  EXPECT_THAT(second.ids, ElementsAre(7, 7, 8));
  // One example weighs its ids: the others' ids weigh 1.
  EXPECT_THAT(second.weights, ElementsAre(0.5f, 1.0f, 1.0f));
  EXPECT_THAT(second.distinct_ids, ElementsAre(7, 8));
  EXPECT_THAT(second.distinct_index, ElementsAre(0, 0, 1));
  // The sparse features are apart from the groups.
  EXPECT_THAT(batch->offsets, ElementsAre(0, 0, 0, 0));
}

TEST(MakeBatchTest, NoGroupsWithoutASpec) {
  absl::StatusOr<Batch> batch = MakeBatch({Dense(0, {1}), Dense(1, {2})});
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_THAT(batch->groups, IsEmpty());
}

TEST(MakeBatchTest, DifferentGroupCountsNameTheExample) {
  absl::Status status =
      MakeBatch({WithGroups({{{1}, {}}, {{2}, {}}}),
                 WithGroups({{{1}, {}}, {{2}, {}}}), WithGroups({{{1}, {}}})})
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "example 2 has 1 embedding groups, example 0 has 2");

  status = MakeBatch({WithGroups({{{1}, {}}, {{2, 3}, {1}}})}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "example 0 has 2 ids but 1 weights in embedding group 1");
}

}  // namespace
}  // namespace distrt
