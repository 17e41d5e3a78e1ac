#include "runtime/distribute/strategy.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/distribute/central_storage_strategy.h"
#include "runtime/distribute/cpu_chunked_all_reduce.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/one_device_strategy.h"
#include "runtime/distribute/test_variable_options.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

class StrategyTest : public ::testing::Test {
 protected:
  std::vector<Device*> Devices(int n) {
    LocalDevicesOptions options;
    options.num_cpu_devices = n;
    options.use_gpus = false;
    absl::StatusOr<LocalDevices> devices = CreateLocalDevices(options);
    EXPECT_TRUE(devices.ok()) << devices.status();
    local_.push_back(std::make_unique<LocalDevices>(*std::move(devices)));
    return local_.back()->pointers();
  }
  std::unique_ptr<Strategy> MakeMirrored(int n) {
    return *MirroredStrategy::Create(Devices(n));
  }
  std::unique_ptr<Strategy> MakeCentral(int n) {
    return *CentralStorageStrategy::Create(Devices(n));
  }

  std::vector<std::unique_ptr<LocalDevices>> local_;
};

VariableOptions FloatVariable(std::string name, std::vector<int64_t> shape,
                              VariableAggregation aggregation,
                              VariableSynchronization synchronization =
                                  VariableSynchronization::kOnWrite) {
  VariableOptions options;
  options.spec.name = std::move(name);
  options.spec.shape = std::move(shape);
  options.aggregation = aggregation;
  options.synchronization = synchronization;
  return options;
}

std::vector<float> Values(const Tensor& t) {
  auto flat = t.flat<float>();
  return std::vector<float>(flat.begin(), flat.end());
}

TEST_F(StrategyTest, MergeCallSeedExample) {
  // Each replica computes 3 + its id; merge_fn sums them once; each replica
  // returns that sum plus its own value.
  for (int n : {1, 2, 3, 4, 8}) {
    SCOPED_TRACE(absl::StrCat(n, " replicas"));
    std::unique_ptr<Strategy> strategy = MakeMirrored(n);
    int merge_calls = 0;
    auto results = strategy->RunWithResults(
        [&](ReplicaContext& context) -> absl::StatusOr<float> {
          const float value = 3.0f + context.replica_id_in_sync_group();
          absl::StatusOr<float> sum = context.MergeCall<float>(
              value,
              [&](Strategy& cross_replica,
                  PerReplica<float>& values) -> absl::StatusOr<float> {
                ++merge_calls;
                EXPECT_EQ(values.num_replicas(),
                          cross_replica.num_replicas_in_sync());
                float total = 0;
                for (float v : values.Unwrap()) total += v;
                return total;
              });
          if (!sum.ok()) return sum.status();
          return *sum + value;
        });
    ASSERT_TRUE(results.ok()) << results.status();
    EXPECT_EQ(merge_calls, 1);
    const float sum = 3.0f * n + n * (n - 1) / 2.0f;
    for (int r = 0; r < n; ++r) EXPECT_EQ((*results)[r], sum + 3.0f + r);
  }
}

TEST_F(StrategyTest, MergeCallErrorReachesEveryReplica) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(3);
  absl::Status s = strategy->Run([](ReplicaContext& context) {
    return context
        .MergeCall<int>(1,
                        [](Strategy&, PerReplica<int>&) -> absl::StatusOr<int> {
                          return absl::AbortedError("merge failed");
                        })
        .status();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
}

TEST_F(StrategyTest, ReduceSumAndMeanOverOneToEightReplicas) {
  for (int n = 1; n <= 8; ++n) {
    std::unique_ptr<Strategy> strategy = MakeMirrored(n);
    auto per_replica = strategy->RunWithResults(
        [](ReplicaContext& context) -> absl::StatusOr<Tensor> {
          const float r = context.replica_id_in_sync_group();
          return Tensor::FromFloats({r, 2 * r + 1, -r * r}, {3});
        });
    ASSERT_TRUE(per_replica.ok()) << per_replica.status();
    double s0 = 0, s1 = 0, s2 = 0;
    for (int r = 0; r < n; ++r) {
      s0 += r;
      s1 += 2 * r + 1;
      s2 += -r * r;
    }
    absl::StatusOr<Tensor> sum = strategy->Reduce(ReduceOp::kSum, *per_replica);
    ASSERT_TRUE(sum.ok()) << sum.status();
    EXPECT_THAT(Values(*sum), ::testing::ElementsAre(s0, s1, s2));
    absl::StatusOr<Tensor> mean =
        strategy->Reduce(ReduceOp::kMean, *per_replica);
    ASSERT_TRUE(mean.ok()) << mean.status();
    EXPECT_NEAR(Values(*mean)[1], s1 / n, 1e-6);
    const PerReplica<Tensor>* both[] = {&*per_replica, &*per_replica};
    absl::StatusOr<std::vector<Tensor>> batch =
        strategy->BatchReduce(ReduceOp::kSum, both);
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(Values((*batch)[1])[2], s2);
  }
}

TEST_F(StrategyTest, AllReduceInReplicaContextAndBroadcast) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(4);
  auto results = strategy->RunWithResults(
      [](ReplicaContext& context) -> absl::StatusOr<Tensor> {
        absl::StatusOr<Tensor> value = Tensor::FromFloats(
            {1.0f * context.replica_id_in_sync_group(), 1.0f}, {2});
        if (!value.ok()) return value.status();
        RETURN_IF_ERROR(context.AllReduce(ReduceOp::kMean, *value));
        return value;
      });
  ASSERT_TRUE(results.ok()) << results.status();
  for (const Tensor& t : results->Unwrap()) {
    EXPECT_THAT(Values(t), ::testing::ElementsAre(1.5f, 1.0f));
  }
  absl::StatusOr<Mirrored<Tensor>> copies =
      strategy->Broadcast(*Tensor::FromFloats({7, 8}, {2}));
  ASSERT_TRUE(copies.ok()) << copies.status();
  EXPECT_EQ(copies->num_replicas(), 4);
  EXPECT_THAT(Values(copies->primary()), ::testing::ElementsAre(7, 8));
}

