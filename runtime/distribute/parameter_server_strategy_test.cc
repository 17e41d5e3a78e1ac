// ParameterServerStrategy over two in-process parameter servers
// (InMemoryParameterServers); client/ps_client_strategy_test runs it against
// ps tasks over gRPC.

#include "runtime/distribute/parameter_server_strategy.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/distribute/concurrent_updates.h"
#include "runtime/distribute/test_variable_options.h"
#include "runtime/in_memory_ps/in_memory_parameter_servers.h"
#include "runtime/local_devices/local_devices.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

class ParameterServerStrategyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<InMemoryParameterServers>> servers =
        InMemoryParameterServers::Create(2);
    ASSERT_TRUE(servers.ok()) << servers.status();
    servers_ = *std::move(servers);
    LocalDevicesOptions options;
    options.num_cpu_devices = 3;
    options.use_gpus = false;
    devices_ = *CreateLocalDevices(options);
  }
  // A worker: its own strategy over the shared servers.
  std::unique_ptr<ParameterServerStrategy> Worker() {
    auto strategy =
        *ParameterServerStrategy::Create(devices_.pointers(), servers_.get());
    EXPECT_TRUE(strategy->Initialize().ok());
    return strategy;
  }

  std::unique_ptr<InMemoryParameterServers> servers_;
  LocalDevices devices_;
};

absl::Status IncrementStep(Strategy& strategy, DistributedVariable& step) {
  return strategy.Run([&](ReplicaContext& context) {
    Tensor one = *Tensor::Create(DType::kInt64, {});
    one.flat<int64_t>()[0] = 1;
    return context.AssignAdd(step, std::move(one));
  });
}

TEST_F(ParameterServerStrategyTest, VariablesLiveOnThePsTasks) {
  auto strategy = Worker();
  EXPECT_EQ(strategy->num_replicas_in_sync(), 3);
  VariableOptions big = SumVariable("embedding", {10, 2});
  big.partition = PartitionPolicy::FixedShards(2);
  DistributedVariable* embedding = *strategy->CreateVariable(big);
  EXPECT_EQ(embedding->num_copies(), 1);
  EXPECT_THAT(embedding->DescribePlacement(),
              HasSubstr("ps task 0 rows [0, 5), ps task 1 rows [5, 10)"));

  // Colocated variables share the ps task of the first rows, unpartitioned.
  DistributedVariable* bias =
      *strategy->CreateVariable(SumVariable("bias", {1}));
  DistributedVariable* slot = nullptr;
  {
    Strategy::ColocationScope scope = strategy->ColocateVarsWith(*bias);
    VariableOptions colocated = SumVariable("bias/accumulator", {4, 3});
    colocated.partition = PartitionPolicy::FixedShards(2);  // overridden
    slot = *strategy->CreateVariable(colocated);
  }
  const std::string bias_task = bias->DescribePlacement().substr(
      0, bias->DescribePlacement().find(" rows"));
  EXPECT_THAT(slot->DescribePlacement(), HasSubstr(bias_task + " rows [0, 4)"));
  EXPECT_EQ(servers_->Lookup("bias/accumulator")->parts.size(), 1u);
  // Outside the scope placement is round-robin again.
  DistributedVariable* after =
      *strategy->CreateVariable(SumVariable("after", {2}));
  EXPECT_THAT(after->DescribePlacement(), HasSubstr("ps task"));

  // A gradient applied in cross-replica context reaches the servers (SGD,
  // learning rate 0.01 by default, zero initial values).
  std::vector<float> grad(20, 100.0f);
  ASSERT_TRUE(strategy->ApplyGradient(*embedding, grad).ok());
  absl::StatusOr<Tensor> value = strategy->ReadVar(*embedding);
  ASSERT_TRUE(value.ok()) << value.status();
  for (float v : value->flat<float>()) EXPECT_FLOAT_EQ(v, -1.0f);
}

// TF's assign_add on a ps variable: applied on the servers, atomically per
// part, so gradients pushed by another worker at the same time are not
// lost.
TEST_F(ParameterServerStrategyTest, AssignAddIsExactUnderConcurrentPushes) {
  auto adder = Worker();
  auto pusher = Worker();
  absl::StatusOr<std::vector<float>> values =
      AddWhilePushing(*adder, *pusher, /*adds=*/300, /*pushes=*/200);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, std::vector<float>(20, 2 * 300 - 200));
  // The optimizer's state is untouched by assigns: its step counts pushes.
  absl::StatusOr<VariableState> state = servers_->store(0).Snapshot("shared");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->step, 200);
}

absl::Status TimesTen(Tensor& value) {
  for (float& v : value.flat<float>()) v *= 10;
  return absl::OkStatus();
}

TEST_F(ParameterServerStrategyTest, AssignsWriteThroughAndUpdateIsRefused) {
  auto strategy = Worker();
  auto other = Worker();
  DistributedVariable* bias = *strategy->CreateVariable(SumVariable("b", {3}));
  ASSERT_TRUE(
      strategy->Assign(*bias, *Tensor::FromFloats({1, 2, 3}, {3})).ok());
  // A read-modify-write would lose other workers' pushes in between.
  absl::Status update = strategy->Update(*bias, TimesTen);
  EXPECT_EQ(update.code(), absl::StatusCode::kFailedPrecondition) << update;
  EXPECT_THAT(update.message(), HasSubstr("variable \"b\""));
  EXPECT_THAT(update.message(),
              HasSubstr("Assign, AssignAdd, AssignSub or ApplyGradient"));
  EXPECT_EQ(strategy->ReadVar(*bias)->flat<float>()[2], 3);
  ASSERT_TRUE(
      strategy->AssignAdd(*bias, *Tensor::FromFloats({9, 18, 27}, {3})).ok());
  DistributedVariable* seen = *other->CreateVariable(SumVariable("b", {3}));
  Tensor value = *other->ReadVar(*seen);
  EXPECT_THAT(std::vector<float>(value.flat<float>().begin(),
                                 value.flat<float>().end()),
              ::testing::ElementsAre(10, 20, 30));

  DistributedVariable* step = *strategy->CreateVariable(GlobalStepVariable());
  Tensor seven = *Tensor::Create(DType::kInt64, {});
  seven.flat<int64_t>()[0] = 7;
  ASSERT_TRUE(strategy->Assign(*step, seven).ok());
  ASSERT_TRUE(strategy->AssignSub(*step, seven).ok());
  ASSERT_TRUE(strategy->AssignAdd(*step, seven).ok());
  EXPECT_EQ(strategy->ReadVar(*step)->flat<int64_t>()[0], 7);

  // A value of another dtype or shape changes nothing.
  EXPECT_EQ(strategy->Assign(*bias, seven).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(strategy->ReadVar(*bias)->flat<float>()[2], 30);
}

// As TF's: without ps tasks the strategy trains locally, variables and hash
// tables on the host, one copy for every replica, with checkpointable state.
TEST_F(ParameterServerStrategyTest, WithoutPsTasksTrainsLocally) {
  {
    auto strategy =
        *ParameterServerStrategy::Create(devices_.pointers(), nullptr);
    ASSERT_TRUE(strategy->Initialize().ok());
    EXPECT_FALSE(strategy->has_ps_tasks());
    EXPECT_THAT(strategy->Describe(), HasSubstr("no ps tasks"));
    EXPECT_EQ(strategy->num_replicas_in_sync(), 3);
    DistributedVariable* w = *strategy->CreateVariable(SumVariable("w", {2}));
    EXPECT_EQ(w->num_copies(), 1);
    EXPECT_THAT(w->DescribePlacement(), HasSubstr("on the host"));
    DistributedVariable* step = *strategy->CreateVariable(GlobalStepVariable());
    ASSERT_TRUE(IncrementStep(*strategy, *step).ok());
    ASSERT_TRUE(strategy
                    ->Run([&](ReplicaContext& context) {
                      const float grad[] = {100.0f, 200.0f};
                      return context.ApplyGradient(
                          *w, grad, GradientAggregation::kAlreadyAggregated);
                    })
                    .ok());
    EXPECT_EQ(strategy->ReadVar(*step)->flat<int64_t>()[0], 1);
    // Applied once (SGD at 0.01), not once per replica.
    Tensor value = *strategy->ReadVar(*w);
    EXPECT_FLOAT_EQ(value.flat<float>()[0], -1.0f);
    EXPECT_FLOAT_EQ(value.flat<float>()[1], -2.0f);
    absl::StatusOr<VariableState> state = w->ExportState(0);
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_EQ(state->step, 1);
  }
  EXPECT_EQ(servers_->store(0).List().size(), 0u);
}

TEST_F(ParameterServerStrategyTest, GlobalStepCountsWorkerStepsNotReplicas) {
  auto worker_a = Worker();
  auto worker_b = Worker();
  DistributedVariable* step_a = *worker_a->CreateVariable(GlobalStepVariable());
  DistributedVariable* step_b = *worker_b->CreateVariable(GlobalStepVariable());
  // Two workers step asynchronously, each on its own thread.
  constexpr int kSteps = 20;
  absl::Status status_a, status_b;
  std::thread thread_a([&] {
    for (int i = 0; i < kSteps && status_a.ok(); ++i) {
      status_a = IncrementStep(*worker_a, *step_a);
    }
  });
  std::thread thread_b([&] {
    for (int i = 0; i < kSteps && status_b.ok(); ++i) {
      status_b = IncrementStep(*worker_b, *step_b);
    }
  });
  thread_a.join();
  thread_b.join();
  ASSERT_TRUE(status_a.ok()) << status_a;
  ASSERT_TRUE(status_b.ok()) << status_b;
  // 3 replicas per worker, but one increment per worker step.
  EXPECT_EQ(worker_a->ReadVar(*step_a)->flat<int64_t>()[0], 2 * kSteps);
}

// The step's add goes with its gradients (one Update on the servers): the
// step counts once per worker step, and replica 0 learns each value it
// left; a delta that does not fit goes through the variable and errs there.
TEST_F(ParameterServerStrategyTest, AStepsAddGoesWithItsGradients) {
  auto worker = Worker();
  DistributedVariable* w = *worker->CreateVariable(SumVariable("w", {2}));
  DistributedVariable* step = *worker->CreateVariable(GlobalStepVariable());
  const auto values = [&] {
    const Tensor t = *worker->ReadVar(*w);
    return std::vector<float>(t.flat<float>().begin(), t.flat<float>().end());
  };
  const std::vector<float> before = values();
  const std::vector<float> grad = {1.0f, -1.0f};
  const std::vector<absl::Span<const float>> grads = {grad};
  for (int round = 1; round <= 3; ++round) {
    std::vector<Tensor> after(3);
    absl::Status s = worker->Run([&](ReplicaContext& context) {
      Tensor one = *Tensor::Create(DType::kInt64, {});
      one.flat<int64_t>()[0] = 1;
      ReplicaContext::AddUpdate add = {step, std::move(one),
                                       &after[context.local_replica_id()]};
      return context.ApplyGradients({&w, 1}, grads, {}, &add);
    });
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(after[0].num_elements(), 1);
    EXPECT_EQ(after[0].flat<int64_t>()[0], round);
    // The others share replica 0's copy.
    EXPECT_EQ(after[1].num_elements(), 0);
    EXPECT_EQ(after[2].num_elements(), 0);
  }
  EXPECT_EQ(worker->ReadVar(*step)->flat<int64_t>()[0], 3);
  EXPECT_NE(values(), before);

  absl::Status wrong = worker->Run([&](ReplicaContext& context) {
    ReplicaContext::AddUpdate add = {step, *Tensor::Create(DType::kInt64, {2}),
                                     nullptr};
    return context.ApplyGradients({}, {}, {}, &add);
  });
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument) << wrong;
  EXPECT_THAT(wrong.message(), HasSubstr("global_step"));
  EXPECT_EQ(worker->ReadVar(*step)->flat<int64_t>()[0], 3);
}

TEST_F(ParameterServerStrategyTest, SyncOnReadVariablesStayOnTheWorker) {
  auto strategy = Worker();
  VariableOptions metric = SumVariable("examples_seen", {1});
  metric.synchronization = VariableSynchronization::kOnRead;
  DistributedVariable* seen = *strategy->CreateVariable(metric);
  EXPECT_EQ(seen->num_copies(), 3);
  ASSERT_TRUE(strategy
                  ->Run([&](ReplicaContext& context) {
                    return context.AssignAdd(*seen,
                                             *Tensor::FromFloats({5}, {1}));
                  })
                  .ok());
  EXPECT_EQ(strategy->ReadVar(*seen)->flat<float>()[0], 15);
  for (int t = 0; t < servers_->num_ps_tasks(); ++t) {
    EXPECT_TRUE(servers_->store(t).List().empty());
  }
}

// What lives on the worker has no other writers: Update works there.
TEST_F(ParameterServerStrategyTest, UpdateWorksForWhatIsNotOnPsTasks) {
  auto local = *ParameterServerStrategy::Create(devices_.pointers(), nullptr);
  ASSERT_TRUE(local->Initialize().ok());
  DistributedVariable* w = *local->CreateVariable(SumVariable("w", {2}));
  ASSERT_TRUE(local->Assign(*w, *Tensor::FromFloats({1, 2}, {2})).ok());
  ASSERT_TRUE(local->Update(*w, TimesTen).ok());
  EXPECT_EQ(local->ReadVar(*w)->flat<float>()[1], 20);

  auto strategy = Worker();
  VariableOptions metric = SumVariable("metric", {1});
  metric.synchronization = VariableSynchronization::kOnRead;
  metric.aggregation = VariableAggregation::kOnlyFirstReplica;
  DistributedVariable* on_worker = *strategy->CreateVariable(metric);
  ASSERT_TRUE(strategy->Assign(*on_worker, *Tensor::FromFloats({4}, {1})).ok());
  ASSERT_TRUE(strategy->Update(*on_worker, TimesTen).ok());
  EXPECT_EQ(strategy->ReadVar(*on_worker)->flat<float>()[0], 40);
}

TEST_F(ParameterServerStrategyTest, NeedsADevice) {
  EXPECT_EQ(ParameterServerStrategy::Create({}, servers_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt
