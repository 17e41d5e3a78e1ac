#include "job/make_strategy.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cluster/simple_cluster_resolver.h"
#include "runtime/local_devices/local_devices.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

TfConfig Config(const std::vector<JobSpec>& jobs, const TaskId& task) {
  TfConfig config;
  config.cluster = *ClusterSpec::Create(jobs);
  config.task = task;
  return config;
}

TEST(ChooseStrategyKindTest, AutoFollowsTheCluster) {
  EXPECT_EQ(*ChooseStrategyKind(TfConfig{}, StrategyKind::kAuto),
            StrategyKind::kMirrored);
  const TfConfig with_ps = Config(
      {{"chief", {{0, "c:1"}}}, {"ps", {{0, "p:1"}}}}, TaskId{"chief", 0});
  EXPECT_EQ(*ChooseStrategyKind(with_ps, StrategyKind::kAuto),
            StrategyKind::kParameterServer);
  const TfConfig workers = Config(
      {{"chief", {{0, "c:1"}}}, {"worker", {{0, "w:1"}}}}, TaskId{"worker", 0});
  EXPECT_EQ(*ChooseStrategyKind(workers, StrategyKind::kAuto),
            StrategyKind::kMultiWorkerMirrored);
  // Parameter servers without ps tasks: alone it trains locally.
  EXPECT_EQ(*ChooseStrategyKind(TfConfig{}, StrategyKind::kParameterServer),
            StrategyKind::kParameterServer);
}

TEST(ChooseStrategyKindTest, WhatTheClusterCannotRunIsRefused) {
  const TfConfig with_ps =
      Config({{"chief", {{0, "c:1"}}}, {"ps", {{0, "p:1"}}}}, TaskId{"ps", 0});
  absl::Status s = ChooseStrategyKind(with_ps, StrategyKind::kAuto).status();
  EXPECT_THAT(s.message(), HasSubstr("ps tasks run ps_server"));
  TfConfig chief = with_ps;
  chief.task = TaskId{"chief", 0};
  s = ChooseStrategyKind(chief, StrategyKind::kMultiWorkerMirrored).status();
  EXPECT_THAT(s.message(), HasSubstr("would wait forever"));
  // A lone chief with ps tasks cannot keep its variables to itself either.
  s = ChooseStrategyKind(chief, StrategyKind::kMirrored).status();
  EXPECT_THAT(s.message(), HasSubstr("--strategy=mirrored keeps the variables "
                                     "in this process"));
  const TfConfig workers = Config(
      {{"chief", {{0, "c:1"}}}, {"worker", {{0, "w:1"}}}}, TaskId{"chief", 0});
  s = ChooseStrategyKind(workers, StrategyKind::kMirrored).status();
  EXPECT_THAT(s.message(), HasSubstr("trains within one process"));
  s = ChooseStrategyKind(workers, StrategyKind::kParameterServer).status();
  EXPECT_THAT(s.message(), HasSubstr("2 training tasks and no ps tasks"));
}

TEST(MakeStrategyTest, LocalModeMakesAChiefsMirroredStrategy) {
  LocalDevicesOptions device_options;
  device_options.num_cpu_devices = 2;
  device_options.use_gpus = false;
  LocalDevices devices = *CreateLocalDevices(device_options);
  SimpleClusterResolver local(ClusterSpec(), std::nullopt);
  std::vector<std::string> lines;
  MakeStrategyOptions options;
  options.log = [&](absl::string_view line) { lines.emplace_back(line); };
  absl::StatusOr<ResolvedStrategy> resolved =
      MakeStrategy(local, devices.pointers(), options);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->strategy->name(), "MirroredStrategy");
  EXPECT_TRUE(resolved->strategy->should_init());
  EXPECT_TRUE(resolved->task.is_training_chief());
  EXPECT_EQ(resolved->ps_client, nullptr);
  EXPECT_EQ(resolved->workers, nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("MirroredStrategy: 2 replicas"));

  options.kind = StrategyKind::kParameterServer;
  resolved = MakeStrategy(local, devices.pointers(), options);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_THAT(resolved->strategy->Describe(), HasSubstr("no ps tasks"));

  // Pushes in the background need parameter servers: refused for the
  // mirrored strategy that auto picks here, taken (and idle without ps
  // tasks) by ParameterServerStrategy.
  MakeStrategyOptions background = options;
  background.kind = StrategyKind::kAuto;
  background.strategy.push_in_background = true;
  absl::Status refused =
      MakeStrategy(local, devices.pointers(), background).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(),
              HasSubstr("push_in_background overlaps a step's push"));
  background.kind = StrategyKind::kParameterServer;
  EXPECT_TRUE(MakeStrategy(local, devices.pointers(), background).ok());

  SimpleClusterResolver bad(*ClusterSpec::Create({{"worker", {{0, "w:1"}}}}),
                            TaskId{"worker", 2});
  EXPECT_EQ(MakeStrategy(bad, devices.pointers(), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt
