#include "runtime/input/ordered_parallel_map.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace distrt {
namespace {

// Outputs come in push order whatever the threads, even when later inputs
// finish first (the work per item varies by a factor of 1000).
TEST(OrderedParallelMapTest, OutputsInPushOrder) {
  for (int threads : {1, 2, 4, 8}) {
    for (int window : {1, 3, 16}) {
      OrderedParallelMap<int, int64_t> map(threads, window, [](int x) {
        int64_t sum = 0;
        const int rounds = (x % 7 == 0) ? 100000 : 100;
        for (int i = 0; i < rounds; ++i) sum += (x * 31 + i) % 13;
        return static_cast<int64_t>(x) * 1000000 + sum % 1000;
      });
      constexpr int kItems = 500;
      std::thread producer([&] {
        for (int i = 0; i < kItems; ++i) ASSERT_TRUE(map.Push(i));
        map.Close();
      });
      for (int i = 0; i < kItems; ++i) {
        std::optional<int64_t> out = map.Pop();
        ASSERT_TRUE(out.has_value());
        EXPECT_EQ(*out / 1000000, i) << threads << " threads";
      }
      EXPECT_FALSE(map.Pop().has_value());
      producer.join();
    }
  }
}

TEST(OrderedParallelMapTest, PushWaitsForRoomInTheWindow) {
  std::atomic<int> pushed{0};
  OrderedParallelMap<int, int> map(2, 3, [](int x) { return x; });
  std::thread producer([&] {
    for (int i = 0; i < 10; ++i) {
      if (!map.Push(i)) return;
      ++pushed;
    }
    map.Close();
  });
  // Each pop makes room for one more: never more than 3 ahead.
  for (int i = 0; i < 10; ++i) {
    std::optional<int> out = map.Pop();
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(*out, i);
    EXPECT_LE(pushed.load(), i + 1 + 3);
  }
  producer.join();
}

TEST(OrderedParallelMapTest, CancelWakesTheProducerAndTheConsumer) {
  auto map = std::make_unique<OrderedParallelMap<int, int>>(
      1, 1, [](int x) { return x; });
  std::thread producer([&] {
    while (map->Push(1)) {
    }
  });
  std::thread consumer([&] {
    while (map->Pop().has_value()) {
    }
  });
  map->Cancel();
  producer.join();
  consumer.join();
  map.reset();  // joins the pool
}

}  // namespace
}  // namespace distrt