TEST_F(StrategyTest, AReplicaErrorStopsTheOthersInsteadOfHanging) {
  StrategyOptions options;
  options.collective_timeout = absl::Hours(1);  // the error, not the clock
  std::unique_ptr<Strategy> strategy =
      *MirroredStrategy::Create(Devices(4), options);
  absl::Status s = strategy->Run([](ReplicaContext& context) -> absl::Status {
    if (context.replica_id_in_sync_group() == 2) {
      return absl::InvalidArgumentError("replica 2's batch is bad");
    }
    Tensor value = *Tensor::Zeros(DType::kFloat32, {8});
    return context.AllReduce(ReduceOp::kSum, value);
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("replica 2's batch is bad"));
  // The strategy works again afterwards.
  EXPECT_TRUE(strategy
                  ->Run([](ReplicaContext& context) {
                    Tensor value = *Tensor::Zeros(DType::kFloat32, {8});
                    return context.AllReduce(ReduceOp::kSum, value);
                  })
                  .ok());
}

// Run keeps its replica threads between steps (it started one per replica
// per step): a replica finds what it left in thread-local state at its
// last step (a thread id alone could be reused by a new thread), replica 0
// runs on the caller's thread, and no replica context outlives Run.
TEST_F(StrategyTest, RunKeepsItsReplicaThreads) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(3);
  static thread_local int steps_on_this_thread = 0;
  std::vector<int> seen(3);
  std::vector<std::thread::id> ran_on(3);
  for (int step = 1; step <= 4; ++step) {
    ASSERT_TRUE(strategy
                    ->Run([&](ReplicaContext& context) {
                      const int r = context.local_replica_id();
                      seen[r] = ++steps_on_this_thread;
                      ran_on[r] = std::this_thread::get_id();
                      return absl::OkStatus();
                    })
                    .ok());
    EXPECT_THAT(seen, ::testing::Each(step)) << "step " << step;
    EXPECT_EQ(ran_on[0], std::this_thread::get_id());
  }
  EXPECT_EQ(CurrentReplicaContext(), nullptr);
}

TEST_F(StrategyTest, MirroredVariablesAggregateReplicaUpdates) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(4);
  DistributedVariable* sum = *strategy->CreateVariable(
      FloatVariable("sum", {2}, VariableAggregation::kSum));
  DistributedVariable* mean = *strategy->CreateVariable(
      FloatVariable("mean", {2}, VariableAggregation::kMean));
  DistributedVariable* none = *strategy->CreateVariable(
      FloatVariable("none", {1}, VariableAggregation::kNone));
  VariableOptions step_options;
  step_options.spec.name = "global_step";
  step_options.spec.dtype = DType::kInt64;
  step_options.aggregation = VariableAggregation::kOnlyFirstReplica;
  DistributedVariable* step = *strategy->CreateVariable(step_options);
  EXPECT_EQ(sum->num_copies(), 4);
  EXPECT_THAT(sum->DescribePlacement(), HasSubstr("mirrored"));

  absl::Status s = strategy->Run([&](ReplicaContext& context) -> absl::Status {
    const float r = context.replica_id_in_sync_group();
    for (DistributedVariable* v : {sum, mean}) {
      absl::Status s =
          context.AssignAdd(*v, *Tensor::FromFloats({r + 1, 10 * r}, {2}));
      if (!s.ok()) return s;
    }
    Tensor one = *Tensor::Create(DType::kInt64, {});
    one.flat<int64_t>()[0] = 1;
    return context.AssignAdd(*step, std::move(one));
  });
  ASSERT_TRUE(s.ok()) << s;
  for (int c = 0; c < 4; ++c) {
    EXPECT_THAT(Values(*sum->ReadCopy(c)), ::testing::ElementsAre(10, 60));
    EXPECT_THAT(Values(*mean->ReadCopy(c)), ::testing::ElementsAre(2.5, 15));
    EXPECT_EQ(step->ReadCopy(c)->flat<int64_t>()[0], 1) << "copy " << c;
  }
  EXPECT_THAT(Values(*strategy->ReadVar(*sum)), ::testing::ElementsAre(10, 60));

  absl::Status refused = strategy->Run([&](ReplicaContext& context) {
    return context.AssignAdd(*none, *Tensor::FromFloats({1}, {1}));
  });
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("aggregation NONE"));

  // Update changes every copy.
  ASSERT_TRUE(strategy
                  ->Update(*sum,
                           [](Tensor& value) {
                             for (float& v : value.flat<float>()) v *= -1;
                             return absl::OkStatus();
                           })
                  .ok());
  for (int c = 0; c < 4; ++c) {
    EXPECT_THAT(Values(*sum->ReadCopy(c)), ::testing::ElementsAre(-10, -60));
  }
}

TEST_F(StrategyTest, SyncOnReadVariablesCombineOnlyWhenRead) {
  for (bool central : {false, true}) {
    std::unique_ptr<Strategy> strategy =
        central ? MakeCentral(3) : MakeMirrored(3);
    SCOPED_TRACE(strategy->name());
    DistributedVariable* total = *strategy->CreateVariable(
        FloatVariable("total", {1}, VariableAggregation::kSum,
                      VariableSynchronization::kOnRead));
    DistributedVariable* average = *strategy->CreateVariable(
        FloatVariable("average", {1}, VariableAggregation::kMean,
                      VariableSynchronization::kOnRead));
    EXPECT_EQ(total->num_copies(), 3);
    absl::Status s =
        strategy->Run([&](ReplicaContext& context) -> absl::Status {
          const float r = context.replica_id_in_sync_group();
          // No collective: a replica that skips its update is fine.
          for (DistributedVariable* v : {total, average}) {
            RETURN_IF_ERROR(
                context.AssignAdd(*v, *Tensor::FromFloats({r + 1}, {1})));
          }
          return absl::OkStatus();
        });
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Values(*total->ReadCopy(1))[0], 2);
    EXPECT_EQ(Values(*strategy->ReadVar(*total))[0], 6);
    EXPECT_EQ(Values(*strategy->ReadVar(*average))[0], 2);
  }
}

