#include "job/resolved_task.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

TfConfig Parse(const std::string& text) {
  absl::StatusOr<TfConfig> config = ParseTfConfig(text);
  EXPECT_TRUE(config.ok()) << text << ": " << config.status();
  return config.ok() ? *config : TfConfig{};
}

std::string WithTask(const std::string& cluster, const std::string& type,
                     int index) {
  return "{\"cluster\":" + cluster + ",\"task\":{\"type\":\"" + type +
         "\",\"index\":" + std::to_string(index) + "}}";
}

constexpr char kPsCluster[] =
    R"({"chief":["c:1"],"worker":["w0:1","w1:1"],"ps":["p0:1","p1:1"]})";
constexpr char kWorkersOnly[] = R"({"chief":["c:1"],"worker":["w0:1"]})";

TEST(ResolvedTaskTest, LocalModeIsAChiefThatTrainsMirrored) {
  absl::StatusOr<ResolvedTask> task =
      ResolveTask(TfConfig{}, ClusterSource::kLocal);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_TRUE(task->is_local());
  EXPECT_TRUE(task->is_training_task());
  EXPECT_TRUE(task->is_training_chief());
  EXPECT_FALSE(task->is_ps());
  EXPECT_FALSE(task->is_evaluator());
  EXPECT_EQ(task->type(), "");
  EXPECT_EQ(task->num_training_tasks(), 1);
  EXPECT_FALSE(task->has_ps());
  EXPECT_EQ(task->source, ClusterSource::kLocal);
  EXPECT_EQ(task->strategy, StrategyKind::kMirrored);
  EXPECT_EQ(task->role.id_in_cluster, 0);
}

TEST(ResolvedTaskTest, TrainingTasksOfAPsClusterGetParameterServers) {
  absl::StatusOr<ResolvedTask> chief = ResolveTask(
      Parse(WithTask(kPsCluster, "chief", 0)), ClusterSource::kTfConfig);
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_TRUE(chief->is_training_chief());
  EXPECT_EQ(chief->strategy, StrategyKind::kParameterServer);
  EXPECT_EQ(chief->num_training_tasks(), 3);
  EXPECT_EQ(chief->num_ps_tasks(), 2);
  EXPECT_EQ(chief->role.address, "c:1");

  absl::StatusOr<ResolvedTask> worker = ResolveTask(
      Parse(WithTask(kPsCluster, "worker", 1)), ClusterSource::kSlurm);
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_FALSE(worker->is_training_chief());
  EXPECT_EQ(worker->type(), "worker");
  EXPECT_EQ(worker->index(), 1);
  EXPECT_EQ(worker->role.id_in_cluster, 2);
  EXPECT_EQ(worker->source, ClusterSource::kSlurm);
}

TEST(ResolvedTaskTest, WorkerZeroIsTheChiefWithoutAChiefJob) {
  absl::StatusOr<ResolvedTask> w0 =
      ResolveTask(Parse(WithTask(R"({"worker":["w0:1","w1:1"]})", "worker", 0)),
                  ClusterSource::kTfConfig);
  ASSERT_TRUE(w0.ok()) << w0.status();
  EXPECT_TRUE(w0->is_training_chief());
  EXPECT_EQ(w0->strategy, StrategyKind::kMultiWorkerMirrored);
}

// ps tasks and the evaluator train nothing: they resolve whatever --strategy
// asks, with no strategy kind.
TEST(ResolvedTaskTest, PsAndEvaluatorTasksHaveNoStrategy) {
  absl::StatusOr<ResolvedTask> ps =
      ResolveTask(Parse(WithTask(kPsCluster, "ps", 1)),
                  ClusterSource::kTfConfig, StrategyKind::kMirrored);
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_TRUE(ps->is_ps());
  EXPECT_FALSE(ps->is_training_task());
  EXPECT_FALSE(ps->is_training_chief());
  EXPECT_EQ(ps->strategy, std::nullopt);

  absl::StatusOr<ResolvedTask> evaluator = ResolveTask(
      Parse(WithTask(kPsCluster, "evaluator", 0)), ClusterSource::kTfConfig);
  ASSERT_TRUE(evaluator.ok()) << evaluator.status();
  EXPECT_TRUE(evaluator->is_evaluator());
  // TF makes the evaluator a chief of its own; it is not training's chief.
  EXPECT_TRUE(evaluator->role.is_chief);
  EXPECT_FALSE(evaluator->is_training_chief());
  EXPECT_EQ(evaluator->strategy, std::nullopt);
}

TEST(ResolvedTaskTest, AStrategyTheClusterCannotRunIsRefused) {
  absl::Status refused =
      ResolveTask(Parse(WithTask(kWorkersOnly, "chief", 0)),
                  ClusterSource::kTfConfig, StrategyKind::kMirrored)
          .status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("--strategy=mirrored trains within "
                                           "one process"));
  refused =
      ResolveTask(Parse(WithTask(kPsCluster, "worker", 0)),
                  ClusterSource::kTfConfig, StrategyKind::kMultiWorkerMirrored)
          .status();
  EXPECT_THAT(refused.message(), HasSubstr("would wait forever"));
}

}  // namespace
}  // namespace distrt
