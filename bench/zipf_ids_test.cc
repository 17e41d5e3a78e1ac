#include "bench/zipf_ids.h"

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace distrt::bench {
namespace {

TEST(ZipfIdsTest, RanksMapToDistinctNonNegativeIds) {
  absl::flat_hash_set<int64_t> ids;
  for (int64_t rank = 1; rank <= 1000000; ++rank) {
    const int64_t id = ZipfIds::IdOfRank(rank);
    ASSERT_GE(id, 0) << "rank " << rank;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000000u);
  // Hot ranks are not small ids.
  EXPECT_GT(ZipfIds::IdOfRank(1), int64_t{1} << 40);
  EXPECT_GT(ZipfIds::IdOfRank(2), int64_t{1} << 40);
}

TEST(ZipfIdsTest, BatchHasTheExpectedDistinctIds) {
  absl::StatusOr<ZipfIds> zipf = ZipfIds::Create(10000000, 1.1, 7);
  ASSERT_TRUE(zipf.ok()) << zipf.status();
  std::vector<int64_t> batch(100000);
  zipf->Fill(absl::MakeSpan(batch));
  // The expected distinct ranks of 100k draws of Zipf(1.1) over 10M,
  // sum_k 1 - (1 - p_k)^100000, is about 29.0k.
  const std::vector<int64_t> distinct = DistinctIds(batch);
  EXPECT_GT(distinct.size(), 27500u);
  EXPECT_LT(distinct.size(), 30500u);
  // The most frequent rank's share, 1 / H(10M, 1.1), is about 11.6%.
  int64_t top = 0;
  for (int64_t id : batch) top += id == ZipfIds::IdOfRank(1);
  EXPECT_GT(top, 11000);
  EXPECT_LT(top, 12300);
}

TEST(ZipfIdsTest, DistinctIdsKeepsFirstAppearances) {
  const std::vector<int64_t> ids = {5, 3, 5, 9, 3, 1};
  EXPECT_EQ(DistinctIds(ids), (std::vector<int64_t>{5, 3, 9, 1}));
  const std::vector<int64_t> unique = {4, 2, 8};
  EXPECT_EQ(DistinctIds(unique), unique);
}

TEST(ZipfIdsTest, RejectsABadExponent) {
  EXPECT_FALSE(ZipfIds::Create(10, 0.0, 1).ok());
  EXPECT_FALSE(ZipfIds::Create(0, 1.1, 1).ok());
}

}  // namespace
}  // namespace distrt::bench