TEST_F(StrategyTest, CentralStorageKeepsOneCopyUpdatedOnce) {
  std::unique_ptr<Strategy> strategy = MakeCentral(4);
  DistributedVariable* w = *strategy->CreateVariable(
      FloatVariable("w", {3}, VariableAggregation::kSum));
  EXPECT_EQ(w->num_copies(), 1);
  EXPECT_THAT(w->DescribePlacement(), HasSubstr("host"));
  absl::Status s = strategy->Run([&](ReplicaContext& context) -> absl::Status {
    RETURN_IF_ERROR(context.AssignAdd(*w, *Tensor::FromFloats({1, 2, 3}, {3})));
    // After the update every replica reads the one updated copy.
    ASSIGN_OR_RETURN(Tensor seen, context.Read(*w));
    if (Values(seen) != std::vector<float>{4, 8, 12}) {
      return absl::InternalError("replica read a stale value");
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(StrategyTest, ApplyGradientKeepsMirrorsIdentical) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(4);
  VariableOptions options = FloatVariable("w", {4}, VariableAggregation::kSum);
  options.spec.initializer.kind = InitializerSpec::Kind::kUniform;
  options.spec.initializer.seed = 7;
  options.spec.optimizer.learning_rate = 0.5f;
  DistributedVariable* w = *strategy->CreateVariable(options);
  std::vector<float> before = Values(*w->ReadCopy(0));
  absl::Status s = strategy->Run([&](ReplicaContext& context) -> absl::Status {
    const float r = context.replica_id_in_sync_group();
    Tensor grad = *Tensor::FromFloats({r, 1, 0, -r}, {4});
    RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, grad));
    return context.ApplyGradient(*w, grad.flat<float>(),
                                 GradientAggregation::kAlreadyAggregated);
  });
  ASSERT_TRUE(s.ok()) << s;
  // SGD: w -= 0.5 * (sum of gradients) = 0.5 * {6, 4, 0, -6}.
  const std::vector<float> want = {before[0] - 3, before[1] - 2, before[2],
                                   before[3] + 3};
  for (int c = 0; c < 4; ++c) {
    std::vector<float> got = Values(*w->ReadCopy(c));
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(got[i], want[i]);
  }
}

// Three float32 variables (one with Adam, whose update depends on how often
// it ran) with the same initial values under `prefix`.
std::vector<DistributedVariable*> MakeVariables(Strategy& strategy,
                                                const std::string& prefix) {
  std::vector<DistributedVariable*> made;
  const std::vector<std::vector<int64_t>> shapes = {{3}, {2, 2}, {1}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    VariableOptions options = FloatVariable(
        absl::StrCat(prefix, "/", i), shapes[i], VariableAggregation::kSum);
    options.spec.initializer.kind = InitializerSpec::Kind::kUniform;
    options.spec.initializer.seed = 11 + i;
    options.spec.optimizer.learning_rate = 0.5f;
    if (i == 1) options.spec.optimizer.kind = OptimizerKind::kAdam;
    made.push_back(*strategy.CreateVariable(options));
  }
  return made;
}

// The same gradients on every replica, as after an all-reduce.
std::vector<std::vector<float>> Gradients(
    const std::vector<DistributedVariable*>& variables) {
  std::vector<std::vector<float>> grads;
  for (size_t i = 0; i < variables.size(); ++i) {
    std::vector<float>& g = grads.emplace_back();
    for (int64_t k = 0; k < variables[i]->ReadCopy(0)->num_elements(); ++k) {
      g.push_back(0.25f * (i + 1) - 0.1f * k);
    }
  }
  return grads;
}

TEST_F(StrategyTest, ReadManyAndApplyGradientsMatchOneAtATime) {
  for (bool central : {false, true}) {
    for (int n = 1; n <= 3; ++n) {
      std::unique_ptr<Strategy> strategy =
          central ? MakeCentral(n) : MakeMirrored(n);
      SCOPED_TRACE(absl::StrCat(strategy->name(), " x", n));
      // `batched` goes through ReadMany / ApplyGradients, `single` through
      // Read / ApplyGradient; they start equal and get the same gradients.
      std::vector<DistributedVariable*> batched =
          MakeVariables(*strategy, "batched");
      std::vector<DistributedVariable*> single =
          MakeVariables(*strategy, "single");
      // A sync-on-read variable: one copy per replica whatever the others.
      DistributedVariable* metric = *strategy->CreateVariable(
          FloatVariable("metric", {2}, VariableAggregation::kSum,
                        VariableSynchronization::kOnRead));
      const std::vector<std::vector<float>> grads = Gradients(batched);
      std::vector<absl::Span<const float>> grad_spans(grads.begin(),
                                                      grads.end());
      std::vector<std::vector<float>> before;
      for (DistributedVariable* v : batched) {
        before.push_back(Values(*v->ReadCopy(0)));
      }

      // Compares ReadMany of `many` with Read of each of `each`.
      auto same_as_read =
          [](ReplicaContext& context,
             std::vector<const DistributedVariable*> many,
             std::vector<const DistributedVariable*> each) -> absl::Status {
        ASSIGN_OR_RETURN(std::vector<Tensor> read, context.ReadMany(many));
        if (read.size() != each.size()) {
          return absl::InternalError("ReadMany gave a wrong count");
        }
        for (size_t i = 0; i < each.size(); ++i) {
          ASSIGN_OR_RETURN(Tensor one, context.Read(*each[i]));
          if (Values((read)[i]) != Values(one)) {
            return absl::InternalError(
                absl::StrCat("replica ", context.replica_id_in_sync_group(),
                             " read ", each[i]->name(), " differently"));
          }
        }
        return absl::OkStatus();
      };
      absl::Status s =
          strategy->Run([&](ReplicaContext& context) -> absl::Status {
            const float r = context.replica_id_in_sync_group();
            // Each replica's own metric copy differs, to see the copies.
            RETURN_IF_ERROR(
                context.AssignAdd(*metric, *Tensor::FromFloats({r, -r}, {2})));
            std::vector<const DistributedVariable*> all(batched.begin(),
                                                        batched.end());
            all.insert(all.begin() + 1, metric);
            RETURN_IF_ERROR(same_as_read(context, all, all));
            // Under central storage the replicas share one copy: nobody
            // updates it while another still compares its reads.
            RETURN_IF_ERROR(context.Barrier());
            // The same gradients on every replica: already aggregated.
            RETURN_IF_ERROR(context.ApplyGradients(
                batched, grad_spans, {}, nullptr,
                GradientAggregation::kAlreadyAggregated));
            for (size_t i = 0; i < single.size(); ++i) {
              RETURN_IF_ERROR(context.ApplyGradient(
                  *single[i], grad_spans[i],
                  GradientAggregation::kAlreadyAggregated));
            }
            // After ApplyGradients every replica sees every update.
            return same_as_read(context,
                                std::vector<const DistributedVariable*>(
                                    batched.begin(), batched.end()),
                                std::vector<const DistributedVariable*>(
                                    single.begin(), single.end()));
          });
      ASSERT_TRUE(s.ok()) << s;
      for (size_t i = 0; i < batched.size(); ++i) {
        for (int c = 0; c < batched[i]->num_copies(); ++c) {
          EXPECT_EQ(Values(*batched[i]->ReadCopy(c)),
                    Values(*single[i]->ReadCopy(c)))
              << batched[i]->name() << " copy " << c;
        }
        if (i == 1) continue;  // Adam
        // SGD, applied once to each copy: w -= 0.5 * grad.
        std::vector<float> got = Values(*batched[i]->ReadCopy(0));
        for (size_t k = 0; k < got.size(); ++k) {
          EXPECT_FLOAT_EQ(got[k], before[i][k] - 0.5f * grads[i][k]);
        }
      }
    }
  }
}

// An add that goes with ApplyGradients is AssignAdd's: aggregated as the
// variable says, made after the gradients, the value it left returned to
// the replicas that made it.
TEST_F(StrategyTest, ApplyGradientsWithAnAddActsAsAssignAdd) {
  for (bool central : {false, true}) {
    std::unique_ptr<Strategy> strategy =
        central ? MakeCentral(3) : MakeMirrored(3);
    SCOPED_TRACE(strategy->name());
    std::vector<DistributedVariable*> variables = MakeVariables(*strategy, "v");
    DistributedVariable* step = *strategy->CreateVariable(GlobalStepVariable());
    const std::vector<std::vector<float>> grads = Gradients(variables);
    const std::vector<absl::Span<const float>> grad_spans(grads.begin(),
                                                          grads.end());
    std::vector<std::vector<float>> before;
    for (DistributedVariable* v : variables) {
      before.push_back(Values(*strategy->ReadVar(*v)));
    }
    std::vector<Tensor> after(3);
    for (int round = 1; round <= 2; ++round) {
      absl::Status s = strategy->Run([&](ReplicaContext& context) {
        Tensor one = *Tensor::Create(DType::kInt64, {});
        one.flat<int64_t>()[0] = 1;
        ReplicaContext::AddUpdate add = {step, std::move(one),
                                         &after[context.local_replica_id()]};
        return context.ApplyGradients(variables, grad_spans, {}, &add);
      });
      ASSERT_TRUE(s.ok()) << s;
      // Once per step, not per replica; replica 0 always made the add.
      EXPECT_EQ(strategy->ReadVar(*step)->flat<int64_t>()[0], round);
      ASSERT_EQ(after[0].num_elements(), 1);
      EXPECT_EQ(after[0].flat<int64_t>()[0], round);
      for (int r = 1; r < 3; ++r) {
        // Mirrored: each replica adds to its own copy; central storage:
        // the others share replica 0's and get nothing back.
        EXPECT_EQ(after[r].num_elements(), central ? 0 : 1) << r;
      }
    }
    for (size_t i = 0; i < variables.size(); ++i) {
      EXPECT_NE(Values(*strategy->ReadVar(*variables[i])), before[i]) << i;
    }

    // A delta that does not fit the variable: the variable's own error.
    absl::Status wrong = strategy->Run([&](ReplicaContext& context) {
      ReplicaContext::AddUpdate add = {
          step, *Tensor::Create(DType::kInt64, {2}), nullptr};
      return context.ApplyGradients({}, {}, {}, &add);
    });
    EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument) << wrong;
    EXPECT_THAT(wrong.message(), HasSubstr("global_step"));
  }
}

