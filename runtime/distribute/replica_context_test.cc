#include "runtime/distribute/replica_context.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/distribute/central_storage_strategy.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/strategy.h"
#include "runtime/distribute/test_variable_options.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr int kReplicas = 3;

class ReplicaContextTest : public ::testing::TestWithParam<bool> {
 protected:
  // Mirrored (one copy per replica), or central storage (one copy that
  // every replica shares) when the parameter says so.
  std::unique_ptr<Strategy> Make(int n) {
    LocalDevicesOptions options;
    options.num_cpu_devices = n;
    options.use_gpus = false;
    absl::StatusOr<LocalDevices> devices = CreateLocalDevices(options);
    EXPECT_TRUE(devices.ok()) << devices.status();
    local_.push_back(std::make_unique<LocalDevices>(*std::move(devices)));
    if (GetParam()) {
      return *CentralStorageStrategy::Create(local_.back()->pointers());
    }
    return *MirroredStrategy::Create(local_.back()->pointers());
  }

  std::vector<std::unique_ptr<LocalDevices>> local_;
};

// A float32 variable of zeros, plain SGD at learning rate 1 (w -= grad).
DistributedVariable* MakeVariable(Strategy& strategy, std::string name,
                                  std::vector<int64_t> shape,
                                  VariableAggregation aggregation) {
  VariableOptions options = SumVariable(std::move(name), std::move(shape));
  options.aggregation = aggregation;
  options.spec.optimizer.learning_rate = 1.0f;
  absl::StatusOr<DistributedVariable*> made = strategy.CreateVariable(options);
  EXPECT_TRUE(made.ok()) << made.status();
  return *made;
}

// Every copy of `variable`, in copy order.
std::vector<std::vector<float>> Copies(const DistributedVariable& variable) {
  std::vector<std::vector<float>> copies;
  for (int c = 0; c < variable.num_copies(); ++c) {
    const Tensor t = *variable.ReadCopy(c);
    copies.emplace_back(t.flat<float>().begin(), t.flat<float>().end());
  }
  return copies;
}

// Every copy holds `want`.
void ExpectEveryCopy(const DistributedVariable& variable,
                     const std::vector<float>& want) {
  for (const std::vector<float>& copy : Copies(variable)) {
    EXPECT_THAT(copy, ElementsAreArray(want)) << variable.name();
  }
}

// Replica r's gradient {r, 1}: summed over 3 replicas {3, 3}, averaged
// {1, 1}. Before aggregation by default, mirrors drifted apart (each took
// its own) and central storage took only replica 0's.
TEST_P(ReplicaContextTest, ApplyGradientSumsTheReplicasGradients) {
  std::unique_ptr<Strategy> strategy = Make(kReplicas);
  DistributedVariable* w =
      MakeVariable(*strategy, "w", {2}, VariableAggregation::kSum);
  absl::Status s = strategy->Run([&](ReplicaContext& context) {
    const float r = context.replica_id_in_sync_group();
    const std::vector<float> grad = {r, 1.0f};
    return context.ApplyGradient(*w, grad);
  });
  ASSERT_TRUE(s.ok()) << s;
  ExpectEveryCopy(*w, {-3.0f, -3.0f});
}

TEST_P(ReplicaContextTest, ApplyGradientAveragesForAMeanVariable) {
  std::unique_ptr<Strategy> strategy = Make(kReplicas);
  DistributedVariable* w =
      MakeVariable(*strategy, "w", {2}, VariableAggregation::kMean);
  absl::Status s = strategy->Run([&](ReplicaContext& context) {
    const float r = context.replica_id_in_sync_group();
    const std::vector<float> grad = {r, 1.0f};
    return context.ApplyGradient(*w, grad);
  });
  ASSERT_TRUE(s.ok()) << s;
  ExpectEveryCopy(*w, {-1.0f, -1.0f});
}

// As TF's optimizer, which sums whatever the variable's aggregation.
TEST_P(ReplicaContextTest, ApplyGradientSumsForOtherAggregations) {
  std::unique_ptr<Strategy> strategy = Make(kReplicas);
  DistributedVariable* none =
      MakeVariable(*strategy, "none", {1}, VariableAggregation::kNone);
  DistributedVariable* first = MakeVariable(
      *strategy, "first", {1}, VariableAggregation::kOnlyFirstReplica);
  absl::Status s = strategy->Run([&](ReplicaContext& context) -> absl::Status {
    const std::vector<float> grad = {context.replica_id_in_sync_group() + 1.0f};
    RETURN_IF_ERROR(context.ApplyGradient(*none, grad));
    return context.ApplyGradient(*first, grad);
  });
  ASSERT_TRUE(s.ok()) << s;
  ExpectEveryCopy(*none, {-6.0f});
  ExpectEveryCopy(*first, {-6.0f});
}

// A caller that all-reduced itself says so, and the gradient is applied
// as given (aggregating again would triple it).
TEST_P(ReplicaContextTest, AlreadyAggregatedIsAppliedAsGiven) {
  std::unique_ptr<Strategy> strategy = Make(kReplicas);
  DistributedVariable* w =
      MakeVariable(*strategy, "w", {2}, VariableAggregation::kSum);
  DistributedVariable* rows =
      MakeVariable(*strategy, "rows", {3, 1}, VariableAggregation::kSum);
  absl::Status s = strategy->Run([&](ReplicaContext& context) -> absl::Status {
    const float r = context.replica_id_in_sync_group();
    ASSIGN_OR_RETURN(Tensor grad, Tensor::FromFloats({r, 1.0f}, {2}));
    RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, grad));
    RETURN_IF_ERROR(context.ApplyGradient(
        *w, grad.flat<float>(), GradientAggregation::kAlreadyAggregated));
    SparseGradient mine;
    mine.ids = {context.local_replica_id()};
    mine.rows = {1.0f};
    ASSIGN_OR_RETURN(std::shared_ptr<const SparseGradient> all,
                     context.AllGather(std::move(mine)));
    return context.ApplySparseGradient(*rows, *all,
                                       GradientAggregation::kAlreadyAggregated);
  });
  ASSERT_TRUE(s.ok()) << s;
  ExpectEveryCopy(*w, {-3.0f, -3.0f});
  ExpectEveryCopy(*rows, {-1.0f, -1.0f, -1.0f});
}

// Each replica's sparse gradient touches its own row; all are gathered.
TEST_P(ReplicaContextTest, ApplySparseGradientGathersTheReplicasRows) {
  std::unique_ptr<Strategy> strategy = Make(kReplicas);
  DistributedVariable* e =
      MakeVariable(*strategy, "e", {4, 2}, VariableAggregation::kSum);
  absl::Status s = strategy->Run([&](ReplicaContext& context) {
    SparseGradient mine;
    mine.ids = {context.local_replica_id()};
    mine.rows = {1.0f, 2.0f};
    return context.ApplySparseGradient(*e, mine);
  });
  ASSERT_TRUE(s.ok()) << s;
  ExpectEveryCopy(*e, {-1, -2, -1, -2, -1, -2, 0, 0});
}

// Dense SUM and MEAN variables and sparse ones in one call, with the
// step's add: each as the variable's aggregation says.
TEST_P(ReplicaContextTest, ApplyGradientsAggregatesEachAsItsVariableSays) {
  std::unique_ptr<Strategy> strategy = Make(kReplicas);
  DistributedVariable* sum =
      MakeVariable(*strategy, "sum", {2}, VariableAggregation::kSum);
  DistributedVariable* mean =
      MakeVariable(*strategy, "mean", {3}, VariableAggregation::kMean);
  DistributedVariable* rows =
      MakeVariable(*strategy, "rows", {4, 2}, VariableAggregation::kSum);
  DistributedVariable* mean_rows =
      MakeVariable(*strategy, "mean_rows", {2, 1}, VariableAggregation::kMean);
  DistributedVariable* step = *strategy->CreateVariable(GlobalStepVariable());
  DistributedVariable* const dense[] = {sum, mean};
  absl::Status s = strategy->Run([&](ReplicaContext& context) {
    const float r = context.replica_id_in_sync_group();
    const std::vector<float> sum_grad = {r, 1.0f};
    const std::vector<float> mean_grad = {r, 2 * r, 3.0f};
    const absl::Span<const float> grads[] = {sum_grad, mean_grad};
    SparseGradient own_row;
    own_row.ids = {context.local_replica_id()};
    own_row.rows = {1.0f, 2.0f};
    SparseGradient same_row;
    same_row.ids = {1};
    same_row.rows = {3.0f};
    const ReplicaContext::SparseUpdate sparse[] = {{rows, &own_row},
                                                   {mean_rows, &same_row}};
    Tensor one = *Tensor::Create(DType::kInt64, {});
    one.flat<int64_t>()[0] = 1;
    ReplicaContext::AddUpdate add = {step, std::move(one), nullptr};
    return context.ApplyGradients(dense, grads, sparse, &add);
  });
  ASSERT_TRUE(s.ok()) << s;
  ExpectEveryCopy(*sum, {-3.0f, -3.0f});
  ExpectEveryCopy(*mean, {-1.0f, -2.0f, -3.0f});
  ExpectEveryCopy(*rows, {-1, -2, -1, -2, -1, -2, 0, 0});
  // Three rows of 3 / 3, added up.
  ExpectEveryCopy(*mean_rows, {0.0f, -3.0f});
  EXPECT_EQ(strategy->ReadVar(*step)->flat<int64_t>()[0], 1);
}

