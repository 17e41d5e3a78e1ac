#include "runtime/distribute/distribution_context.h"

#include <atomic>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device/local_devices.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/one_device_strategy.h"

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
  EXPECT_EQ(GetReplicaContext(), nullptr);
  EXPECT_FALSE(InCrossReplicaContext());
}

TEST_F(DistributionContextTest, ScopesNestAndEnd) {
  {
    Strategy::Scope outer = mirrored_->scope();
    EXPECT_EQ(&GetStrategy(), mirrored_.get());
    EXPECT_TRUE(HasStrategy());
    EXPECT_TRUE(InCrossReplicaContext());
    EXPECT_EQ(GetReplicaContext(), nullptr);
    {
      Strategy::Scope inner = one_->scope();
      EXPECT_EQ(&GetStrategy(), one_.get());
    }
    EXPECT_EQ(&GetStrategy(), mirrored_.get());
  }
  EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
  EXPECT_FALSE(InCrossReplicaContext());
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
  EXPECT_EQ(GetReplicaContext(), nullptr);
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
  {
    Strategy::Scope scope = mirrored_->scope();  // a scope wins while it lives
    EXPECT_EQ(&GetStrategy(), mirrored_.get());
  }
  EXPECT_EQ(&GetStrategy(), one_.get());
  ExperimentalSetStrategy(nullptr);
  EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
  EXPECT_FALSE(HasStrategy());
}

}  // namespace
}  // namespace distrt
