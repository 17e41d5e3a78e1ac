#include "client/request_window.h"

#include <cstddef>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt::ps_client_internal {
namespace {

using ::testing::ElementsAre;

TEST(RequestWindowTest, OpensUpToTheCapPerTaskInOrder) {
  // Tasks 0 0 0 1 1 0: two per task, four in all.
  RequestWindow window({0, 0, 0, 1, 1, 0}, 2, /*max_in_flight=*/4,
                       /*max_per_task=*/2);
  EXPECT_THAT(window.Open(), ElementsAre(0, 1, 3, 4));
  EXPECT_FALSE(window.AllStarted());
  // Task 1's answers free task 1's slots, and it has nothing left: task 0's
  // next request takes the place.
  EXPECT_EQ(window.End(3), std::nullopt);
  EXPECT_EQ(window.End(0), std::optional<size_t>(2));
  EXPECT_EQ(window.End(4), std::nullopt);  // task 0 is at its cap
  EXPECT_EQ(window.End(1), std::optional<size_t>(5));
  EXPECT_TRUE(window.AllStarted());
  EXPECT_EQ(window.End(2), std::nullopt);
  EXPECT_EQ(window.End(5), std::nullopt);
}

TEST(RequestWindowTest, TheOverallCapHoldsAcrossTasks) {
  RequestWindow window({0, 1, 2, 0, 1, 2}, 3, /*max_in_flight=*/2,
                       /*max_per_task=*/2);
  EXPECT_THAT(window.Open(), ElementsAre(0, 1));
  EXPECT_EQ(window.End(1), std::optional<size_t>(2));
  EXPECT_EQ(window.End(0), std::optional<size_t>(3));
}

TEST(RequestWindowTest, ARequestThatFailsBeforeItIsSentStillMakesRoom) {
  // What a failed start must do: end at once, so that the rest still go.
  RequestWindow window({0, 0, 0}, 1, 8, /*max_per_task=*/1);
  std::vector<size_t> started = window.Open();
  ASSERT_THAT(started, ElementsAre(0));
  // Bounded by the number of requests: each end starts at most one.
  for (size_t i = 0; i < started.size(); ++i) {
    if (std::optional<size_t> next = window.End(started[i])) {
      started.push_back(*next);
    }
  }
  EXPECT_THAT(started, ElementsAre(0, 1, 2));
  EXPECT_TRUE(window.AllStarted());
}

TEST(RequestWindowTest, CapsBelowOneCountAsOne) {
  RequestWindow window({0, 0}, 1, 0, 0);
  EXPECT_THAT(window.Open(), ElementsAre(0));
  EXPECT_EQ(window.End(0), std::optional<size_t>(1));
}

TEST(RequestWindowTest, NoRequestsOpenNothing) {
  RequestWindow window({}, 2, 4, 2);
  EXPECT_TRUE(window.Open().empty());
  EXPECT_TRUE(window.AllStarted());
}

}  // namespace
}  // namespace distrt::ps_client_internal
