#include "runtime/cluster/environment_cluster.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

EnvironmentLookup Lookup(std::map<std::string, std::string> env) {
  return [env = std::move(env)](
             absl::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

const std::map<std::string, std::string> kSlurmStep = {
    {"SLURM_PROCID", "1"},
    {"SLURM_STEP_NUM_TASKS", "2"},
    {"SLURM_STEP_NODELIST", "localhost"},
    {"SLURM_STEP_TASKS_PER_NODE", "2"},
    {"CUDA_VISIBLE_DEVICES", "0,1"}};

TEST(EnvironmentClusterTest, TfConfigFirstThenSlurmThenLocal) {
  std::map<std::string, std::string> both = kSlurmStep;
  both["TF_CONFIG"] =
      R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}})";
  absl::StatusOr<EnvironmentCluster> tf =
      ResolveClusterFromEnvironment(SlurmClusterOptions{}, Lookup(both));
  ASSERT_TRUE(tf.ok()) << tf.status();
  EXPECT_EQ(tf->source, ClusterSource::kTfConfig);
  EXPECT_EQ(tf->config.cluster.NumTasks(), 1);
  EXPECT_FALSE(TaskGpusFromEnvironment(*tf, SlurmClusterOptions{}, Lookup(both))
                   ->has_value());

  SlurmClusterOptions ps_and_worker;
  ps_and_worker.jobs = {{"ps", 1}, {"worker", 1}};
  absl::StatusOr<EnvironmentCluster> slurm =
      ResolveClusterFromEnvironment(ps_and_worker, Lookup(kSlurmStep));
  ASSERT_TRUE(slurm.ok()) << slurm.status();
  EXPECT_EQ(slurm->source, ClusterSource::kSlurm);
  EXPECT_EQ(*slurm->config.task, (TaskId{"worker", 0}));
  EXPECT_EQ(*slurm->config.cluster.TaskAddress("ps", 0), "localhost:8888");
  EXPECT_EQ(*TaskGpusFromEnvironment(*slurm, ps_and_worker, Lookup(kSlurmStep)),
            "0,1");

  absl::StatusOr<EnvironmentCluster> local =
      ResolveClusterFromEnvironment(SlurmClusterOptions{}, Lookup({}));
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->source, ClusterSource::kLocal);
  EXPECT_TRUE(local->config.is_local());
}

TEST(EnvironmentClusterTest, ErrorsNameTheirSource) {
  absl::StatusOr<EnvironmentCluster> bad_tf = ResolveClusterFromEnvironment(
      SlurmClusterOptions{}, Lookup({{"TF_CONFIG", "{"}}));
  ASSERT_FALSE(bad_tf.ok());
  EXPECT_THAT(bad_tf.status().message(), HasSubstr("TF_CONFIG: "));
  SlurmClusterOptions three;
  three.jobs = {{"worker", 3}};
  absl::StatusOr<EnvironmentCluster> bad_slurm =
      ResolveClusterFromEnvironment(three, Lookup(kSlurmStep));
  ASSERT_FALSE(bad_slurm.ok());
  EXPECT_THAT(bad_slurm.status().message(),
              HasSubstr("Slurm: --slurm_jobs=worker:3 asks for 3 tasks"));
}

TEST(EnvironmentClusterTest, SourcesHaveTheirNames) {
  EXPECT_EQ(ClusterSourceName(ClusterSource::kTfConfig), "TF_CONFIG");
  EXPECT_EQ(ClusterSourceName(ClusterSource::kSlurm), "Slurm");
  EXPECT_EQ(ClusterSourceName(ClusterSource::kLocal), "local");
  EXPECT_EQ(ClusterSourceName(ClusterSource::kProgram), "program");
}

// The flags' values: errors start "Slurm: " as docs/tf_config.md promises.
TEST(EnvironmentClusterTest, SlurmFlagErrorsSaySlurm) {
  absl::StatusOr<SlurmClusterOptions> options =
      MakeSlurmClusterOptions("ps:2,worker:3", 7000);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->port_base, 7000);
  ASSERT_EQ(options->jobs.size(), 2u);
  EXPECT_TRUE(MakeSlurmClusterOptions("", 8888)->jobs.empty());

  absl::Status port = MakeSlurmClusterOptions("", 0).status();
  EXPECT_EQ(port.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(port.message(),
            "Slurm: --slurm_port_base=0 is not a port (1 to 65535)");
  EXPECT_THAT(
      std::string(MakeSlurmClusterOptions("", 65536).status().message()),
      StartsWith("Slurm: --slurm_port_base=65536 "));
  absl::Status chiefs = MakeSlurmClusterOptions("chief:2", 8888).status();
  EXPECT_EQ(chiefs.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(chiefs.message(),
            "Slurm: --slurm_jobs: \"chief:2\" asks for 2 chief tasks; a job "
            "has one chief at most");
}

// A host with fewer GPUs than its tasks stops only what asks for GPUs: the
// cluster itself still resolves (for a ps task, a client).
TEST(EnvironmentClusterTest, AGpuShortfallDoesNotStopTheCluster) {
  std::map<std::string, std::string> env = kSlurmStep;
  env["CUDA_VISIBLE_DEVICES"] = "0";
  absl::StatusOr<EnvironmentCluster> cluster =
      ResolveClusterFromEnvironment(SlurmClusterOptions{}, Lookup(env));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::optional<std::string>> gpus =
      TaskGpusFromEnvironment(*cluster, SlurmClusterOptions{}, Lookup(env));
  ASSERT_FALSE(gpus.ok());
  EXPECT_THAT(gpus.status().message(), HasSubstr("has 1 GPUs"));
}

}  // namespace
}  // namespace distrt
