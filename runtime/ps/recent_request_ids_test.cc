#include "runtime/ps/recent_request_ids.h"

#include "gtest/gtest.h"

namespace distrt {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);

TEST(RecentRequestIdsTest, SecondCopyIsADuplicate) {
  RecentRequestIds ids;
  EXPECT_TRUE(ids.Begin(42, kStart));
  EXPECT_FALSE(ids.Begin(42, kStart + absl::Seconds(1)));
  EXPECT_TRUE(ids.Begin(43, kStart + absl::Seconds(1)));
  EXPECT_EQ(ids.duplicates(), 1);
}

TEST(RecentRequestIdsTest, ZeroIsNeverRemembered) {
  RecentRequestIds ids;
  EXPECT_TRUE(ids.Begin(0, kStart));
  EXPECT_TRUE(ids.Begin(0, kStart));
  EXPECT_EQ(ids.duplicates(), 0);
}

TEST(RecentRequestIdsTest, AFailedPushMayBeResent) {
  RecentRequestIds ids;
  EXPECT_TRUE(ids.Begin(7, kStart));
  ids.Forget(7);
  EXPECT_TRUE(ids.Begin(7, kStart));
  EXPECT_FALSE(ids.Begin(7, kStart));
}

TEST(RecentRequestIdsTest, OldIdsAreForgotten) {
  RecentRequestIds::Options options;
  options.max_age = absl::Minutes(1);
  RecentRequestIds ids(options);
  EXPECT_TRUE(ids.Begin(1, kStart));
  EXPECT_TRUE(ids.Begin(2, kStart + absl::Seconds(30)));
  // 61 s later the first is forgotten, the second still remembered.
  EXPECT_TRUE(ids.Begin(1, kStart + absl::Seconds(61)));
  EXPECT_FALSE(ids.Begin(2, kStart + absl::Seconds(61)));
}

TEST(RecentRequestIdsTest, AtMostMaxIdsAreRemembered) {
  RecentRequestIds::Options options;
  options.max_ids = 3;
  RecentRequestIds ids(options);
  for (uint64_t id = 1; id <= 4; ++id) EXPECT_TRUE(ids.Begin(id, kStart));
  // Remembering 4 pushed out 1.
  EXPECT_TRUE(ids.Begin(1, kStart));
  EXPECT_FALSE(ids.Begin(4, kStart));
}

TEST(RecentRequestIdsTest, ForgottenIdsDoNotConfuseEviction) {
  RecentRequestIds::Options options;
  options.max_ids = 2;
  RecentRequestIds ids(options);
  EXPECT_TRUE(ids.Begin(1, kStart));
  ids.Forget(1);
  EXPECT_TRUE(ids.Begin(1, kStart));  // remembered again, queued twice
  EXPECT_TRUE(ids.Begin(2, kStart));  // evicts the first entry of 1
  EXPECT_TRUE(ids.Begin(3, kStart));  // evicts the second entry of 1
  EXPECT_TRUE(ids.Begin(1, kStart));
  EXPECT_FALSE(ids.Begin(3, kStart));
}

}  // namespace
}  // namespace distrt
