#include "deploy/launcher/job_plan.h"

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cluster/cluster_spec_json.h"
#include "runtime/cluster/json_util.h"
#include "runtime/cluster/tf_config.h"

namespace distrt::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<std::string> Labels(const JobPlan& plan) {
  std::vector<std::string> labels;
  for (const LaunchTask& task : plan.tasks) labels.push_back(task.label());
  return labels;
}

JobPlanOptions Counts(int num_ps, int num_workers, bool chief, bool evaluator) {
  JobPlanOptions options;
  options.counts = JobCounts{num_ps, num_workers, chief, evaluator};
  return options;
}

JobPlanOptions Spec(std::string text) {
  JobPlanOptions options;
  options.cluster_spec_text = std::move(text);
  return options;
}

TEST(JobPlanTest, CountsGiveEveryTaskInStartOrder) {
  absl::StatusOr<JobPlan> plan = MakeJobPlan(Counts(2, 2, true, true));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Labels(*plan), ElementsAre("ps:0", "ps:1", "chief:0", "worker:0",
                                         "worker:1", "evaluator:0"));
  EXPECT_EQ(plan->tasks[plan->primary].label(), "chief:0");
  EXPECT_EQ(plan->cluster.NumTasks(kPsJob), 2);
  EXPECT_EQ(plan->cluster.NumTasks(kWorkerJob), 2);
  EXPECT_EQ(plan->cluster.NumTasks(kChiefJob), 1);
  EXPECT_EQ(plan->cluster.NumTasks(kEvaluatorJob), 1);

  std::set<std::string> addresses;
  for (const LaunchTask& task : plan->tasks) {
    EXPECT_THAT(task.address, StartsWith("127.0.0.1:"));
    // The plan's tasks and its cluster agree on every address.
    EXPECT_EQ(*plan->cluster.TaskAddress(task.type, task.index), task.address);
    addresses.insert(task.address);
  }
  EXPECT_EQ(addresses.size(), plan->tasks.size());
}

TEST(JobPlanTest, ZeroCountsLeaveTheirJobsOut) {
  absl::StatusOr<JobPlan> plan = MakeJobPlan(Counts(0, 1, false, false));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Labels(*plan), ElementsAre("worker:0"));
  EXPECT_FALSE(plan->cluster.HasJob(kPsJob));
  EXPECT_FALSE(plan->cluster.HasJob(kChiefJob));
}

TEST(JobPlanTest, WithoutAChiefWorkerZeroIsPrimary) {
  absl::StatusOr<JobPlan> plan = MakeJobPlan(Counts(1, 3, false, false));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Labels(*plan),
              ElementsAre("ps:0", "worker:0", "worker:1", "worker:2"));
  EXPECT_EQ(plan->primary, 1);
}

TEST(JobPlanTest, SpecAddressesAreReplacedAndJobOrderKept) {
  absl::StatusOr<JobPlan> plan = MakeJobPlan(Spec(R"({"cluster": {
      "chief": ["host:2222"], "worker": ["host:2223", "host:2224"],
      "ps": ["host:2225"]}})"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Labels(*plan),
              ElementsAre("ps:0", "chief:0", "worker:0", "worker:1"));
  for (const LaunchTask& task : plan->tasks) {
    EXPECT_THAT(task.address, StartsWith("127.0.0.1:"));
  }
  ASSERT_EQ(plan->cluster.jobs().size(), 3u);
  EXPECT_EQ(plan->cluster.jobs()[0].name, "chief");
  EXPECT_EQ(plan->cluster.jobs()[2].name, "ps");
}

TEST(JobPlanTest, KeptAddressesStayAsWritten) {
  JobPlanOptions options = Spec(R"({"cluster": {
      "chief": ["chief0:2222"], "ps": ["ps0:2222", "ps1:2222"]}})");
  options.keep_addresses = true;
  absl::StatusOr<JobPlan> plan = MakeJobPlan(options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tasks.size(), 3u);
  EXPECT_EQ(plan->tasks[0].address, "ps0:2222");
  EXPECT_EQ(plan->tasks[1].address, "ps1:2222");
  EXPECT_EQ(plan->tasks[2].address, "chief0:2222");

  JobPlanOptions counts = Counts(1, 1, false, false);
  counts.keep_addresses = true;
  absl::StatusOr<JobPlan> refused = MakeJobPlan(counts);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("give --cluster_spec"));
}

TEST(JobPlanTest, SparseJobsKeepTheirIndices) {
  // As Kubeflow writes them, in a whole TF_CONFIG whose task is ignored.
  absl::StatusOr<JobPlan> plan = MakeJobPlan(Spec(R"({
      "cluster": {"worker": {"1": "w1:2222", "3": "w3:2222"},
                  "ps": ["p0:2222"]},
      "task": {"type": "worker", "index": 3}})"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Labels(*plan), ElementsAre("ps:0", "worker:1", "worker:3"));
  // No chief and no worker 0: the lowest worker is the runtime's chief.
  EXPECT_EQ(plan->tasks[plan->primary].label(), "worker:1");
  const JobSpec* workers = plan->cluster.FindJob(kWorkerJob);
  ASSERT_NE(workers, nullptr);
  EXPECT_TRUE(workers->sparse);
  const Json cluster = ClusterSpecToJson(plan->cluster);
  ASSERT_TRUE(cluster["worker"].is_object());
  EXPECT_TRUE(cluster["worker"].contains("1"));
  EXPECT_TRUE(cluster["worker"].contains("3"));
  EXPECT_THAT(cluster["worker"]["3"].get<std::string>(),
              StartsWith("127.0.0.1:"));
}

TEST(JobPlanTest, BindHostIsEveryTasksHost) {
  JobPlanOptions options = Counts(1, 1, false, false);
  options.bind_host = "localhost";
  absl::StatusOr<JobPlan> plan = MakeJobPlan(options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const LaunchTask& task : plan->tasks) {
    EXPECT_THAT(task.address, StartsWith("localhost:"));
  }
}

void ExpectInvalid(const JobPlanOptions& options, const std::string& part) {
  absl::StatusOr<JobPlan> plan = MakeJobPlan(options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument)
      << plan.status();
  EXPECT_THAT(plan.status().message(), HasSubstr(part));
}

TEST(JobPlanTest, SpecAndCountsAreExclusive) {
  JobPlanOptions both = Counts(1, 1, false, false);
  both.cluster_spec_text = R"({"worker": ["a:1"]})";
  ExpectInvalid(both, "not both");
  ExpectInvalid(JobPlanOptions(), "give either a cluster spec or task counts");
}

TEST(JobPlanTest, NegativeCountsAreRejected) {
  ExpectInvalid(Counts(-1, 1, false, false),
                "number of ps tasks must not be negative, got -1");
  ExpectInvalid(Counts(1, -2, true, false),
                "number of workers must not be negative, got -2");
}

TEST(JobPlanTest, AJobThatCannotTrainIsRejected) {
  ExpectInvalid(Counts(2, 0, false, true), "no chief and no worker");
  ExpectInvalid(Spec(R"({"ps": ["a:1"], "worker": []})"),
                "no chief and no worker");
  ExpectInvalid(Spec("{}"), "no chief and no worker");
}

TEST(JobPlanTest, InvalidSpecsAreReportedAsWritten) {
  ExpectInvalid(Spec(R"({"chief": ["a:1", "b:2"]})"),
                "job \"chief\" has 2 tasks; there may be at most one chief");
  ExpectInvalid(Spec(R"({"master": ["a:1"]})"), "\"master\"");
  ExpectInvalid(Spec(R"({"worker": ["a:1"],)"), "");
}

TEST(JobPlanTest, UnresolvableBindHostIsInvalid) {
  JobPlanOptions options = Counts(0, 1, false, false);
  options.bind_host = "no such host.invalid";
  ExpectInvalid(options, "cannot resolve host \"no such host.invalid\"");
}

TEST(JobPlanTest, TfConfigTextIsWhatTheRuntimeReads) {
  absl::StatusOr<JobPlan> plan = MakeJobPlan(Counts(1, 2, true, true));
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const LaunchTask& task : plan->tasks) {
    const std::string text = TfConfigText(plan->cluster, task);
    absl::StatusOr<TfConfig> config = ParseTfConfig(text);
    ASSERT_TRUE(config.ok()) << config.status() << " in " << text;
    ASSERT_TRUE(config->task.has_value());
    EXPECT_EQ(config->task->type, task.type);
    EXPECT_EQ(config->task->index, task.index);
    EXPECT_EQ(*config->cluster.TaskAddress(task.type, task.index),
              task.address);
    EXPECT_EQ(ClusterSpecToJson(config->cluster),
              ClusterSpecToJson(plan->cluster));
  }
  const std::string ps0 = TfConfigText(plan->cluster, plan->tasks[0]);
  EXPECT_TRUE(absl::StrContains(ps0, R"("task":{"type":"ps","index":0})"))
      << ps0;
}

TEST(TfConfigTextTest, CarriesTheJobsRpcLayerWhenItHasOne) {
  JobPlanOptions options = Counts(1, 1, false, false);
  options.rpc_layer = "grpc+tcp";
  absl::StatusOr<JobPlan> plan = MakeJobPlan(options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->rpc_layer, "grpc+tcp");
  // The ps task's data plane gets a port of its own, picked with the
  // tasks'.
  ASSERT_EQ(plan->data_plane_ports.size(), 1u);
  for (const LaunchTask& task : plan->tasks) {
    EXPECT_FALSE(absl::EndsWith(task.address,
                                absl::StrCat(":", plan->data_plane_ports[0])));
  }
  const std::string text =
      TfConfigText(plan->cluster, plan->tasks[0], plan->rpc_layer);
  absl::StatusOr<TfConfig> config = ParseTfConfig(text);
  ASSERT_TRUE(config.ok()) << config.status() << " in " << text;
  EXPECT_EQ(config->rpc_layer, "grpc+tcp");
  EXPECT_FALSE(ParseTfConfig(TfConfigText(plan->cluster, plan->tasks[0]))
                   ->rpc_layer.has_value());

  options.rpc_layer = "grpc+verbs";
  absl::StatusOr<JobPlan> refused = MakeJobPlan(options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "grpc+verbs"))
      << refused.status();
}

TEST(LaunchTaskTest, Names) {
  const LaunchTask task{"worker", 3, "h:1"};
  EXPECT_EQ(task.label(), "worker:3");
  EXPECT_EQ(task.file_stem(), "worker-3");
}

}  // namespace
}  // namespace distrt::launcher
