#include "client/id_repeats.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;

TEST(IdRepeatsTest, DistinctIdsHaveNoRepeats) {
  EXPECT_FALSE(FindRepeats({}).any());
  EXPECT_FALSE(FindRepeats({7}).any());
  const std::vector<int64_t> ids = {5, -1, 1LL << 40, 0, 6};
  const IdRepeats repeats = FindRepeats(ids);
  EXPECT_FALSE(repeats.any());
  EXPECT_TRUE(repeats.first.empty());
}

// Increasing ids are distinct; ids that only look sorted (one equal
// neighbour, or a later step back) are not taken for it.
TEST(IdRepeatsTest, SortedIdsAreToldFromAlmostSortedOnes) {
  EXPECT_FALSE(FindRepeats({-4, 0, 3, 1LL << 40}).any());
  const IdRepeats equal_neighbours = FindRepeats({1, 2, 2, 5});
  ASSERT_TRUE(equal_neighbours.any());
  EXPECT_THAT(equal_neighbours.distinct_of, ElementsAre(0, 1, 1, 2));
  const IdRepeats back_to_the_start = FindRepeats({1, 2, 3, 1});
  ASSERT_TRUE(back_to_the_start.any());
  EXPECT_THAT(back_to_the_start.first, ElementsAre(0, 1, 2));
  EXPECT_THAT(back_to_the_start.distinct_of, ElementsAre(0, 1, 2, 0));
}

TEST(IdRepeatsTest, RepeatsPointAtTheFirstOccurrence) {
  const std::vector<int64_t> ids = {3, 9, 3, -2, 9, 9, 4};
  const IdRepeats repeats = FindRepeats(ids);
  ASSERT_TRUE(repeats.any());
  EXPECT_THAT(repeats.first, ElementsAre(0, 1, 3, 6));
  EXPECT_THAT(repeats.distinct_of, ElementsAre(0, 1, 0, 2, 1, 1, 3));
}

// Ids that collide in the table (same low and high bits after hashing are
// likely for multiples of a large power of two) are still told apart.
TEST(IdRepeatsTest, CollidingIdsStayDistinct) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 1000; ++i) ids.push_back(i << 32);
  ids.push_back(999LL << 32);
  ids.push_back(0);
  const IdRepeats repeats = FindRepeats(ids);
  ASSERT_TRUE(repeats.any());
  ASSERT_EQ(repeats.first.size(), 1000u);
  EXPECT_EQ(repeats.distinct_of[1000], 999u);
  EXPECT_EQ(repeats.distinct_of[1001], 0u);
  for (uint32_t i = 0; i < 1000; ++i) EXPECT_EQ(repeats.distinct_of[i], i);
}

// Ids i * 7 for i < n, then the first `repeated` of them again.
std::vector<int64_t> IdsWithRepeatsAtTheEnd(int64_t n, int64_t repeated) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(i * 7);
  for (int64_t i = 0; i < repeated; ++i) ids.push_back(i * 7);
  return ids;
}

void ExpectRepeatsAtTheEnd(const IdRepeats& repeats, int64_t n,
                           int64_t repeated) {
  ASSERT_TRUE(repeats.any());
  ASSERT_EQ(repeats.first.size(), static_cast<size_t>(n));
  ASSERT_EQ(repeats.distinct_of.size(), static_cast<size_t>(n + repeated));
  for (int64_t i = 0; i < n + repeated; ++i) {
    ASSERT_EQ(repeats.distinct_of[i], i < n ? i : i - n) << "position " << i;
  }
}

// The table a thread keeps between calls starts empty every time, whether
// the call before was larger or smaller; tables beyond the kept size (and
// their prefetched lookups) find repeats as well.
TEST(IdRepeatsTest, CallsOfEverySizeOneAfterAnotherFindTheirOwnRepeats) {
  for (int64_t n : {100000, 50, 20000, 700000, 3000}) {
    SCOPED_TRACE(n);
    ExpectRepeatsAtTheEnd(FindRepeats(IdsWithRepeatsAtTheEnd(n, 10)), n, 10);
  }
  // Ids the previous call had seen are new to this one.
  const std::vector<int64_t> fresh = {7, 14, 1, 2};
  EXPECT_FALSE(FindRepeats(fresh).any());
}

}  // namespace
}  // namespace distrt
