#include "runtime/input/shuffle_buffer.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/input/example.h"

namespace distrt {
namespace {

Example Labelled(int i) {
  Example example;
  example.label = static_cast<float>(i);
  return example;
}

// Streams 0..n-1 through a buffer as the pipeline does: fill, then one out
// and one in.
std::vector<int> Stream(int n, int64_t capacity, uint64_t seed, int64_t epoch) {
  ShuffleBuffer buffer(capacity);
  buffer.StartEpoch(seed, epoch);
  std::vector<int> out;
  int next = 0;
  while (true) {
    while (!buffer.full() && next < n) buffer.Add(Labelled(next++));
    if (buffer.empty()) return out;
    out.push_back(static_cast<int>(buffer.Take().label));
  }
}

TEST(ShuffleBufferTest, EveryElementOnceAndLocally) {
  constexpr int kN = 1000;
  for (int64_t capacity : {1, 2, 10, 100, 5000}) {
    std::vector<int> out = Stream(kN, capacity, 7, 0);
    ASSERT_EQ(out.size(), static_cast<size_t>(kN));
    std::vector<int> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < kN; ++i) ASSERT_EQ(sorted[i], i);
    // An element leaves no earlier than capacity - 1 places before it came
    // in: when it is drawn, it must have been added.
    for (int i = 0; i < kN; ++i) {
      EXPECT_GE(out[i], 0);
      EXPECT_LT(out[i], i + capacity) << "capacity " << capacity;
    }
    if (capacity == 1) {
      for (int i = 0; i < kN; ++i) EXPECT_EQ(out[i], i);
    } else {
      EXPECT_NE(out, sorted) << "capacity " << capacity;
    }
  }
}

TEST(ShuffleBufferTest, DrawsDependOnSeedAndEpochOnly) {
  EXPECT_EQ(Stream(200, 50, 3, 1), Stream(200, 50, 3, 1));
  EXPECT_NE(Stream(200, 50, 3, 1), Stream(200, 50, 3, 2));
  EXPECT_NE(Stream(200, 50, 3, 1), Stream(200, 50, 4, 1));
}

}  // namespace
}  // namespace distrt
