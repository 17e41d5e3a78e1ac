#include "runtime/distribute/replica_threads.h"

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/synchronization/barrier.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

// Every replica's call runs, concurrently (each waits at a barrier that
// only all of them together pass), and replica 0 on the caller's thread.
TEST(ReplicaThreadsTest, RunsEveryReplicaConcurrently) {
  constexpr int kReplicas = 4;
  ReplicaThreads threads(kReplicas);
  for (int round = 0; round < 3; ++round) {
    auto* barrier = new absl::Barrier(kReplicas);
    std::vector<int> ran(kReplicas, 0);
    std::thread::id zero_ran_on;
    threads.RunEach([&](int replica) {
      ran[replica] += 1;
      if (replica == 0) zero_ran_on = std::this_thread::get_id();
      if (barrier->Block()) delete barrier;
    });
    EXPECT_THAT(ran, ::testing::Each(1)) << "round " << round;
    EXPECT_EQ(zero_ran_on, std::this_thread::get_id());
  }
}

// The threads are kept: replica r runs on the same thread at every round,
// and no replica shares a thread with another.
TEST(ReplicaThreadsTest, KeepsEachReplicaOnItsThread) {
  constexpr int kReplicas = 3;
  ReplicaThreads threads(kReplicas);
  std::vector<std::thread::id> first(kReplicas);
  threads.RunEach(
      [&](int replica) { first[replica] = std::this_thread::get_id(); });
  EXPECT_EQ(std::set<std::thread::id>(first.begin(), first.end()).size(),
            kReplicas);
  for (int round = 0; round < 5; ++round) {
    std::vector<std::thread::id> now(kReplicas);
    threads.RunEach(
        [&](int replica) { now[replica] = std::this_thread::get_id(); });
    EXPECT_EQ(now, first) << "round " << round;
  }
}

// A throw from replica 0 (on the caller's thread) leaves RunEach only once
// the other replicas finished: they still use what the caller's frame holds.
TEST(ReplicaThreadsTest, AThrowFromReplicaZeroWaitsForTheOthers) {
  ReplicaThreads threads(3);
  absl::Notification thrown;
  std::atomic<int> finished{0};
  EXPECT_THROW(threads.RunEach([&](int replica) {
    if (replica == 0) {
      thrown.Notify();
      throw std::runtime_error("replica 0 failed");
    }
    thrown.WaitForNotification();
    finished.fetch_add(1);
  }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 2);
  // And the threads serve the next round.
  std::vector<int> ran(3, 0);
  threads.RunEach([&](int replica) { ran[replica] = 1; });
  EXPECT_THAT(ran, ::testing::Each(1));
}

TEST(ReplicaThreadsTest, OneReplicaNeedsNoThread) {
  ReplicaThreads threads(1);
  std::thread::id ran_on;
  threads.RunEach([&](int) { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

}  // namespace
}  // namespace distrt