TEST_F(StrategyTest, ApplyGradientsErrsAsApplyGradient) {
  for (bool central : {false, true}) {
    std::unique_ptr<Strategy> strategy =
        central ? MakeCentral(3) : MakeMirrored(3);
    SCOPED_TRACE(strategy->name());
    std::vector<DistributedVariable*> variables = MakeVariables(*strategy, "v");
    const std::vector<float> short_grad = {1.0f};  // "v/0" has 3 elements
    absl::Status one = strategy->Run([&](ReplicaContext& context) {
      return context.ApplyGradient(*variables[0], short_grad);
    });
    ASSERT_FALSE(one.ok());
    const std::vector<absl::Span<const float>> grads = {short_grad};
    absl::Status many = strategy->Run([&](ReplicaContext& context) {
      return context.ApplyGradients(absl::MakeConstSpan(variables).first(1),
                                    grads);
    });
    EXPECT_EQ(many, one);

    // Counts that differ: refused on every replica, nothing waits.
    absl::Status counts = strategy->Run([&](ReplicaContext& context) {
      return context.ApplyGradients(variables, grads);
    });
    EXPECT_EQ(counts.code(), absl::StatusCode::kInvalidArgument) << counts;
    EXPECT_THAT(counts.message(), HasSubstr("3 variables but 1 gradients"));

    // Nothing to apply, nothing to wait for.
    EXPECT_TRUE(strategy
                    ->Run([&](ReplicaContext& context) {
                      return context.ApplyGradients({}, {});
                    })
                    .ok());
  }
}

