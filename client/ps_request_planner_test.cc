#include "client/ps_request_planner.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "client/id_repeats.h"
#include "client/ps_calls.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/ps_service.pb.h"
#include "rpc/ps_methods.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/placement.h"

namespace distrt::ps_client_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// A float32 variable of `rows` rows of `width`, its parts on the tasks
// given with the rows given.
VariablePlacement Variable(const std::string& name, int64_t rows, int64_t width,
                           std::vector<VariablePart> parts) {
  VariablePlacement v;
  v.spec.name = name;
  v.spec.shape = {rows, width};
  v.parts = std::move(parts);
  return v;
}

PsRequestPlanner Planner(int num_tasks, int64_t max_request_bytes,
                         int64_t batch_below_bytes = 0,
                         int64_t bundle_below_bytes = 0) {
  PsRequestPlanner::Options options;
  options.num_tasks = num_tasks;
  options.max_request_bytes = max_request_bytes;
  options.batch_below_bytes = batch_below_bytes;
  options.bundle_below_bytes = bundle_below_bytes;
  return PsRequestPlanner(options);
}

TEST(PsRequestPlannerTest, SplitRowsCutsPartsAtTheRequestLimit) {
  // Rows of 4 floats (16 bytes), at most 32 bytes a request: 2 rows each.
  const VariablePlacement v = Variable("w", 6, 4, {{0, {0, 3}}, {1, {3, 6}}});
  const std::vector<PsRequestPlanner::Piece> pieces =
      Planner(2, 32).SplitRows(v, {1, 6});
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].ps_task, 0);
  EXPECT_EQ(pieces[0].rows, (RowRange{1, 3}));
  EXPECT_EQ(pieces[0].offset, 0);
  EXPECT_EQ(pieces[1].ps_task, 1);
  EXPECT_EQ(pieces[1].rows, (RowRange{3, 5}));
  EXPECT_EQ(pieces[1].offset, 8);
  EXPECT_EQ(pieces[2].rows, (RowRange{5, 6}));
  EXPECT_EQ(pieces[2].offset, 16);
}

TEST(PsRequestPlannerTest, CheckRowsNamesTheVariable) {
  const VariablePlacement v = Variable("w", 4, 2, {{0, {0, 4}}});
  const absl::Status status =
      Planner(1, 1 << 20).CheckRows(v, {0, 2}, 3, "the buffer");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "variable \"w\": the buffer has 3 elements, expected 4");
}

TEST(PsRequestPlannerTest, PlanManyBatchesSmallPartsPerTask) {
  const VariablePlacement a = Variable("a", 1, 1, {{0, {0, 1}}});
  const VariablePlacement b = Variable("b", 1, 1, {{0, {0, 1}}});
  const VariablePlacement c = Variable("c", 1, 1, {{1, {0, 1}}});
  const std::vector<std::unique_ptr<ManyCall>> calls =
      Planner(2, 1 << 20, 1 << 10)
          .PlanMany({&a, &b, &c}, rpc::kPullDense, rpc::kPullDenseBatch);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]->ps_task, 0);
  EXPECT_TRUE(calls[0]->batch);
  EXPECT_EQ(calls[0]->method, rpc::kPullDenseBatch);
  EXPECT_EQ(calls[0]->about, " of \"a\", \"b\"");
  EXPECT_EQ(calls[1]->ps_task, 1);
  EXPECT_FALSE(calls[1]->batch);
  EXPECT_EQ(calls[1]->method, rpc::kPullDense);
  EXPECT_EQ(calls[1]->about, " of rows [0, 1) of \"c\"");
}

