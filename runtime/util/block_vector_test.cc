#include "runtime/util/block_vector.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace distrt {
namespace {

constexpr int64_t kBlock = BlockVector<int64_t>::kBlockElements;

TEST(BlockVectorTest, ElementsStayPutAcrossBlocks) {
  BlockVector<int64_t> v;
  for (int64_t i = 0; i < 2 * kBlock + 3; ++i) v.push_back(i * 3);
  EXPECT_EQ(v.size(), 2 * kBlock + 3);
  const int64_t* first = &v[0];
  v.push_back(7);
  EXPECT_EQ(&v[0], first);  // growing moves nothing
  EXPECT_EQ(v[kBlock], kBlock * 3);
  EXPECT_EQ(v[2 * kBlock + 3], 7);
  v[5] = -1;
  std::vector<int64_t> out;
  v.AppendTo(out);
  ASSERT_EQ(out.size(), static_cast<size_t>(v.size()));
  EXPECT_EQ(out[5], -1);
  EXPECT_EQ(out[kBlock + 1], (kBlock + 1) * 3);
}

TEST(BlockVectorTest, HoldsAtMostTwoBlocksMoreThanItStores) {
  BlockVector<int64_t> v;
  for (int64_t i = 0; i < 3 * kBlock; ++i) v.push_back(i);
  EXPECT_EQ(v.bytes(), 3 * kBlock * 8);
  for (int64_t i = 0; i < 2 * kBlock; ++i) v.pop_back();
  EXPECT_EQ(v.size(), kBlock);
  EXPECT_LE(v.bytes(), 2 * kBlock * 8);
  v.assign(kBlock + 1, 9);
  EXPECT_EQ(v.bytes(), 2 * kBlock * 8);
  EXPECT_EQ(v[kBlock], 9);
  v.clear();
  EXPECT_EQ(v.bytes(), 0);
  EXPECT_TRUE(v.empty());
}

}  // namespace
}  // namespace distrt
