#include "runtime/collective/replica_barrier.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

TEST(ReplicaBarrierTest, NobodyPassesBeforeEveryoneArrived) {
  constexpr int kReplicas = 4;
  constexpr int kRounds = 50;
  ReplicaBarrier barrier(kReplicas);
  std::atomic<int> arrivals{0};
  std::vector<absl::Status> statuses(kReplicas);
  std::vector<std::thread> threads;
  for (int r = 0; r < kReplicas; ++r) {
    threads.emplace_back([&, r] {
      for (int round = 0; round < kRounds; ++round) {
        arrivals.fetch_add(1);
        absl::Status s = barrier.Wait("test");
        // Everyone of this round arrived; nobody of the next one yet could
        // have passed, so at least (round + 1) * replicas arrivals happened.
        if (s.ok() && arrivals.load() < (round + 1) * kReplicas) {
          s = absl::InternalError("passed early");
        }
        if (!s.ok()) {
          statuses[r] = s;
          return;
        }
        // Second barrier so a fast replica cannot count its next arrival
        // before a slow one checks.
        s = barrier.Wait("test");
        if (!s.ok()) {
          statuses[r] = s;
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
}

TEST(ReplicaBarrierTest, AReplicaThatLeavesFailsTheOthersAtOnce) {
  // A long timeout: the failure must come from the leave, not the clock.
  ReplicaBarrier barrier(3, absl::Hours(1));
  std::vector<absl::Status> statuses(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] { statuses[r] = barrier.Wait("MergeCall"); });
  }
  // Whether the waiters arrived before or after the leave, they fail.
  barrier.Leave(2, absl::InvalidArgumentError("bad batch"));
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(s.message(), HasSubstr("replica 2 returned with error"));
    EXPECT_THAT(s.message(), HasSubstr("bad batch"));
  }
  // Stays failed until Reset; then works again.
  EXPECT_FALSE(barrier.failure().ok());
  barrier.Reset();
  EXPECT_TRUE(barrier.failure().ok());
  std::vector<std::thread> again;
  std::vector<absl::Status> again_statuses(3);
  for (int r = 0; r < 3; ++r) {
    again.emplace_back([&, r] { again_statuses[r] = barrier.Wait("x"); });
  }
  for (std::thread& t : again) t.join();
  for (const absl::Status& s : again_statuses) EXPECT_TRUE(s.ok()) << s;
}

TEST(ReplicaBarrierTest, AStuckReplicaIsADeadlineNotAHang) {
  ReplicaBarrier barrier(2, absl::Milliseconds(100));
  absl::Status s = barrier.Wait("all-reduce");
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("all-reduce"));
  EXPECT_EQ(barrier.Wait("all-reduce").code(),
            absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace distrt
