// `distctl resolve` run as a process, with TF_CONFIG as Kubeflow's TFJob
// operator writes it for each replica type, and with invalid configs.

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/subprocess.h"

namespace distrt {
namespace {

using ::distrt::testing::RunSubprocess;
using ::distrt::testing::SubprocessOptions;
using ::distrt::testing::SubprocessResult;
using Json = nlohmann::ordered_json;

constexpr char kDistctl[] = "client/distctl";

// Kubeflow's cluster for a TFJob "mnist" in namespace "kubeflow" with one
// chief, two workers and two ps (Go's encoding/json: sorted keys, compact;
// older operators left the evaluator out of the cluster; see
// deploy_manifests_test for the current form, which lists it).
constexpr char kKubeflowCluster[] =
    R"({"chief":["mnist-chief-0.kubeflow.svc:2222"],)"
    R"("ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"],)"
    R"("worker":["mnist-worker-0.kubeflow.svc:2222",)"
    R"("mnist-worker-1.kubeflow.svc:2222"]})";

std::string KubeflowTfConfig(const std::string& type, int index) {
  return std::string(R"({"cluster":)") + kKubeflowCluster +
         R"(,"task":{"type":")" + type + R"(","index":)" +
         std::to_string(index) + R"(},"environment":"cloud"})";
}

SubprocessResult Resolve(std::optional<std::string> tf_config) {
  SubprocessOptions options;
  options.argv = {kDistctl, "resolve"};
  options.env["TF_CONFIG"] = std::move(tf_config);
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SubprocessResult{};
}

Json ResolveOk(std::optional<std::string> tf_config) {
  SubprocessResult result = Resolve(tf_config);
  EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  EXPECT_EQ(result.stderr_text, "");
  Json json = Json::parse(result.stdout_text, nullptr, false);
  EXPECT_TRUE(json.is_object()) << result.stdout_text;
  return json;
}

TEST(DistctlResolveTest, KubeflowChief) {
  Json out = ResolveOk(KubeflowTfConfig("chief", 0));
  EXPECT_EQ(out["mode"], "distributed");
  EXPECT_EQ(out["cluster"], Json::parse(kKubeflowCluster));
  EXPECT_EQ(out["task_type"], "chief");
  EXPECT_EQ(out["task_index"], 0);
  EXPECT_EQ(out["rpc_layer"], nullptr);
  EXPECT_EQ(out["environment"], "cloud");
  EXPECT_EQ(out["master"], "mnist-chief-0.kubeflow.svc:2222");
  EXPECT_EQ(out["is_chief"], true);
  EXPECT_EQ(out["num_workers"], 3);
  EXPECT_EQ(out["id_in_cluster"], 0);
}

TEST(DistctlResolveTest, KubeflowWorker) {
  Json out = ResolveOk(KubeflowTfConfig("worker", 1));
  EXPECT_EQ(out["task_type"], "worker");
  EXPECT_EQ(out["task_index"], 1);
  EXPECT_EQ(out["master"], "mnist-worker-1.kubeflow.svc:2222");
  EXPECT_EQ(out["is_chief"], false);
  EXPECT_EQ(out["num_workers"], 3);
  EXPECT_EQ(out["id_in_cluster"], 2);
}

TEST(DistctlResolveTest, KubeflowPs) {
  Json out = ResolveOk(KubeflowTfConfig("ps", 1));
  EXPECT_EQ(out["task_type"], "ps");
  EXPECT_EQ(out["master"], "mnist-ps-1.kubeflow.svc:2222");
  EXPECT_EQ(out["is_chief"], false);
  EXPECT_EQ(out["num_workers"], nullptr);
  EXPECT_EQ(out["id_in_cluster"], nullptr);
}

TEST(DistctlResolveTest, KubeflowEvaluatorOutsideTheCluster) {
  Json out = ResolveOk(KubeflowTfConfig("evaluator", 0));
  EXPECT_EQ(out["mode"], "distributed");
  EXPECT_EQ(out["task_type"], "evaluator");
  EXPECT_EQ(out["master"], "");
  EXPECT_EQ(out["is_chief"], true);
  EXPECT_EQ(out["num_workers"], 1);
  EXPECT_EQ(out["id_in_cluster"], 0);
}

// srun's step variables and no TF_CONFIG: the cluster by TF's Slurm rules.
TEST(DistctlResolveTest, SlurmStepWithoutTfConfig) {
  SubprocessOptions options;
  options.argv = {kDistctl, "resolve", "--slurm_jobs=ps:2,worker:3",
                  "--slurm_port_base=7000"};
  options.env["TF_CONFIG"] = std::nullopt;
  options.env["SLURM_PROCID"] = "4";
  options.env["SLURM_STEP_NUM_TASKS"] = "5";
  options.env["SLURM_STEP_NODELIST"] = "node[01-02]";
  options.env["SLURM_STEP_TASKS_PER_NODE"] = "3,2";
  options.env["SLURM_STEP_GPUS"] = "0,1";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stderr_text;
  Json out = Json::parse(result->stdout_text, nullptr, false);
  EXPECT_EQ(out["source"], "Slurm");
  EXPECT_EQ(out["cluster"],
            Json::parse(R"({"ps":["node01:7000","node01:7001"],)"
                        R"("worker":["node01:7002","node02:7000",)"
                        R"("node02:7001"]})"));
  EXPECT_EQ(out["task_type"], "worker");
  EXPECT_EQ(out["task_index"], 2);
  EXPECT_EQ(out["is_chief"], false);
  EXPECT_EQ(out["cuda_visible_devices"], "1");

  options.argv = {kDistctl, "resolve", "--slurm_jobs=ps:2,worker:2"};
  result = RunSubprocess(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 2);
  EXPECT_THAT(result->stderr_text,
              ::testing::HasSubstr("Slurm: --slurm_jobs=ps:2,worker:2 asks "
                                   "for 4 tasks but the step has 5"));
}

// The step of `srun -n 2` on one host, without TF_CONFIG.
SubprocessOptions SlurmStep(std::vector<std::string> flags) {
  SubprocessOptions options;
  options.argv = {kDistctl, "resolve"};
  for (std::string& flag : flags) options.argv.push_back(std::move(flag));
  options.env["TF_CONFIG"] = std::nullopt;
  options.env["SLURM_PROCID"] = "1";
  options.env["SLURM_STEP_NUM_TASKS"] = "2";
  options.env["SLURM_STEP_NODELIST"] = "node01";
  options.env["SLURM_STEP_TASKS_PER_NODE"] = "2";
  return options;
}

// distctl uses no GPU: a host whose GPUs cannot be shared among its tasks is
// reported with the tasks, not an error (a worker there would stop with it).
TEST(DistctlResolveTest, GpuShortfallIsReportedNotFatal) {
  SubprocessOptions options = SlurmStep({});
  options.env["CUDA_VISIBLE_DEVICES"] = "0";
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stderr_text;
  EXPECT_EQ(result->stderr_text, "");
  Json out = Json::parse(result->stdout_text, nullptr, false);
  ASSERT_TRUE(out.is_object()) << result->stdout_text;
  EXPECT_EQ(out["source"], "Slurm");
  EXPECT_EQ(out["task_type"], "worker");
  EXPECT_EQ(out["task_index"], 1);
  EXPECT_EQ(out["cluster"],
            Json::parse(R"({"worker":["node01:8888","node01:8889"]})"));
  EXPECT_FALSE(out.contains("cuda_visible_devices"));
  EXPECT_EQ(out["cuda_visible_devices_error"],
            "Slurm: node01 has 1 GPUs (CUDA_VISIBLE_DEVICES=0) for its 2 "
            "tasks that are not ps tasks");
}

// A user who passes --slurm_jobs expects Slurm: outside a step (and without
// TF_CONFIG) resolve refuses instead of answering in local mode.
TEST(DistctlResolveTest, SlurmJobsOutsideASlurmStepIsRefused) {
  SubprocessOptions options;
  options.argv = {kDistctl, "resolve", "--slurm_jobs=ps:1,worker:1"};
  options.env["TF_CONFIG"] = std::nullopt;
  for (const char* name :
       {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST",
        "SLURM_STEP_TASKS_PER_NODE"}) {
    options.env[name] = std::nullopt;
  }
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 2);
  EXPECT_EQ(result->stdout_text, "");
  EXPECT_THAT(result->stderr_text,
              ::testing::StartsWith(
                  "Slurm: --slurm_jobs=ps:1,worker:1 is given, but this "
                  "process is not in a Slurm job step"));

