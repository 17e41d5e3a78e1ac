#include "runtime/distribute/background_push.h"

#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

TEST(BackgroundPushTest, WaitWithoutPushesIsOk) {
  BackgroundPush pushes;
  EXPECT_TRUE(pushes.Wait().ok());
  EXPECT_EQ(pushes.num_started(), 0);
}

// Start returns while the push runs; the next Start waits for it, so
// pushes run one at a time and in order.
TEST(BackgroundPushTest, OnePushInFlightInOrder) {
  BackgroundPush pushes;
  absl::Notification release;
  absl::Mutex mu;
  std::vector<int> order;
  ASSERT_TRUE(pushes
                  .Start([&] {
                    release.WaitForNotification();
                    absl::MutexLock lock(&mu);
                    order.push_back(1);
                    return absl::OkStatus();
                  })
                  .ok());
  {
    // Still blocked: Start came back before the push finished.
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(order.empty());
  }
  release.Notify();
  ASSERT_TRUE(pushes
                  .Start([&] {
                    absl::MutexLock lock(&mu);
                    order.push_back(2);
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(pushes.Wait().ok());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(pushes.num_started(), 2);
}

// A failed push's error comes back once, from the next call, and the push
// offered with it is not started.
TEST(BackgroundPushTest, ErrorReturnedOnceByTheNextCall) {
  BackgroundPush pushes;
  ASSERT_TRUE(
      pushes.Start([] { return absl::UnavailableError("ps task 0 gone"); })
          .ok());
  bool ran = false;
  const absl::Status next = pushes.Start([&ran] {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_EQ(next.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(next.message(), "ps task 0 gone");
  EXPECT_TRUE(pushes.Wait().ok());
  EXPECT_FALSE(ran);
  EXPECT_EQ(pushes.num_started(), 1);

  ASSERT_TRUE(
      pushes.Start([] { return absl::DataLossError("checksum"); }).ok());
  EXPECT_EQ(pushes.Wait().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(pushes.Wait().ok());
}

// Destruction waits for the push in flight.
TEST(BackgroundPushTest, DestructionWaitsForThePush) {
  bool done = false;
  {
    BackgroundPush pushes;
    ASSERT_TRUE(pushes
                    .Start([&done] {
                      done = true;
                      return absl::OkStatus();
                    })
                    .ok());
  }
  EXPECT_TRUE(done);
}

}  // namespace
}  // namespace distrt