TEST_F(StrategyTest, CreatingAVariableAgain) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(2);
  VariableOptions options = FloatVariable("v", {2}, VariableAggregation::kSum);
  DistributedVariable* first = *strategy->CreateVariable(options);
  EXPECT_EQ(*strategy->CreateVariable(options), first);
  options.aggregation = VariableAggregation::kMean;
  absl::StatusOr<DistributedVariable*> other =
      strategy->CreateVariable(options);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(other.status().message(), HasSubstr("aggregation SUM vs MEAN"));
  options.spec.name = "";
  EXPECT_EQ(strategy->CreateVariable(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

Tensor Int64s(std::vector<int64_t> values) {
  Tensor t =
      *Tensor::Create(DType::kInt64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.flat<int64_t>().begin());
  return t;
}

// Reduce, BatchReduce and AllReduce take int64 as well as float32, exactly;
// Reduce and Broadcast take destinations (TF's reduce_to, broadcast_to).
TEST_F(StrategyTest, ReducesInt64AndToDestinations) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(3);
  std::vector<Tensor> ints;
  for (int64_t r = 0; r < 3; ++r) ints.push_back(Int64s({r, int64_t{1} << 40}));
  PerReplica<Tensor> per_replica(std::move(ints));
  Tensor sum = *strategy->Reduce(ReduceOp::kSum, per_replica);
  EXPECT_EQ(sum.dtype(), DType::kInt64);
  EXPECT_THAT(std::vector<int64_t>(sum.flat<int64_t>().begin(),
                                   sum.flat<int64_t>().end()),
              ::testing::ElementsAre(3, 3 * (int64_t{1} << 40)));
  Tensor mean =
      *strategy->Reduce(ReduceOp::kMean, per_replica, strategy->devices()[2]);
  EXPECT_EQ(mean.flat<int64_t>()[0], 1);
  EXPECT_EQ(mean.flat<int64_t>()[1], int64_t{1} << 40);

  std::vector<Tensor> floats;
  for (int r = 0; r < 3; ++r)
    floats.push_back(*Tensor::FromFloats({1.5f}, {1}));
  PerReplica<Tensor> float_values(std::move(floats));
  std::vector<Tensor> both = *strategy->BatchReduce(
      ReduceOp::kSum, {&float_values, &per_replica, &float_values});
  ASSERT_EQ(both.size(), 3u);
  EXPECT_EQ(both[0].flat<float>()[0], 4.5f);
  EXPECT_EQ(both[1].flat<int64_t>()[0], 3);
  EXPECT_EQ(both[2].flat<float>()[0], 4.5f);

  std::vector<Device*> two = {strategy->devices()[1], strategy->devices()[2]};
  Mirrored<Tensor> copies = *strategy->Broadcast(Int64s({7, 8}), two);
  ASSERT_EQ(copies.num_replicas(), 2);
  EXPECT_EQ(copies[1].flat<int64_t>()[1], 8);

  ASSERT_TRUE(
      strategy
          ->Run([](ReplicaContext& context) -> absl::Status {
            Tensor value = Int64s({context.replica_id_in_sync_group(), 5});
            RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, value));
            if (value.flat<int64_t>()[0] != 3 ||
                value.flat<int64_t>()[1] != 15) {
              return absl::InternalError("wrong int64 all-reduce");
            }
            return absl::OkStatus();
          })
          .ok());
}

Tensor Float64s(std::vector<double> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return *Tensor::FromValues<double>(values, {n});
}