  // TF_CONFIG, when set, wins as documented, --slurm_jobs or not.
  options.env["TF_CONFIG"] = KubeflowTfConfig("ps", 0);
  result = RunSubprocess(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0) << result->stderr_text;
}

// Every Slurm error starts "Slurm: " (docs/tf_config.md), those of the flags
// and of the step's variables alike.
TEST(DistctlResolveTest, SlurmErrorsSaySlurm) {
  struct Case {
    std::vector<std::string> flags;
    std::string node_list;
    std::string message;
  };
  const Case cases[] = {
      {{"--slurm_jobs=chief:2"},
       "node01",
       "Slurm: --slurm_jobs: \"chief:2\" asks for 2 chief tasks; a job has "
       "one chief at most\n"},
      {{"--slurm_port_base=0"},
       "node01",
       "Slurm: --slurm_port_base=0 is not a port (1 to 65535)\n"},
      {{},
       "node[5-3]",
       "Slurm: SLURM_STEP_NODELIST=\"node[5-3]\": the range \"5-3\" "
       "descends\n"},
  };
  for (const Case& c : cases) {
    SubprocessOptions options = SlurmStep(c.flags);
    options.env["SLURM_STEP_NODELIST"] = c.node_list;
    absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->exit_code, 2) << c.message;
    EXPECT_EQ(result->stdout_text, "") << c.message;
    EXPECT_EQ(result->stderr_text, c.message);
  }
}

