#include "runtime/distribute/distribution_context.h"

#include <atomic>
#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/one_device_strategy.h"
#include "runtime/distribute/test_variable_options.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

class DistributionContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalDevicesOptions options;
    options.num_cpu_devices = 2;
    options.use_gpus = false;
    absl::StatusOr<LocalDevices> devices = CreateLocalDevices(options);
    ASSERT_TRUE(devices.ok()) << devices.status();
    devices_ = *std::move(devices);
    mirrored_ = *MirroredStrategy::Create(devices_.pointers());
    one_ = *OneDeviceStrategy::Create(devices_.pointers()[0]);
  }

  LocalDevices devices_;
  std::unique_ptr<Strategy> mirrored_;
  std::unique_ptr<Strategy> one_;
};

TEST_F(DistributionContextTest, TheDefaultStrategyWhenNoneIsSet) {
  EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
  EXPECT_FALSE(HasStrategy());
  EXPECT_FALSE(InCrossReplicaContext());
  // As in TF, the default replica context: replica 0 of 1 of the default
  // strategy.
  ReplicaContext* context = GetReplicaContext();
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(context, &DefaultReplicaContext());
  EXPECT_EQ(&context->strategy(), &DefaultStrategy());
  EXPECT_EQ(context->replica_id_in_sync_group(), 0);
  EXPECT_EQ(context->num_replicas_in_sync(), 1);
  EXPECT_EQ(context->local_replica_id(), 0);
}

TEST_F(DistributionContextTest, TheDefaultReplicaContextsCollectives) {
  ReplicaContext& context = *GetReplicaContext();
  Tensor value = *Tensor::FromFloats({1, 2}, {2});
  ASSERT_TRUE(context.AllReduce(ReduceOp::kSum, value).ok());
  EXPECT_EQ(value.flat<float>()[0], 1);
  EXPECT_EQ(value.flat<float>()[1], 2);
  Tensor count = *Tensor::FromValues<int64_t>({5}, {});
  ASSERT_TRUE(context.AllReduce(ReduceOp::kMean, count).ok());
  EXPECT_EQ(count.flat<int64_t>()[0], 5);
  // merge_fn runs once, with the one value, in cross-replica context.
  absl::StatusOr<int> merged = context.MergeCall(
      3,
      [](Strategy& strategy, PerReplica<int>& values) -> absl::StatusOr<int> {
        if (GetReplicaContext() != nullptr || !InCrossReplicaContext() ||
            &strategy != &DefaultStrategy()) {
          return absl::InternalError("merge_fn not in cross-replica context");
        }
        return values.num_replicas() * 10 + values[0];
      });
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(*merged, 13);
  EXPECT_EQ(GetReplicaContext(), &context);
  // Each thread has its own.
  ReplicaContext* other = nullptr;
  std::thread([&] { other = GetReplicaContext(); }).join();
  EXPECT_NE(other, nullptr);
  EXPECT_NE(other, &context);
}

TEST_F(DistributionContextTest, TheSameStrategysScopesNest) {
  {
    absl::StatusOr<Strategy::Scope> outer = mirrored_->scope();
    ASSERT_TRUE(outer.ok()) << outer.status();
    EXPECT_EQ(&GetStrategy(), mirrored_.get());
    EXPECT_TRUE(HasStrategy());
    EXPECT_TRUE(InCrossReplicaContext());
    EXPECT_EQ(GetReplicaContext(), nullptr);
    {
      absl::StatusOr<Strategy::Scope> inner = mirrored_->scope();
      ASSERT_TRUE(inner.ok()) << inner.status();
      EXPECT_EQ(&GetStrategy(), mirrored_.get());
    }
    EXPECT_EQ(&GetStrategy(), mirrored_.get());
    EXPECT_TRUE(InCrossReplicaContext());
  }
  EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
  EXPECT_FALSE(InCrossReplicaContext());
  EXPECT_NE(GetReplicaContext(), nullptr);
}

TEST_F(DistributionContextTest, MixingStrategiesIsAnError) {
  absl::StatusOr<Strategy::Scope> outer = mirrored_->scope();
  ASSERT_TRUE(outer.ok()) << outer.status();
  absl::StatusOr<Strategy::Scope> inner = one_->scope();
  EXPECT_EQ(inner.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(inner.status().message(),
              HasSubstr("mixing different strategies"));
  EXPECT_THAT(inner.status().message(), HasSubstr("OneDeviceStrategy"));
  EXPECT_THAT(inner.status().message(), HasSubstr("MirroredStrategy"));
  // The refused scope changed nothing.
  EXPECT_EQ(&GetStrategy(), mirrored_.get());
  // Nor may another strategy run, as TF's run enters its scope.
  absl::Status run =
      one_->Run([](ReplicaContext&) { return absl::OkStatus(); });
  EXPECT_EQ(run.code(), absl::StatusCode::kFailedPrecondition) << run;
  EXPECT_THAT(run.message(), HasSubstr("mixing different strategies"));
  // The scope's own strategy runs.
  EXPECT_TRUE(
      mirrored_->Run([](ReplicaContext&) { return absl::OkStatus(); }).ok());
}

TEST_F(DistributionContextTest, ScopesInReplicaAndMergeFunctions) {
  std::atomic<int> refused_in_replica{0};
  std::atomic<int> merge_fn_ok{0};
  absl::Status s = mirrored_->Run([&](ReplicaContext& context) -> absl::Status {
    // As TF: a scope needs cross-replica context.
    absl::StatusOr<Strategy::Scope> in_replica = mirrored_->scope();
    if (in_replica.status().code() == absl::StatusCode::kFailedPrecondition) {
      ++refused_in_replica;
    }
    absl::StatusOr<int> merged = context.MergeCall(
        1, [&](Strategy& strategy, PerReplica<int>&) -> absl::StatusOr<int> {
          { ASSIGN_OR_RETURN(Strategy::Scope same, strategy.scope()); }
          absl::StatusOr<Strategy::Scope> other = one_->scope();
          if (other.status().code() == absl::StatusCode::kFailedPrecondition) {
            ++merge_fn_ok;
          }
          return 0;
        });
    return merged.status();
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(refused_in_replica, 2);
  EXPECT_EQ(merge_fn_ok, 1);
}

TEST_F(DistributionContextTest, VariablesCreatedInAScopeAreItsStrategys) {
  {
    absl::StatusOr<Strategy::Scope> scope = mirrored_->scope();
    ASSERT_TRUE(scope.ok()) << scope.status();
    absl::StatusOr<DistributedVariable*> w =
        CreateVariable(SumVariable("scoped_w", {3}));
    ASSERT_TRUE(w.ok()) << w.status();
    // Mirrored: a copy on each of the two replicas' devices.
    EXPECT_EQ((*w)->num_copies(), 2);
    EXPECT_EQ((*w)->CopyOfReplica(1), 1);
    // Owned by the scope's strategy: it finds the same variable.
    EXPECT_EQ(*mirrored_->CreateVariable(SumVariable("scoped_w", {3})), *w);
  }
  // Outside any scope: the default strategy's.
  absl::StatusOr<DistributedVariable*> v =
      CreateVariable(SumVariable("unscoped_v", {3}));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ((*v)->num_copies(), 1);
  EXPECT_EQ(*DefaultStrategy().CreateVariable(SumVariable("unscoped_v", {3})),
            *v);
  // In a replica function, refused as Strategy::CreateVariable is.
  absl::Status s = mirrored_->Run([](ReplicaContext&) {
    return CreateVariable(SumVariable("in_replica", {1})).status();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("CreateVariable"));
}

TEST_F(DistributionContextTest, LossReductionsAsTFMapsThem) {
  EXPECT_EQ(GetLossReduction(), ReduceOp::kMean);
  EXPECT_EQ(GetLossReduction(LossReduction::kSumOverBatchSize),
            ReduceOp::kMean);
  EXPECT_EQ(GetLossReduction(LossReduction::kMean), ReduceOp::kMean);
  EXPECT_EQ(GetLossReduction(LossReduction::kSum), ReduceOp::kSum);
}

TEST_F(DistributionContextTest, ReplicaFunctionsAndMergeFunctions) {
  std::atomic<int> in_replica_context{0};
  std::atomic<int> in_merge_fn_cross_replica{0};
  absl::Status s = mirrored_->Run([&](ReplicaContext& context) -> absl::Status {
    if (GetReplicaContext() == &context && &GetStrategy() == mirrored_.get() &&
        HasStrategy() && !InCrossReplicaContext()) {
      ++in_replica_context;
    }
    absl::StatusOr<int> merged = context.MergeCall(
        1,
        [&](Strategy& strategy, PerReplica<int>& ones) -> absl::StatusOr<int> {
          if (GetReplicaContext() == nullptr && InCrossReplicaContext() &&
              &GetStrategy() == &strategy) {
            ++in_merge_fn_cross_replica;
          }
          return static_cast<int>(ones.Unwrap().size());
        });
    if (!merged.ok()) return merged.status();
    // Back in the replica's context after the merge.
    return GetReplicaContext() == &context
               ? absl::OkStatus()
               : absl::InternalError("lost the replica context");
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(in_replica_context, 2);
  EXPECT_EQ(in_merge_fn_cross_replica, 1);
  // The caller's thread ran replica 0 and is back in the default context.
  EXPECT_EQ(GetReplicaContext(), &DefaultReplicaContext());
  EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
}

TEST_F(DistributionContextTest, RunInsideARunIsRefusedNotAHang) {
  for (Strategy* inner : {mirrored_.get(), one_.get()}) {
    std::atomic<int> refused{0};
    absl::Status s = mirrored_->Run([&](ReplicaContext&) -> absl::Status {
      absl::Status nested =
          inner->Run([](ReplicaContext&) { return absl::OkStatus(); });
      if (nested.code() == absl::StatusCode::kFailedPrecondition) ++refused;
      return nested;
    });
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(s.message(), HasSubstr("cross-replica"));
    EXPECT_EQ(refused, 2) << inner->name();
  }
  // The strategy still runs afterwards.
  EXPECT_TRUE(
      mirrored_->Run([](ReplicaContext&) { return absl::OkStatus(); }).ok());
}

TEST_F(DistributionContextTest, ExperimentalSetStrategyUntilCleared) {
  ExperimentalSetStrategy(one_.get());
  EXPECT_EQ(&GetStrategy(), one_.get());
  EXPECT_TRUE(InCrossReplicaContext());
  EXPECT_EQ(GetReplicaContext(), nullptr);
  {
    absl::StatusOr<Strategy::Scope> scope = one_->scope();  // nests
    ASSERT_TRUE(scope.ok()) << scope.status();
    EXPECT_EQ(&GetStrategy(), one_.get());
  }
  // Another strategy's scope mixes the two.
  EXPECT_EQ(mirrored_->scope().status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(&GetStrategy(), one_.get());
  ExperimentalSetStrategy(nullptr);
  EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
  EXPECT_FALSE(HasStrategy());
}

}  // namespace
}  // namespace distrt