// float64 values reduce in double precision (1 + 1e-12 is lost in float32),
// alone and beside float32 and int64 values, and broadcast; variables stay
// float32 or int64.
TEST_F(StrategyTest, ReducesFloat64InDoublePrecision) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(3);
  std::vector<Tensor> doubles;
  for (int r = 0; r < 3; ++r)
    doubles.push_back(Float64s({1.0 + 1e-12, static_cast<double>(r)}));
  PerReplica<Tensor> per_replica(std::move(doubles));
  Tensor sum = *strategy->Reduce(ReduceOp::kSum, per_replica);
  ASSERT_EQ(sum.dtype(), DType::kFloat64);
  EXPECT_EQ(sum.flat<double>()[0], 3 * (1.0 + 1e-12));
  EXPECT_NE(sum.flat<double>()[0], 3.0);
  EXPECT_EQ(sum.flat<double>()[1], 3.0);
  Tensor mean =
      *strategy->Reduce(ReduceOp::kMean, per_replica, strategy->devices()[1]);
  EXPECT_DOUBLE_EQ(mean.flat<double>()[1], 1.0);

  std::vector<Tensor> ints;
  for (int64_t r = 0; r < 3; ++r) ints.push_back(Int64s({r}));
  PerReplica<Tensor> int_values(std::move(ints));
  std::vector<Tensor> floats;
  for (int r = 0; r < 3; ++r) floats.push_back(*Tensor::FromFloats({2}, {1}));
  PerReplica<Tensor> float_values(std::move(floats));
  std::vector<Tensor> all = *strategy->BatchReduce(
      ReduceOp::kSum, {&per_replica, &float_values, &int_values});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].flat<double>()[1], 3.0);
  EXPECT_EQ(all[1].flat<float>()[0], 6.0f);
  EXPECT_EQ(all[2].flat<int64_t>()[0], 3);

  Mirrored<Tensor> copies = *strategy->Broadcast(Float64s({0.1, 0.2}));
  ASSERT_EQ(copies.num_replicas(), 3);
  EXPECT_EQ(copies[2].flat<double>()[0], 0.1);

  ASSERT_TRUE(strategy
                  ->Run([](ReplicaContext& context) -> absl::Status {
                    Tensor value = Float64s(
                        {1e-12, static_cast<double>(
                                    context.replica_id_in_sync_group())});
                    RETURN_IF_ERROR(context.AllReduce(ReduceOp::kMean, value));
                    if (value.dtype() != DType::kFloat64 ||
                        value.flat<double>()[0] != 3e-12 / 3 ||
                        value.flat<double>()[1] != 1.0) {
                      return absl::InternalError("wrong float64 all-reduce");
                    }
                    return absl::OkStatus();
                  })
                  .ok());

  // A mix of dtypes across replicas is refused, naming both.
  std::vector<Tensor> mixed;
  mixed.push_back(Float64s({1}));
  mixed.push_back(Int64s({1}));
  mixed.push_back(Float64s({1}));
  absl::StatusOr<Tensor> refused =
      strategy->Reduce(ReduceOp::kSum, PerReplica<Tensor>(std::move(mixed)));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("replica 1 has int64"));

  VariableOptions variable = SumVariable("d", {2});
  variable.spec.dtype = DType::kFloat64;
  absl::StatusOr<DistributedVariable*> d = strategy->CreateVariable(variable);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("float32 or int64"));
  DistributedVariable* w = *strategy->CreateVariable(SumVariable("w", {2}));
  absl::Status sub = strategy->AssignSub(*w, Float64s({1, 2}));
  EXPECT_EQ(sub.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sub.message(), HasSubstr("the value is float64"));
  absl::Status assign = strategy->Assign(*w, Float64s({1, 2}));
  EXPECT_EQ(assign.code(), absl::StatusCode::kInvalidArgument);
}

// Cross-replica assigns take values from any device's memory; a SUM
// sync-on-read variable refuses them (ReadVar sums its copies).
TEST_F(StrategyTest, CrossReplicaAssignsWriteEveryCopyOnce) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(2);
  DistributedVariable* w = *strategy->CreateVariable(SumVariable("w", {2}));
  ASSERT_TRUE(strategy->Assign(*w, *Tensor::FromFloats({1, 2}, {2})).ok());
  ASSERT_TRUE(
      strategy->AssignSub(*w, *Tensor::FromFloats({0.5f, 0.5f}, {2})).ok());
  for (int c = 0; c < w->num_copies(); ++c) {
    Tensor copy = *w->ReadCopy(c);
    EXPECT_EQ(copy.flat<float>()[0], 0.5f);
    EXPECT_EQ(copy.flat<float>()[1], 1.5f);
  }
  VariableOptions metric = SumVariable("metric", {1});
  metric.synchronization = VariableSynchronization::kOnRead;
  DistributedVariable* m = *strategy->CreateVariable(metric);
  absl::Status s = strategy->AssignAdd(*m, *Tensor::FromFloats({1}, {1}));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("sync-on-read with aggregation SUM"));
  EXPECT_EQ(strategy->ReadVar(*m)->flat<float>()[0], 0);
}

// A CrossDeviceOps of the user's own, as TF's
// MirroredStrategy(cross_device_ops=...): here the chunked CPU all-reduce
// that counts its all-reduces.
class CountingAllReduce : public CpuChunkedAllReduce {
 public:
  std::string name() const override { return "counting_all_reduce"; }
  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override {
    calls_.fetch_add(1);
    return CpuChunkedAllReduce::AllReduce(group, replica, op, value);
  }
  int calls() const { return calls_.load(); }

 private:
  std::atomic<int> calls_{0};
};

TEST_F(StrategyTest, TakesTheUsersCrossDeviceOps) {
  auto ops = std::make_shared<CountingAllReduce>();
  StrategyOptions options;
  options.cross_device_ops_object = ops;
  std::unique_ptr<Strategy> strategy =
      *MirroredStrategy::Create(Devices(3), options);
  EXPECT_EQ(strategy->cross_device_ops().name(), "counting_all_reduce");
  ASSERT_TRUE(
      strategy
          ->Run([](ReplicaContext& context) -> absl::Status {
            ASSIGN_OR_RETURN(
                Tensor value,
                Tensor::FromFloats({1.0f * context.local_replica_id()}, {1}));
            RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, value));
            if (value.flat<float>()[0] != 3.0f) {
              return absl::InternalError("wrong sum");
            }
            return absl::OkStatus();
          })
          .ok());
  EXPECT_EQ(ops->calls(), 3);

  options.cross_device_ops = "nccl";
  absl::StatusOr<std::unique_ptr<MirroredStrategy>> both =
      MirroredStrategy::Create(Devices(3), options);
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(both.status().message(), HasSubstr("give one"));
}