TEST(DistctlResolveTest, KeysInDocumentedOrder) {
  Json out = ResolveOk(KubeflowTfConfig("worker", 0));
  std::vector<std::string> keys;
  for (const auto& item : out.items()) keys.push_back(item.key());
  EXPECT_THAT(keys, ::testing::ElementsAre(
                        "mode", "cluster", "task_type", "task_index",
                        "rpc_layer", "environment", "master", "is_chief",
                        "num_workers", "id_in_cluster", "source"));
}

TEST(DistctlResolveTest, SparseJobStaysAnObject) {
  Json out = ResolveOk(
      R"({"cluster":{"worker":{"3":"w3:2222","1":"w1:2222"},"ps":["p:2222"]},)"
      R"("task":{"type":"worker","index":"3"},"rpc_layer":"grpc"})");
  EXPECT_EQ(out["cluster"]["worker"],
            Json::parse(R"({"1":"w1:2222","3":"w3:2222"})"));
  EXPECT_EQ(out["cluster"]["ps"], Json::parse(R"(["p:2222"])"));
  EXPECT_EQ(out["task_index"], 3);
  EXPECT_EQ(out["master"], "grpc://w3:2222");
  EXPECT_EQ(out["rpc_layer"], "grpc");
  EXPECT_EQ(out["num_workers"], 2);
  EXPECT_EQ(out["id_in_cluster"], 1);
  EXPECT_EQ(out["is_chief"], false);
}

TEST(DistctlResolveTest, LocalModeWhenUnsetOrEmpty) {
  for (std::optional<std::string> tf_config :
       {std::optional<std::string>(), std::optional<std::string>("{}"),
        std::optional<std::string>(R"({"cluster":{}})")}) {
    Json out = ResolveOk(tf_config);
    EXPECT_EQ(out["mode"], "local");
    EXPECT_EQ(out["cluster"], Json::object());
    EXPECT_EQ(out["task_type"], nullptr);
    EXPECT_EQ(out["master"], "");
    EXPECT_EQ(out["is_chief"], true);
    EXPECT_EQ(out["num_workers"], 1);
    EXPECT_EQ(out["id_in_cluster"], 0);
  }
}

TEST(DistctlResolveTest, InvalidConfigsExitTwoWithOneLine) {
  struct Case {
    std::string tf_config;
    std::string message;
  };
  const Case cases[] = {
      {R"({"cluster":{"worker":["a:1","b:1","c:1"]},"task":{"type":"worker","index":3}})",
       "TF_CONFIG: task index 3 is out of range for job \"worker\" (3 "
       "tasks)\n"},
      {"",
       "TF_CONFIG: is set but empty; unset it, or set it to {} for local "
       "mode\n"},
      {"[]", "TF_CONFIG: must be a JSON object, got a list\n"},
      {R"({"cluster":{"master":["a:1"]}})",
       "TF_CONFIG: job \"master\" is not a task type of multi-worker "
       "training; use \"chief\" instead (\"master\" is TF1's name for it) "
       "(allowed: chief, worker, ps, evaluator)\n"},
  };
  for (const Case& c : cases) {
    SubprocessResult result = Resolve(c.tf_config);
    EXPECT_EQ(result.exit_code, 2) << c.tf_config;
    EXPECT_EQ(result.stdout_text, "") << c.tf_config;
    EXPECT_EQ(result.stderr_text, c.message) << c.tf_config;
  }
  SubprocessResult malformed = Resolve("{\"cluster\": [");
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_THAT(malformed.stderr_text,
              ::testing::MatchesRegex("TF_CONFIG: not valid JSON: at line 1, "
                                      "column [0-9]+: [^\n]*\n"));
}

TEST(DistctlResolveTest, UnknownCommandIsUsageError) {
  SubprocessOptions options;
  options.argv = {kDistctl, "frobnicate"};
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 2);
  EXPECT_THAT(result->stderr_text,
              ::testing::HasSubstr("unknown command \"frobnicate\""));
}

}  // namespace
}  // namespace distrt