TEST(PsRequestPlannerTest, GroupVariableIdsNamesAnIdThatIsNoRow) {
  const VariablePlacement v = Variable("emb", 4, 2, {{0, {0, 4}}});
  const std::vector<int64_t> ids = {1, 9};
  auto calls =
      Planner(1, 1 << 20)
          .GroupVariableIds<ps::PullSparseRequest, ps::PullSparseResponse>(
              v, ids, FindRepeats(ids));
  EXPECT_EQ(calls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(calls.status().message(),
            "variable \"emb\": id 9 is not one of its rows");
}

TEST(PsRequestPlannerTest, GroupVariableIdsSendsEachDistinctIdOnce) {
  const VariablePlacement v = Variable("emb", 4, 2, {{0, {0, 2}}, {1, {2, 4}}});
  const std::vector<int64_t> ids = {3, 0, 3, 1};
  auto calls =
      Planner(2, 1 << 20)
          .GroupVariableIds<ps::PullSparseRequest, ps::PullSparseResponse>(
              v, ids, FindRepeats(ids));
  ASSERT_TRUE(calls.ok()) << calls.status();
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0]->ps_task, 0);
  EXPECT_THAT((*calls)[0]->ids, ElementsAre(0, 1));
  EXPECT_THAT((*calls)[0]->positions, ElementsAre(1, 3));
  EXPECT_EQ((*calls)[1]->ps_task, 1);
  EXPECT_THAT((*calls)[1]->ids, ElementsAre(3));
  EXPECT_EQ((*calls)[1]->request.name(), "emb");
}

// Every ps task that gets a hash table's push is told the pushing worker's
// global step; an unknown one (-1) leaves the field out, as before it
// existed.
TEST(PsRequestPlannerTest, GroupHashPushIdsTellsEveryTaskTheGlobalStep) {
  HashEmbeddingSpec table;
  table.name = "ads";
  table.dim = 2;
  std::vector<int64_t> ids;
  for (int64_t id = 0; id < 64; ++id) ids.push_back(id * 7919);
  ids.push_back(ids[3]);  // a repeat
  const PsRequestPlanner planner = Planner(3, 1 << 20);
  auto calls = planner.GroupHashPushIds(table, ids, FindRepeats(ids), 41);
  ASSERT_TRUE(calls.ok()) << calls.status();
  ASSERT_EQ(calls->size(), 3u);  // 64 ids reach every one of 3 tasks
  std::vector<int> tasks;
  for (const auto& call : *calls) {
    tasks.push_back(call->ps_task);
    EXPECT_EQ(call->request.name(), "ads");
    ASSERT_TRUE(call->request.has_global_step()) << call->ps_task;
    EXPECT_EQ(call->request.global_step(), 41);
  }
  EXPECT_THAT(tasks, UnorderedElementsAre(0, 1, 2));

  calls = planner.GroupHashPushIds(table, ids, FindRepeats(ids), 0);
  ASSERT_TRUE(calls.ok()) << calls.status();
  for (const auto& call : *calls) {
    ASSERT_TRUE(call->request.has_global_step());
    EXPECT_EQ(call->request.global_step(), 0);
  }

  calls = planner.GroupHashPushIds(table, ids, FindRepeats(ids), -1);
  ASSERT_TRUE(calls.ok()) << calls.status();
  ASSERT_EQ(calls->size(), 3u);
  for (const auto& call : *calls) {
    EXPECT_FALSE(call->request.has_global_step()) << call->ps_task;
  }
}

TEST(PsRequestPlannerTest, BundleUnitsGroupSmallCallsPerTask) {
  std::vector<std::unique_ptr<CallBase>> owned;
  const auto call = [&](int task, int64_t response_bytes) {
    owned.push_back(std::make_unique<CallBase>(task));
    owned.back()->response_bytes = response_bytes;
    return owned.back().get();
  };
  CallBase* small0 = call(0, 10);
  CallBase* large0 = call(0, 1000);
  CallBase* small1 = call(1, 10);
  CallBase* other0 = call(0, 20);
  CallBase* refused = call(2, 10);
  CallBase* refused2 = call(2, 10);
  const std::vector<std::vector<CallBase*>> units =
      Planner(3, 1 << 20, 0, 100)
          .BundleUnits({small0, large0, small1, other0, refused, refused2},
                       [](int task) { return task != 2; });
  // The single calls first, in round order, then the bundles.
  EXPECT_THAT(units,
              ElementsAre(ElementsAre(large0), ElementsAre(refused),
                          ElementsAre(refused2), ElementsAre(small0, other0),
                          ElementsAre(small1)));
}

}  // namespace
}  // namespace distrt::ps_client_internal