// As TF raises: cross-replica methods called from a replica function are
// refused, naming the method, on every replica, without waiting; from a
// MergeCall's merge_fn they are allowed.
TEST_F(StrategyTest, CrossReplicaMethodsAreRefusedInReplicaContext) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(2);
  DistributedVariable* w = *strategy->CreateVariable(SumVariable("w", {2}));
  std::vector<std::string> refused(2);
  absl::Status s = strategy->Run([&](ReplicaContext& context) -> absl::Status {
    std::string& mine = refused[context.local_replica_id()];
    Tensor value = *Tensor::FromFloats({1, 2}, {2});
    std::vector<Tensor> values;
    values.push_back(*value.Clone());
    values.push_back(*value.Clone());
    const std::vector<std::pair<std::string, absl::Status>> calls = {
        {"Reduce",
         strategy->Reduce(ReduceOp::kSum, PerReplica<Tensor>(std::move(values)))
             .status()},
        {"Broadcast", strategy->Broadcast(value).status()},
        {"ReadVar", strategy->ReadVar(*w).status()},
        {"AssignAdd", strategy->AssignAdd(*w, value)},
        {"ApplyGradient", strategy->ApplyGradient(*w, value.flat<float>())},
        {"CreateVariable",
         strategy->CreateVariable(SumVariable("v", {1})).status()},
    };
    for (const auto& [method, status] : calls) {
      if (status.code() == absl::StatusCode::kFailedPrecondition &&
          absl::StrContains(status.message(), method + " is a cross-replica")) {
        absl::StrAppend(&mine, method, " ");
      }
    }
    // In merge_fn the thread is in cross-replica context again, but a Run
    // there would wait for the Run in progress: refused.
    absl::StatusOr<int> merged = context.MergeCall<int>(
        1, [&](Strategy& cross, PerReplica<int>&) -> absl::StatusOr<int> {
          RETURN_IF_ERROR(cross.ReadVar(*w).status());
          absl::Status nested =
              cross.Run([](ReplicaContext&) { return absl::OkStatus(); });
          if (nested.code() != absl::StatusCode::kFailedPrecondition) {
            return absl::InternalError(
                absl::StrCat("Run in merge_fn: ", nested.ToString()));
          }
          return 0;
        });
    return merged.status();
  });
  ASSERT_TRUE(s.ok()) << s;
  const std::string all =
      "Reduce Broadcast ReadVar AssignAdd ApplyGradient CreateVariable ";
  EXPECT_EQ(refused[0], all);
  EXPECT_EQ(refused[1], all);
  // Nothing was applied.
  EXPECT_EQ(strategy->ReadVar(*w)->flat<float>()[0], 0);
}

// Workers that read their own input without computing in sync (as under
// ParameterServerStrategy) each get a pipeline; the batch splits over this
// worker's replicas only.
TEST_F(StrategyTest, InputContextHasOnePipelinePerInputWorker) {
  std::unique_ptr<Strategy> alone = MakeMirrored(4);
  InputContext context = alone->input_context();
  EXPECT_EQ(context.num_input_pipelines, 1);
  EXPECT_EQ(context.input_pipeline_id, 0);
  EXPECT_EQ(context.num_replicas_in_sync, 4);

  StrategyOptions options;
  options.input_workers.count = 3;
  options.input_workers.index = 2;
  std::unique_ptr<Strategy> worker =
      *CentralStorageStrategy::Create(Devices(2), options);
  context = worker->input_context();
  EXPECT_EQ(context.num_input_pipelines, 3);
  EXPECT_EQ(context.input_pipeline_id, 2);
  EXPECT_EQ(context.num_replicas_in_sync, 2);
  EXPECT_EQ(*context.GetPerReplicaBatchSize(64), 32);
}

TEST_F(StrategyTest, DescribesItselfAndTheChiefFlags) {
  std::unique_ptr<Strategy> mirrored = MakeMirrored(4);
  EXPECT_EQ(mirrored->Describe(),
            "MirroredStrategy: 4 replicas on CPU:0..CPU:3, cross-device ops "
            "cpu_all_reduce");
  EXPECT_TRUE(mirrored->should_checkpoint());
  StrategyOptions worker;
  worker.is_chief = false;
  worker.cross_device_ops = "hierarchical_copy";
  std::unique_ptr<Strategy> central =
      *CentralStorageStrategy::Create(Devices(2), worker);
  EXPECT_FALSE(central->should_checkpoint());
  EXPECT_FALSE(central->should_save_summary());
  EXPECT_EQ(central->cross_device_ops().name(), "hierarchical_copy");
  worker.cross_device_ops = "ring";
  EXPECT_EQ(MirroredStrategy::Create(Devices(2), worker).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MirroredStrategy::Create({}).status().code(),
            absl::StatusCode::kInvalidArgument);

  Strategy& fallback = DefaultStrategy();
  EXPECT_EQ(fallback.name(), "OneDeviceStrategy");
  EXPECT_EQ(fallback.num_replicas_in_sync(), 1);
  EXPECT_EQ(&fallback, &DefaultStrategy());
}

// Tensors are move-only: a PerReplica of them cannot come from a braced
// list.
template <typename... Tensors>
PerReplica<Tensor> PerReplicaOf(Tensors... tensors) {
  std::vector<Tensor> values;
  (values.push_back(std::move(tensors)), ...);
  return PerReplica<Tensor>(std::move(values));
}

