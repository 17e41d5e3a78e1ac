#include "runtime/models/model_inputs.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/models/model_test_util.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Batch Indexed(Batch batch) {
  IndexDistinctIds(batch);
  return batch;
}

ModelVariable Weights() {
  ModelVariable v;
  v.kind = ModelVariable::Kind::kRowSparse;
  v.spec.name = "w";
  v.spec.shape = {100, 1};
  return v;
}

VariableSlice SliceOf(std::vector<int64_t> ids) {
  VariableSlice slice;
  slice.rows.resize(ids.size());
  slice.ids = std::move(ids);
  return slice;
}

// With or without the batch's index, the same distinct ids and rows.
TEST(ModelInputsTest, DistinctIdsAndRowsWithAndWithoutTheIndex) {
  const Batch plain =
      SparseBatch({1, 0}, {{{42, 1}, {7, 2}, {42, 3}}, {{0, 1}, {7, 1}}});
  const Batch indexed = Indexed(plain);
  for (const Batch* batch : {&plain, &indexed}) {
    EXPECT_THAT(DistinctFeatureIds(*batch), ElementsAre(0, 7, 42));
    // The distinct ids themselves, and a wider slice (other ids between).
    absl::StatusOr<std::vector<int64_t>> rows =
        SliceRowsOfFeatures(*batch, Weights(), SliceOf({0, 7, 42}));
    ASSERT_TRUE(rows.ok()) << rows.status();
    EXPECT_THAT(*rows, ElementsAre(2, 1, 2, 0, 1));
    rows = SliceRowsOfFeatures(*batch, Weights(), SliceOf({0, 5, 7, 9, 42}));
    ASSERT_TRUE(rows.ok()) << rows.status();
    EXPECT_THAT(*rows, ElementsAre(4, 2, 4, 0, 2));
  }
}

// A batch edited after it was indexed is not misread: the index no longer
// matches, and the ids are sorted and searched again.
TEST(ModelInputsTest, AnEditedBatchIgnoresItsStaleIndex) {
  Batch batch = Indexed(SparseBatch({1, 0}, {{{42, 1}, {7, 2}}, {{0, 1}}}));
  batch.ids[0] = 9;  // 42 is gone, 9 is new
  EXPECT_THAT(DistinctFeatureIds(batch), ElementsAre(0, 7, 9));
  absl::StatusOr<std::vector<int64_t>> rows =
      SliceRowsOfFeatures(batch, Weights(), SliceOf({0, 7, 9}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(*rows, ElementsAre(2, 1, 0));
  // An id the slice lacks is still named.
  absl::Status missing =
      SliceRowsOfFeatures(batch, Weights(), SliceOf({0, 7, 42})).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("no values for id 9"));

  // An index whose ids are not all used, or out of order, is not taken.
  Batch extra = Indexed(SparseBatch({1}, {{{3, 1}}}));
  extra.distinct_ids = {3, 4};
  EXPECT_THAT(DistinctFeatureIds(extra), ElementsAre(3));
  Batch unordered = Indexed(SparseBatch({1}, {{{3, 1}, {4, 1}}}));
  unordered.distinct_ids = {4, 3};
  unordered.distinct_index = {1, 0};
  EXPECT_THAT(DistinctFeatureIds(unordered), ElementsAre(3, 4));
}

}  // namespace
}  // namespace distrt
