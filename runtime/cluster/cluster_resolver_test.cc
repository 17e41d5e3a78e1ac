#include "runtime/cluster/cluster_resolver.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cluster/simple_cluster_resolver.h"
#include "runtime/cluster/tf_config_cluster_resolver.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;

ClusterSpec TwoWorkersAndAPs() {
  return *ClusterSpec::Create({{"chief", {{0, "c:2222"}}},
                               {"worker", {{0, "w0:2222"}}},
                               {"ps", {{0, "p0:2222"}}}});
}

TEST(ClusterResolverTest, SimpleResolverGivesTheClusterAndTaskInCode) {
  SimpleClusterResolver resolver(TwoWorkersAndAPs(), TaskId{"worker", 0},
                                 "grpc");
  absl::StatusOr<TfConfig> config = resolver.Resolve();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster.NumTasks("ps"), 1);
  EXPECT_EQ(*config->rpc_layer, "grpc");
  absl::StatusOr<TaskRole> role = resolver.task_role();
  ASSERT_TRUE(role.ok()) << role.status();
  EXPECT_FALSE(role->is_chief);
  EXPECT_EQ(*role->id_in_cluster, 1);
  EXPECT_EQ(role->master, "grpc://w0:2222");
  EXPECT_EQ((*resolver.task())->type, "worker");
}

TEST(ClusterResolverTest, SimpleResolverRefusesATaskNotInTheCluster) {
  SimpleClusterResolver resolver(TwoWorkersAndAPs(), TaskId{"worker", 3});
  absl::Status s = resolver.Resolve().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("SimpleClusterResolver: "));
  EXPECT_THAT(s.message(), HasSubstr("out of range"));
  EXPECT_EQ(resolver.task_role().status().code(),
            absl::StatusCode::kInvalidArgument);

  // No cluster: local mode, one task.
  SimpleClusterResolver local(ClusterSpec(), std::nullopt);
  absl::StatusOr<TaskRole> role = local.task_role();
  ASSERT_TRUE(role.ok()) << role.status();
  EXPECT_TRUE(role->is_chief);
}

TEST(ClusterResolverTest, TfConfigResolverReadsTheEnvironmentEachTime) {
  TFConfigClusterResolver resolver;
  ASSERT_EQ(unsetenv("TF_CONFIG"), 0);
  absl::StatusOr<TfConfig> local = resolver.Resolve();
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_TRUE(local->is_local());

  ASSERT_EQ(setenv("TF_CONFIG",
                   R"({"cluster": {"chief": ["c:1"], "worker": ["w:1"]},
                       "task": {"type": "chief", "index": 0}})",
                   1),
            0);
  absl::StatusOr<ClusterSpec> cluster = resolver.cluster_spec();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->NumTasks("worker"), 1);
  EXPECT_TRUE(resolver.task_role()->is_chief);

  ASSERT_EQ(setenv("TF_CONFIG", R"({"task": 3})", 1), 0);
  absl::Status bad = resolver.Resolve().status();
  EXPECT_THAT(bad.message(), HasSubstr("TF_CONFIG: "));
  ASSERT_EQ(unsetenv("TF_CONFIG"), 0);
}

}  // namespace
}  // namespace distrt