TEST_P(ReplicaContextTest, ApplyGradientsThenReadAggregatesAndReadsTheSum) {
  std::unique_ptr<Strategy> strategy = Make(kReplicas);
  DistributedVariable* w =
      MakeVariable(*strategy, "w", {2}, VariableAggregation::kSum);
  DistributedVariable* const variables[] = {w};
  const DistributedVariable* const read[] = {w};
  std::vector<std::vector<float>> seen(kReplicas);
  absl::Status s = strategy->Run([&](ReplicaContext& context) -> absl::Status {
    const float r = context.replica_id_in_sync_group();
    const std::vector<float> grad = {r, 1.0f};
    const absl::Span<const float> grads[] = {grad};
    ASSIGN_OR_RETURN(std::vector<Tensor> values,
                     context.ApplyGradientsThenRead(variables, grads, {},
                                                    nullptr, read, {}));
    const auto flat = values.at(0).flat<float>();
    seen[context.local_replica_id()].assign(flat.begin(), flat.end());
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  ExpectEveryCopy(*w, {-3.0f, -3.0f});
  for (const std::vector<float>& values : seen) {
    EXPECT_THAT(values, ElementsAre(-3.0f, -3.0f));
  }
}

// With one replica in sync there is nothing to exchange.
TEST_P(ReplicaContextTest, OneReplicaAppliesItsOwnGradient) {
  std::unique_ptr<Strategy> strategy = Make(1);
  DistributedVariable* w =
      MakeVariable(*strategy, "w", {2}, VariableAggregation::kMean);
  absl::Status s = strategy->Run([&](ReplicaContext& context) {
    const std::vector<float> grad = {2.0f, -1.0f};
    return context.ApplyGradient(*w, grad);
  });
  ASSERT_TRUE(s.ok()) << s;
  ExpectEveryCopy(*w, {-2.0f, 1.0f});
}

// Before, a short gradient reached the variable (or, for replicas that did
// not update a shared copy, nothing at all). Now every Apply* refuses it
// by name and sizes, before any collective, in either mode.
TEST_P(ReplicaContextTest, RefusesAGradientThatDoesNotFitItsVariable) {
  std::unique_ptr<Strategy> strategy = Make(kReplicas);
  DistributedVariable* w =
      MakeVariable(*strategy, "w", {3}, VariableAggregation::kSum);
  DistributedVariable* e =
      MakeVariable(*strategy, "e", {4, 2}, VariableAggregation::kSum);
  const std::vector<float> short_grad = {1.0f};
  const absl::Span<const float> grads[] = {short_grad};
  DistributedVariable* const variables[] = {w};
  SparseGradient short_rows;
  short_rows.ids = {0, 1};
  short_rows.rows = {1.0f, 2.0f, 3.0f};
  const ReplicaContext::SparseUpdate sparse[] = {{e, &short_rows}};
  for (GradientAggregation aggregation :
       {GradientAggregation::kAggregate,
        GradientAggregation::kAlreadyAggregated}) {
    std::vector<absl::Status> dense(kReplicas), batched(kReplicas),
        then_read(kReplicas), rows(kReplicas);
    ASSERT_TRUE(
        strategy
            ->Run([&](ReplicaContext& context) {
              const int r = context.local_replica_id();
              dense[r] = context.ApplyGradient(*w, short_grad, aggregation);
              batched[r] = context.ApplyGradients(variables, grads, {}, nullptr,
                                                  aggregation);
              then_read[r] =
                  context
                      .ApplyGradientsThenRead(variables, grads, {}, nullptr, {},
                                              {}, aggregation)
                      .status();
              rows[r] =
                  context.ApplySparseGradient(*e, short_rows, aggregation);
              return absl::OkStatus();
            })
            .ok());
    for (int r = 0; r < kReplicas; ++r) {
      for (const absl::Status& s : {dense[r], batched[r], then_read[r]}) {
        EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
        EXPECT_THAT(s.message(), HasSubstr("variable \"w\" has 1 elements, "
                                           "the variable has 3"));
      }
      EXPECT_EQ(rows[r].code(), absl::StatusCode::kInvalidArgument) << rows[r];
      EXPECT_THAT(rows[r].message(),
                  HasSubstr("variable \"e\" has 3 values for 2 ids"));
      EXPECT_THAT(rows[r].message(), HasSubstr("are 4 values"));
    }
    absl::Status in_batch = strategy->Run([&](ReplicaContext& context) {
      return context.ApplyGradients({}, {}, sparse, nullptr, aggregation);
    });
    EXPECT_EQ(in_batch, rows[0]);
  }
  ExpectEveryCopy(*w, {0.0f, 0.0f, 0.0f});
  ExpectEveryCopy(*e, std::vector<float>(8, 0.0f));
}

INSTANTIATE_TEST_SUITE_P(MirroredAndCentralStorage, ReplicaContextTest,
                         ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "CentralStorage" : "Mirrored";
                         });

// MergeCall, which does not depend on where variables live.
class MergeCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalDevicesOptions options;
    options.num_cpu_devices = kReplicas;
    options.use_gpus = false;
    absl::StatusOr<LocalDevices> devices = CreateLocalDevices(options);
    ASSERT_TRUE(devices.ok()) << devices.status();
    devices_ = std::make_unique<LocalDevices>(*std::move(devices));
    strategy_ = *MirroredStrategy::Create(devices_->pointers());
  }

  std::unique_ptr<LocalDevices> devices_;
  std::unique_ptr<Strategy> strategy_;
};

// As TF unwraps a per-replica merge result: replica r gets component r.
TEST_F(MergeCallTest, UnwrapsAPerReplicaResult) {
  std::vector<absl::StatusOr<int>> got(kReplicas, absl::UnknownError(""));
  ASSERT_TRUE(strategy_
                  ->Run([&](ReplicaContext& context) {
                    const int r = context.local_replica_id();
                    got[r] = context.MergeCall<int>(
                        r,
                        [](Strategy&, PerReplica<int>& values)
                            -> absl::StatusOr<PerReplica<int>> {
                          std::vector<int> tens;
                          for (int v : values.Unwrap()) tens.push_back(10 * v);
                          return PerReplica<int>(std::move(tens));
                        });
                    return absl::OkStatus();
                  })
                  .ok());
  for (int r = 0; r < kReplicas; ++r) {
    ASSERT_TRUE(got[r].ok()) << got[r].status();
    EXPECT_EQ(*got[r], 10 * r);
  }
}

// A Mirrored result too, with move-only components (tensors).
TEST_F(MergeCallTest, UnwrapsAMirroredResultOfTensors) {
  std::vector<float> got(kReplicas, -1.0f);
  absl::Status s = strategy_->Run([&](ReplicaContext& context) -> absl::Status {
    ASSIGN_OR_RETURN(
        Tensor mine,
        context.MergeCall<int>(
            0,
            [](Strategy& strategy,
               PerReplica<int>&) -> absl::StatusOr<Mirrored<Tensor>> {
              std::vector<Tensor> copies;
              for (int r = 0; r < strategy.num_local_replicas(); ++r) {
                ASSIGN_OR_RETURN(Tensor t, Tensor::FromFloats({7.0f}, {1}));
                copies.push_back(std::move(t));
              }
              return Mirrored<Tensor>(std::move(copies));
            }));
    got[context.local_replica_id()] = mine.flat<float>()[0];
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(got, ElementsAre(7.0f, 7.0f, 7.0f));
}

TEST_F(MergeCallTest, RefusesAPerReplicaResultOfTheWrongSize) {
  std::vector<absl::Status> got(kReplicas);
  ASSERT_TRUE(strategy_
                  ->Run([&](ReplicaContext& context) {
                    got[context.local_replica_id()] =
                        context
                            .MergeCall<int>(
                                0,
                                [](Strategy&, PerReplica<int>&)
                                    -> absl::StatusOr<PerReplica<int>> {
                                  return PerReplica<int>({1, 2});
                                })
                            .status();
                    return absl::OkStatus();
                  })
                  .ok());
  for (const absl::Status& s : got) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(
        s.message(),
        HasSubstr("returned 2 per-replica values for 3 local replicas"));
  }
}

TEST_F(MergeCallTest, CopiesAnyOtherResultAndErrorToEveryReplica) {
  std::vector<absl::StatusOr<int>> sums(kReplicas, absl::UnknownError(""));
  std::vector<absl::Status> errors(kReplicas);
  ASSERT_TRUE(
      strategy_
          ->Run([&](ReplicaContext& context) {
            const int r = context.local_replica_id();
            sums[r] = context.MergeCall<int>(
                r + 1,
                [](Strategy&, PerReplica<int>& values) -> absl::StatusOr<int> {
                  int sum = 0;
                  for (int v : values.Unwrap()) sum += v;
                  return sum;
                });
            errors[r] =
                context
                    .MergeCall<int>(r,
                                    [](Strategy&, PerReplica<int>&)
                                        -> absl::StatusOr<PerReplica<int>> {
                                      return absl::NotFoundError("no values");
                                    })
                    .status();
            return absl::OkStatus();
          })
          .ok());
  for (int r = 0; r < kReplicas; ++r) {
    ASSERT_TRUE(sums[r].ok()) << sums[r].status();
    EXPECT_EQ(*sums[r], 6);
    EXPECT_EQ(errors[r], absl::NotFoundError("no values"));
  }
}

}  // namespace
}  // namespace distrt
