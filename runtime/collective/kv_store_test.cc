#include "runtime/collective/kv_store.h"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(InMemoryKvStoreTest, GetReturnsValuesInTheOrderAsked) {
  InMemoryKvStore store;
  ASSERT_TRUE(store.Set("a", "1").ok());
  ASSERT_TRUE(store.Set("b", std::string("\0x", 2)).ok());
  ASSERT_TRUE(store.Set("a", "one").ok());  // replaces
  absl::StatusOr<std::vector<std::string>> values =
      store.Get({"b", "a", "b"}, absl::ZeroDuration());
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values,
              ElementsAre(std::string("\0x", 2), "one", std::string("\0x", 2)));
}

TEST(InMemoryKvStoreTest, GetWaitsForALaterSet) {
  InMemoryKvStore store;
  absl::Notification getting;
  absl::StatusOr<std::vector<std::string>> values;
  std::thread getter([&] {
    getting.Notify();
    // Far longer than the test may take: it must return because of the Set.
    values = store.Get({"early", "late"}, absl::Hours(1));
  });
  getting.WaitForNotification();
  ASSERT_TRUE(store.Set("early", "e").ok());
  ASSERT_TRUE(store.Set("late", "l").ok());
  getter.join();
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, ElementsAre("e", "l"));
}

TEST(InMemoryKvStoreTest, GetTimesOutNamingTheMissingKeys) {
  InMemoryKvStore store;
  ASSERT_TRUE(store.Set("here", "x").ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::string>> values =
      store.Get({"here", "gone"}, absl::Milliseconds(50));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(50));
  EXPECT_EQ(values.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(values.status().message(), "key \"gone\" not set within 50ms");

  // Zero (or negative) only looks.
  values = store.Get({"a\n", "b"}, absl::Seconds(-1));
  EXPECT_EQ(values.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(values.status().message(), "keys \"a\\n\", \"b\" not set within 0");
}

TEST(InMemoryKvStoreTest, ManyMissingKeysAreCounted) {
  InMemoryKvStore store;
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back(std::to_string(i));
  absl::StatusOr<std::vector<std::string>> values =
      store.Get(keys, absl::ZeroDuration());
  EXPECT_EQ(values.status().message(),
            "keys \"0\", \"1\", \"2\", \"3\", \"4\", \"5\", \"6\", \"7\" and 2 "
            "more not set within 0");
}

TEST(InMemoryKvStoreTest, AddCountsAcrossThreads) {
  constexpr int kThreads = 8;
  constexpr int kAddsEach = 500;
  InMemoryKvStore store;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAddsEach; ++i) {
        absl::StatusOr<int64_t> value = store.Add("counter", 1);
        seen[t].push_back(value.ok() ? *value : -1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Every Add saw a different count: 1 ... kThreads * kAddsEach.
  std::vector<int64_t> all;
  for (const auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), size_t{kThreads * kAddsEach});
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], int64_t(i) + 1);
  // Get sees the counter as decimal text.
  absl::StatusOr<std::vector<std::string>> values =
      store.Get({"counter"}, absl::ZeroDuration());
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, ElementsAre("4000"));
  EXPECT_EQ(*store.Add("counter", -4001), -1);
}

TEST(InMemoryKvStoreTest, AddRefusesValuesThatAreNotCounters) {
  InMemoryKvStore store;
  ASSERT_TRUE(store.Set("addr", "10.0.0.1:80").ok());
  absl::StatusOr<int64_t> value = store.Add("addr", 1);
  EXPECT_EQ(value.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(value.status().message(), HasSubstr("key \"addr\""));

  ASSERT_TRUE(store.Add("big", INT64_MAX).ok());
  value = store.Add("big", 1);
  EXPECT_EQ(value.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(*store.Add("big", 0), INT64_MAX);  // unchanged
}

TEST(InMemoryKvStoreTest, SizeLimits) {
  InMemoryKvStore::Options options;
  options.max_key_bytes = 4;
  options.max_value_bytes = 8;
  options.max_total_bytes = 20;
  InMemoryKvStore store(options);

  absl::Status s = store.Set("", "v");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "empty key");
  s = store.Set("12345", "v");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "key \"12345\" is 5 bytes, more than the limit of 4");
  EXPECT_EQ(store.Get({"12345"}, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Add("", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  s = store.Set("k", "123456789");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "value for key \"k\" is 9 bytes, more than the limit of 8");

  // 1 + 8 and 2 + 8 bytes fit in 20; a third entry does not.
  ASSERT_TRUE(store.Set("a", "12345678").ok());
  ASSERT_TRUE(store.Set("bb", "12345678").ok());
  s = store.Set("c", "1");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("limit of 20 bytes (19 in use)"));
  // Replacing a value counts only the difference.
  EXPECT_TRUE(store.Set("a", "1234567").ok());
  EXPECT_TRUE(store.Set("c", "").ok());
}

TEST(InMemoryKvStoreTest, CloseWakesWaitersAndRefusesCalls) {
  InMemoryKvStore store;
  absl::Notification getting;
  absl::StatusOr<std::vector<std::string>> values;
  std::thread getter([&] {
    getting.Notify();
    values = store.Get({"never"}, absl::Hours(1));
  });
  getting.WaitForNotification();
  store.Close();
  getter.join();
  EXPECT_EQ(values.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.Set("k", "v").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.Add("k", 1).status().code(), absl::StatusCode::kUnavailable);
  store.Close();  // idempotent
}

}  // namespace
}  // namespace distrt
