#include "runtime/cluster/task_role.h"

#include <string>

#include "gtest/gtest.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {
namespace {

TaskRole RoleOf(const std::string& tf_config) {
  absl::StatusOr<TfConfig> config = ParseTfConfig(tf_config);
  EXPECT_TRUE(config.ok()) << tf_config << ": " << config.status();
  return config.ok() ? ResolveTaskRole(*config) : TaskRole{};
}

std::string WithTask(const std::string& cluster, const std::string& type,
                     int index) {
  return "{\"cluster\":" + cluster + ",\"task\":{\"type\":\"" + type +
         "\",\"index\":" + std::to_string(index) + "}}";
}

constexpr char kFullCluster[] =
    R"({"chief":["c:1"],"worker":["w0:1","w1:1"],"ps":["p0:1","p1:1"],)"
    R"("evaluator":["e:1"]})";

TEST(TaskRoleTest, Chief) {
  TaskRole role = RoleOf(WithTask(kFullCluster, "chief", 0));
  EXPECT_TRUE(role.is_chief);
  EXPECT_EQ(role.num_workers, 3);
  EXPECT_EQ(role.id_in_cluster, 0);
  EXPECT_EQ(role.address, "c:1");
  EXPECT_EQ(role.master, "c:1");
}

TEST(TaskRoleTest, WorkersComeAfterTheChief) {
  for (int i = 0; i < 2; ++i) {
    TaskRole role = RoleOf(WithTask(kFullCluster, "worker", i));
    EXPECT_FALSE(role.is_chief);
    EXPECT_EQ(role.num_workers, 3);
    EXPECT_EQ(role.id_in_cluster, i + 1);
    EXPECT_EQ(role.address, "w" + std::to_string(i) + ":1");
  }
}

TEST(TaskRoleTest, FirstWorkerIsChiefWithoutAChiefJob) {
  const std::string cluster = R"({"worker":["w0:1","w1:1"],"ps":["p:1"]})";
  TaskRole w0 = RoleOf(WithTask(cluster, "worker", 0));
  EXPECT_TRUE(w0.is_chief);
  EXPECT_EQ(w0.num_workers, 2);
  EXPECT_EQ(w0.id_in_cluster, 0);
  TaskRole w1 = RoleOf(WithTask(cluster, "worker", 1));
  EXPECT_FALSE(w1.is_chief);
  EXPECT_EQ(w1.id_in_cluster, 1);
}

TEST(TaskRoleTest, PsHasNoWorkerCountOrId) {
  TaskRole role = RoleOf(WithTask(kFullCluster, "ps", 1));
  EXPECT_FALSE(role.is_chief);
  EXPECT_EQ(role.num_workers, std::nullopt);
  EXPECT_EQ(role.id_in_cluster, std::nullopt);
  EXPECT_EQ(role.master, "p1:1");
}

TEST(TaskRoleTest, EvaluatorIsItsOwnChief) {
  TaskRole inside = RoleOf(WithTask(kFullCluster, "evaluator", 0));
  EXPECT_TRUE(inside.is_chief);
  EXPECT_EQ(inside.num_workers, 1);
  EXPECT_EQ(inside.id_in_cluster, 0);
  EXPECT_EQ(inside.master, "e:1");

  TaskRole outside = RoleOf(WithTask(R"({"worker":["w0:1"]})", "evaluator", 0));
  EXPECT_TRUE(outside.is_chief);
  EXPECT_EQ(outside.num_workers, 1);
  EXPECT_EQ(outside.id_in_cluster, 0);
  EXPECT_EQ(outside.address, "");
  EXPECT_EQ(outside.master, "");
}

TEST(TaskRoleTest, MasterHasTheRpcLayer) {
  TaskRole role = RoleOf(
      R"({"cluster":{"worker":["w0:1","w1:1"]},"task":{"type":"worker","index":1},"rpc_layer":"grpc"})");
  EXPECT_EQ(role.master, "grpc://w1:1");
  TaskRole empty_layer = RoleOf(
      R"({"cluster":{"worker":["w0:1","w1:1"]},"task":{"type":"worker","index":1},"rpc_layer":""})");
  EXPECT_EQ(empty_layer.master, "w1:1");
}

TEST(TaskRoleTest, MasterIsEmptyForAOneTaskCluster) {
  TaskRole role = RoleOf(
      R"({"cluster":{"chief":["c:1"]},"task":{"type":"chief","index":0},"rpc_layer":"grpc"})");
  EXPECT_EQ(role.master, "");
  EXPECT_EQ(role.address, "c:1");
  EXPECT_TRUE(role.is_chief);
  EXPECT_EQ(role.num_workers, 1);
}

TEST(TaskRoleTest, LocalMode) {
  TaskRole role = RoleOf("{}");
  EXPECT_TRUE(role.is_chief);
  EXPECT_EQ(role.num_workers, 1);
  EXPECT_EQ(role.id_in_cluster, 0);
  EXPECT_EQ(role.master, "");
}

TEST(TaskRoleTest, NoTaskGivesNoRole) {
  TaskRole role = RoleOf(R"({"cluster":{"ps":["p0:1","p1:1"]}})");
  EXPECT_FALSE(role.is_chief);
  EXPECT_EQ(role.num_workers, std::nullopt);
  EXPECT_EQ(role.id_in_cluster, std::nullopt);
  EXPECT_EQ(role.master, "");
}

TEST(TaskRoleTest, SparseWorkersAreCountedAndRankedByIndicesPresent) {
  // TF would count 4 workers here (largest index + 1) and make nobody chief.
  const std::string cluster = R"({"worker":{"1":"w1:1","3":"w3:1"}})";
  TaskRole w1 = RoleOf(WithTask(cluster, "worker", 1));
  EXPECT_TRUE(w1.is_chief);
  EXPECT_EQ(w1.num_workers, 2);
  EXPECT_EQ(w1.id_in_cluster, 0);
  TaskRole w3 = RoleOf(WithTask(cluster, "worker", 3));
  EXPECT_FALSE(w3.is_chief);
  EXPECT_EQ(w3.num_workers, 2);
  EXPECT_EQ(w3.id_in_cluster, 1);
  EXPECT_EQ(w3.address, "w3:1");

  const std::string with_chief =
      R"({"chief":["c:1"],"worker":{"1":"w1:1","3":"w3:1"}})";
  TaskRole w3c = RoleOf(WithTask(with_chief, "worker", 3));
  EXPECT_FALSE(w3c.is_chief);
  EXPECT_EQ(w3c.num_workers, 3);
  EXPECT_EQ(w3c.id_in_cluster, 2);
}

TEST(TaskRoleTest, TrainingTasksAreChiefsAndWorkersAtLeastOne) {
  EXPECT_EQ(NumTrainingTasks(ClusterSpec()), 1);
  EXPECT_EQ(
      NumTrainingTasks(ParseTfConfig(WithTask(kFullCluster, "ps", 0))->cluster),
      3);
  EXPECT_EQ(
      NumTrainingTasks(ParseTfConfig(R"({"cluster":{"ps":["p:1"]}})")->cluster),
      1);
}

}  // namespace
}  // namespace distrt