// TF's strategy.run(fn, args): replica r gets component r of a PerReplica or
// Mirrored argument, the others as they are.
TEST_F(StrategyTest, RunUnwrapsDistributedArguments) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(3);
  PerReplica<Tensor> inputs = PerReplicaOf(*Tensor::FromFloats({1, 2}, {2}),
                                           *Tensor::FromFloats({3, 4}, {2}),
                                           *Tensor::FromFloats({5, 6}, {2}));
  const Mirrored<int> scale({10, 10, 10});
  const int offset = 7;
  std::vector<float> seen(3, 0);
  absl::Status s = strategy->Run(
      [&](ReplicaContext& context, Tensor& input, const int& k,
          const int& plus) -> absl::Status {
        if (&plus != &offset) return absl::InternalError("offset was copied");
        seen[context.local_replica_id()] = input.flat<float>()[1] * k + plus;
        return absl::OkStatus();
      },
      inputs, scale, offset);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(seen, ::testing::ElementsAre(27, 47, 67));

  // A fn returning values: every replica's, as a PerReplica.
  absl::StatusOr<PerReplica<float>> sums = strategy->Run(
      [](ReplicaContext& context,
         const Tensor& input) -> absl::StatusOr<float> {
        return input.flat<float>()[0] + input.flat<float>()[1];
      },
      inputs);
  ASSERT_TRUE(sums.ok()) << sums.status();
  EXPECT_THAT(sums->Unwrap(), ::testing::ElementsAre(3, 7, 11));

  // Values that are the same on every replica, as a Mirrored.
  absl::StatusOr<Mirrored<float>> total = strategy->RunMirrored(
      [](ReplicaContext& context, Tensor& input) -> absl::StatusOr<float> {
        RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, input));
        return input.flat<float>()[0];
      },
      inputs);
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ(total->primary(), 9);
  EXPECT_THAT(total->Unwrap(), ::testing::Each(9));
}

TEST_F(StrategyTest, RunRefusesDistributedArgumentsOfTheWrongSize) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(3);
  std::atomic<int> calls{0};
  auto count = [&](ReplicaContext&, int, int) {
    ++calls;
    return absl::OkStatus();
  };
  absl::Status s = strategy->Run(count, 1, PerReplica<int>({1, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("argument 1"));
  EXPECT_THAT(s.message(), HasSubstr("PerReplica of 2 values"));
  EXPECT_THAT(s.message(), HasSubstr("3 local replicas"));
  absl::StatusOr<PerReplica<int>> results = strategy->RunWithResults(
      [](ReplicaContext&, int v) -> absl::StatusOr<int> { return v; },
      Mirrored<int>({1, 2, 3, 4}));
  EXPECT_EQ(results.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(results.status().message(), HasSubstr("Mirrored of 4 values"));
  EXPECT_EQ(calls, 0);
}

std::vector<float> FloatsOf(const Tensor& t) {
  auto flat = t.flat<float>();
  return std::vector<float>(flat.begin(), flat.end());
}

// TF's reduce(op, value, axis): along the axis on each replica, then over
// the replicas; MEAN divides by the global count along the axis.
TEST_F(StrategyTest, ReduceAlongAnAxis) {
  std::unique_ptr<Strategy> strategy = MakeMirrored(2);
  // Per-example losses; replica 1's batch is short.
  PerReplica<Tensor> losses = PerReplicaOf(*Tensor::FromFloats({1, 2, 3}, {3}),
                                           *Tensor::FromFloats({4, 10}, {2}));
  absl::StatusOr<Tensor> sum = strategy->Reduce(ReduceOp::kSum, losses, 0);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->rank(), 0);
  EXPECT_EQ(sum->flat<float>()[0], 20);
  absl::StatusOr<Tensor> mean = strategy->Reduce(
      ReduceOp::kMean, losses, /*axis=*/0, strategy->devices()[1]);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ(mean->flat<float>()[0], 4);  // 20 / 5 examples, not / 2 replicas

  // A [2, 3] tensor per replica along axis 1 (or -1): a [2] result.
  PerReplica<Tensor> rows =
      PerReplicaOf(*Tensor::FromFloats({1, 2, 3, 4, 5, 6}, {2, 3}),
                   *Tensor::FromFloats({1, 1, 1, 2, 2, 2}, {2, 3}));
  for (int axis : {1, -1}) {
    absl::StatusOr<Tensor> r = strategy->Reduce(ReduceOp::kMean, rows, axis);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->shape(), std::vector<int64_t>{2});
    EXPECT_THAT(FloatsOf(*r), ::testing::ElementsAre(9.0f / 6, 21.0f / 6));
  }
  absl::StatusOr<Tensor> columns = strategy->Reduce(ReduceOp::kSum, rows, 0);
  ASSERT_TRUE(columns.ok()) << columns.status();
  EXPECT_THAT(FloatsOf(*columns), ::testing::ElementsAre(8, 10, 12));

  // int64: exact, MEAN rounding toward zero.
  PerReplica<Tensor> counts =
      PerReplicaOf(*Tensor::FromValues<int64_t>({5, 6}, {2}),
                   *Tensor::FromValues<int64_t>({-30}, {1}));
  EXPECT_EQ(strategy->Reduce(ReduceOp::kSum, counts, 0)->flat<int64_t>()[0],
            -19);
  EXPECT_EQ(strategy->Reduce(ReduceOp::kMean, counts, 0)->flat<int64_t>()[0],
            -6);

  // Errors name the axis and the tensors.
  absl::Status out_of_range =
      strategy->Reduce(ReduceOp::kSum, losses, 1).status();
  EXPECT_EQ(out_of_range.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out_of_range.message(), HasSubstr("axis 1"));
  PerReplica<Tensor> mismatched =
      PerReplicaOf(*Tensor::FromFloats({1, 2}, {1, 2}),
                   *Tensor::FromFloats({1, 2, 3}, {1, 3}));
  absl::Status mismatch =
      strategy->Reduce(ReduceOp::kSum, mismatched, 0).status();
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.message(), HasSubstr("replica 1"));
  PerReplica<Tensor> empty =
      PerReplicaOf(*Tensor::FromFloats({}, {0}), *Tensor::FromFloats({}, {0}));
  EXPECT_EQ(strategy->Reduce(ReduceOp::kSum, empty, 0)->flat<float>()[0], 0);
  EXPECT_EQ(strategy->Reduce(ReduceOp::kMean, empty, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt
