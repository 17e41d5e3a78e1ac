#include "runtime/in_memory_ps/in_memory_parameter_servers.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

VariableSpec Spec(std::string name, std::vector<int64_t> shape,
                  DType dtype = DType::kFloat32) {
  VariableSpec spec;
  spec.name = std::move(name);
  spec.shape = std::move(shape);
  spec.dtype = dtype;
  spec.optimizer.learning_rate = 0.5f;  // SGD
  return spec;
}

std::unique_ptr<InMemoryParameterServers> TwoTasks() {
  absl::StatusOr<std::unique_ptr<InMemoryParameterServers>> servers =
      InMemoryParameterServers::Create(2);
  EXPECT_TRUE(servers.ok()) << servers.status();
  return *std::move(servers);
}

TEST(InMemoryParameterServersTest, PlacesPartsOnTheTasksAndAppliesPushes) {
  auto servers = TwoTasks();
  absl::StatusOr<VariablePlacement> weights = servers->CreateVariable(
      Spec("weights", {4, 2}), PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(weights.ok()) << weights.status();
  ASSERT_EQ(weights->parts.size(), 2u);
  EXPECT_EQ(weights->parts[0].ps_task, 0);
  EXPECT_EQ(weights->parts[1].ps_task, 1);
  EXPECT_EQ(servers->store(0).Lookup("weights")->rows_held, (RowRange{0, 2}));
  EXPECT_EQ(servers->store(1).Lookup("weights")->rows_held, (RowRange{2, 4}));

  // Each part gets its own rows of the gradient: SGD, rate 0.5, from zeros.
  std::vector<float> grad = {2, 2, 4, 4, 6, 6, 8, 8};
  ASSERT_TRUE(servers->Push(*weights, grad).ok());
  std::vector<float> value(8);
  ASSERT_TRUE(servers->Pull(*weights, absl::MakeSpan(value)).ok());
  EXPECT_THAT(value, ElementsAre(-1, -1, -2, -2, -3, -3, -4, -4));

  // Creating it again finds it; with another shape it is refused.
  absl::StatusOr<VariablePlacement> again =
      servers->CreateVariable(Spec("weights", {4, 2}), PartitionPolicy::None());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->parts.size(), 2u);
  absl::StatusOr<VariablePlacement> other =
      servers->CreateVariable(Spec("weights", {4, 3}), PartitionPolicy::None());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(other.status().message(), HasSubstr("weights"));
}

TEST(InMemoryParameterServersTest, ColocatedVariablesShareTheFirstPartsTask) {
  auto servers = TwoTasks();
  ASSERT_TRUE(
      servers->CreateVariable(Spec("a", {1}), PartitionPolicy::None()).ok());
  absl::StatusOr<VariablePlacement> b =
      servers->CreateVariable(Spec("b", {1}), PartitionPolicy::None());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->parts[0].ps_task, 1);
  absl::StatusOr<VariablePlacement> slot =
      servers->CreateVariableColocated(Spec("b/slot", {3}), "b");
  ASSERT_TRUE(slot.ok()) << slot.status();
  EXPECT_EQ(slot->parts[0].ps_task, 1);
  // The placer did not count it: the next goes to task 0.
  EXPECT_EQ(servers->CreateVariable(Spec("c", {1}), PartitionPolicy::None())
                ->parts[0]
                .ps_task,
            0);
  EXPECT_EQ(servers->CreateVariableColocated(Spec("d", {1}), "missing")
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

TEST(InMemoryParameterServersTest, SparseRowsGoToTheirPartsInOrder) {
  auto servers = TwoTasks();
  absl::StatusOr<VariablePlacement> table = servers->CreateVariable(
      Spec("table", {6, 1}), PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(table.ok());
  // Ids 4 and 1 (one per part); 4 twice, so its gradients add up.
  std::vector<int64_t> ids = {4, 1, 4};
  ASSERT_TRUE(servers->PushSparse(*table, ids, {2, 4, 6}).ok());
  std::vector<float> rows(3);
  ASSERT_TRUE(servers->PullSparse(*table, ids, absl::MakeSpan(rows)).ok());
  EXPECT_THAT(rows, ElementsAre(-4, -2, -4));

  absl::Status bad =
      servers->PullSparse(*table, {6}, absl::MakeSpan(rows).first(1));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("\"table\" has no row id 6"));
  bad = servers->PushSparse(*table, ids, {1, 2});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
}

TEST(InMemoryParameterServersTest, Int64VariablesAdd) {
  auto servers = TwoTasks();
  absl::StatusOr<VariablePlacement> step = servers->CreateVariable(
      Spec("global_step", {}, DType::kInt64), PartitionPolicy::None());
  ASSERT_TRUE(step.ok());
  ASSERT_TRUE(servers->AddInt64(*step, {3}).ok());
  ASSERT_TRUE(servers->AddInt64(*step, {4}).ok());
  std::vector<int64_t> value(1);
  ASSERT_TRUE(servers->PullInt64(*step, absl::MakeSpan(value)).ok());
  EXPECT_EQ(value[0], 7);
  std::vector<float> floats(1);
  EXPECT_EQ(servers->Pull(*step, absl::MakeSpan(floats)).code(),
            absl::StatusCode::kInvalidArgument);

  // A counter split over both tasks returns what each part's add left.
  absl::StatusOr<VariablePlacement> counts = servers->CreateVariable(
      Spec("counts", {4}, DType::kInt64), PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(counts.ok());
  ASSERT_EQ(counts->parts.size(), 2u);
  ASSERT_TRUE(servers->AddInt64(*counts, {1, 2, 3, 4}).ok());
  std::vector<int64_t> after(4);
  ASSERT_TRUE(
      servers->AddInt64(*counts, {10, 20, 30, 40}, absl::MakeSpan(after)).ok());
  EXPECT_EQ(after, (std::vector<int64_t>{11, 22, 33, 44}));
}

TEST(InMemoryParameterServersTest, UpdateChecksEveryItemBeforeApplyingAny) {
  auto servers = TwoTasks();
  VariablePlacement a =
      *servers->CreateVariable(Spec("a", {2}), PartitionPolicy::None());
  VariablePlacement b =
      *servers->CreateVariable(Spec("b", {2}), PartitionPolicy::None());
  std::vector<float> good = {2, 2}, short_grad = {2};
  const std::vector<DenseVariablePush> bad_pushes = {{&a, good},
                                                     {&b, short_grad}};
  UpdateRequest bad;
  bad.dense = bad_pushes;
  absl::Status s = servers->Update(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"b\""));
  std::vector<float> value(2);
  const DenseVariablePull pull_a = {&a, absl::MakeSpan(value)};
  ReadRequest read_a;
  read_a.dense = {&pull_a, 1};
  ASSERT_TRUE(servers->Read(read_a).ok());
  EXPECT_THAT(value, ElementsAre(0, 0));  // a was not pushed either

  // A bad read after good updates: nothing applied.
  std::vector<float> short_out(1);
  const DenseVariablePull bad_pull = {&b, absl::MakeSpan(short_out)};
  ReadRequest bad_read;
  bad_read.dense = {&bad_pull, 1};
  const std::vector<DenseVariablePush> pushes = {{&a, good}, {&b, good}};
  UpdateRequest then_bad;
  then_bad.dense = pushes;
  then_bad.then_read = &bad_read;
  s = servers->Update(then_bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"b\""));
  ASSERT_TRUE(servers->Read(read_a).ok());
  EXPECT_THAT(value, ElementsAre(0, 0));

  // Updates, then a read in the same call, which sees them.
  UpdateRequest update;
  update.dense = pushes;
  update.then_read = &read_a;
  ASSERT_TRUE(servers->Update(update).ok());
  EXPECT_THAT(value, ElementsAre(-1, -1));
  ASSERT_TRUE(servers->Pull(b, absl::MakeSpan(value)).ok());
  EXPECT_THAT(value, ElementsAre(-1, -1));

  VariablePlacement elsewhere = a;
  elsewhere.parts[0].ps_task = 5;
  EXPECT_EQ(servers->Pull(elsewhere, absl::MakeSpan(value)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(InMemoryParameterServersTest, OneUpdateCarriesEveryKindOfWrite) {
  auto servers = TwoTasks();
  VariablePlacement w = *servers->CreateVariable(Spec("w", {2}));
  VariablePlacement step =
      *servers->CreateVariable(Spec("step", {1}, DType::kInt64));
  VariablePlacement counts =
      *servers->CreateVariable(Spec("counts", {2}, DType::kInt64));
  const std::vector<float> five = {5, 5};
  const std::vector<int64_t> seven = {7, 7}, one = {1};
  std::vector<int64_t> step_after(1), counts_now(2);
  std::vector<float> w_now(2);
  const DenseVariableWrite write = {&w, VariableWrite::kAssign, five};
  const Int64VariableAssign assign = {&counts, seven};
  const Int64VariableAdd add = {&step, one, absl::MakeSpan(step_after)};
  const DenseVariablePull pull_w = {&w, absl::MakeSpan(w_now)};
  const Int64VariablePull pull_counts = {&counts, absl::MakeSpan(counts_now)};
  ReadRequest read;
  read.dense = {&pull_w, 1};
  read.int64 = {&pull_counts, 1};
  UpdateRequest update;
  update.writes = {&write, 1};
  update.int64_assigns = {&assign, 1};
  update.int64_adds = {&add, 1};
  update.then_read = &read;
  ASSERT_TRUE(servers->Update(update).ok());
  EXPECT_THAT(w_now, ElementsAre(5, 5));
  EXPECT_THAT(counts_now, ElementsAre(7, 7));
  EXPECT_THAT(step_after, ElementsAre(1));

  // An empty request does nothing.
  EXPECT_TRUE(servers->Update(UpdateRequest()).ok());
  EXPECT_TRUE(servers->Read(ReadRequest()).ok());
}

TEST(InMemoryParameterServersTest, HashTablesAreShardedOverEveryTask) {
  auto servers = TwoTasks();
  HashEmbeddingSpec spec;
  spec.name = "ids";
  spec.dim = 2;
  spec.optimizer.learning_rate = 1.0f;
  ASSERT_TRUE(servers->CreateHashTable(spec).ok());
  std::vector<int64_t> ids;
  std::vector<float> grads;
  for (int64_t id = 0; id < 40; ++id) {
    ids.push_back(id * 1000003);
    grads.insert(grads.end(), {float(id), float(id)});
  }
  ASSERT_TRUE(servers->PushHash(spec, ids, grads).ok());
  std::vector<float> rows(ids.size() * 2);
  ASSERT_TRUE(servers->PullHash(spec, ids, absl::MakeSpan(rows)).ok());
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i], -grads[i]);

  HashEmbeddingSpec missing = spec;
  missing.name = "nope";
  EXPECT_EQ(servers->PullHash(missing, ids, absl::MakeSpan(rows)).code(),
            absl::StatusCode::kNotFound);
}

// An update's global step reaches the hash tables, which age rows by it:
// under a ttl of 10 steps, a row last updated at step 0 is evicted once a
// push at step 100 comes (its id then starts again from the initializer).
// Pushes of an unknown step (-1) advance a table's clock by one each, so
// there the row stays.
TEST(InMemoryParameterServersTest, UpdatesTellHashTablesTheGlobalStep) {
  for (const bool with_step : {true, false}) {
    SCOPED_TRACE(with_step ? "with the global step" : "without");
    // One task: both ids on the same shard, whose clock the second moves.
    absl::StatusOr<std::unique_ptr<InMemoryParameterServers>> servers =
        InMemoryParameterServers::Create(1);
    ASSERT_TRUE(servers.ok()) << servers.status();
    HashEmbeddingSpec spec;
    spec.name = "aged";
    spec.dim = 1;
    spec.optimizer.learning_rate = 1.0f;  // SGD from zeros
    spec.policy.eviction.ttl_steps = 10;
    ASSERT_TRUE((*servers)->CreateHashTable(spec).ok());
    auto push = [&](int64_t id, int64_t global_step) {
      const std::vector<int64_t> ids = {id};
      const std::vector<float> grads = {1.0f};
      const HashTablePush item = {&spec, ids, grads};
      UpdateRequest request;
      request.hash = {&item, 1};
      request.global_step = with_step ? global_step : -1;
      return (*servers)->Update(request);
    };
    ASSERT_TRUE(push(7, 0).ok());
    ASSERT_TRUE(push(8, 100).ok());
    std::vector<float> row(1);
    // Twice: the table evicts in sweeps beside its pulls and pushes, the
    // first of which may come after the first pull's copy.
    for (int pull = 0; pull < 2; ++pull) {
      ASSERT_TRUE((*servers)->PullHash(spec, {7}, absl::MakeSpan(row)).ok());
    }
    EXPECT_EQ(row[0], with_step ? 0.0f : -1.0f);
  }
}

TEST(InMemoryParameterServersTest, NeedsATask) {
  EXPECT_EQ(InMemoryParameterServers::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt
