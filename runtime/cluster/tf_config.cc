#include "runtime/cluster/tf_config.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/cluster/cluster_spec_json.h"
#include "runtime/cluster/json_util.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

constexpr absl::string_view kPrefix = "TF_CONFIG: ";

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(kPrefix, message));
}

absl::Status WithPrefix(const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(kPrefix, status.message()));
}

absl::StatusOr<std::optional<std::string>> OptionalString(
    const Json& config, absl::string_view key) {
  const std::string name(key);
  if (!config.contains(name) || config[name].is_null()) return std::nullopt;
  if (!config[name].is_string()) {
    return Invalid(absl::StrCat("\"", key, "\" must be a string, got ",
                                DescribeJson(config[name])));
  }
  return config[name].get<std::string>();
}

absl::StatusOr<TaskId> TaskFromJson(const Json& task) {
  if (!task.is_object()) {
    return Invalid(absl::StrCat(
        "\"task\" must be an object like {\"type\": \"worker\", \"index\": "
        "0}, got ",
        DescribeJson(task)));
  }
  if (!task.contains("type")) return Invalid("\"task\" has no \"type\"");
  if (!task["type"].is_string()) {
    return Invalid(absl::StrCat("task \"type\" must be a string, got ",
                                DescribeJson(task["type"])));
  }
  if (!task.contains("index")) return Invalid("\"task\" has no \"index\"");
  absl::StatusOr<int> index = ParseTaskIndex(task["index"], "task index");
  if (!index.ok()) return WithPrefix(index.status());
  std::string type = task["type"].get<std::string>();
  if (absl::Status s = ValidateTaskType(type); !s.ok()) {
    return Invalid(absl::StrCat("task type ", s.message()));
  }
  return TaskId{std::move(type), *index};
}

std::string JoinJobNames(const ClusterSpec& cluster) {
  std::vector<std::string> names;
  for (const JobSpec& job : cluster.jobs()) names.push_back(job.name);
  return absl::StrJoin(names, ", ");
}

// The task must name a task that exists (multi_worker_util's checks, except
// that a sparse job's indices are checked against those present).
absl::Status ValidateTaskInCluster(const TaskId& task,
                                   const ClusterSpec& cluster) {
  const JobSpec* job = cluster.FindJob(task.type);
  if (job == nullptr) {
    if (task.type == kEvaluatorJob) {
      // TF allows the evaluator to run outside the cluster, by itself.
      if (task.index == 0) return absl::OkStatus();
      return Invalid(absl::StrCat("task index ", task.index,
                                  " is out of range for an evaluator outside "
                                  "the cluster (there is one evaluator, 0)"));
    }
    return Invalid(absl::StrCat(
        "task type \"", task.type,
        "\" is not a job in \"cluster\" (jobs: ", JoinJobNames(cluster), ")"));
  }
  if (job->tasks.count(task.index) == 1) return absl::OkStatus();
  if (!job->sparse) {
    return Invalid(absl::StrCat("task index ", task.index,
                                " is out of range for job \"", task.type,
                                "\" (", job->tasks.size(), " tasks)"));
  }
  return Invalid(absl::StrCat(
      "task index ", task.index, " is not in job \"", task.type,
      "\" (its indices: ", absl::StrJoin(cluster.TaskIndices(task.type), ", "),
      ")"));
}

}  // namespace

absl::StatusOr<TfConfig> ParseTfConfig(absl::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == absl::string_view::npos) {
    return Invalid(
        "is set but empty; unset it, or set it to {} for local mode");
  }
  absl::StatusOr<Json> json = ParseJson(text);
  if (!json.ok()) return WithPrefix(json.status());
  if (!json->is_object()) {
    return Invalid(
        absl::StrCat("must be a JSON object, got ", DescribeJson(*json)));
  }

  // Kubeflow's enableDynamicWorker writes the cluster under this key with
  // only the task's own worker in it. Read as TF reads it (no "cluster")
  // it would silently mean local mode: a worker training alone.
  if (json->contains("sparseCluster")) {
    return Invalid(
        "\"sparseCluster\" (what Kubeflow's TFJob operator writes with "
        "enableDynamicWorker) is not supported: every task needs the whole "
        "cluster under \"cluster\" to shard its input and find the chief; "
        "turn enableDynamicWorker off");
  }
  TfConfig config;
  if (json->contains("cluster") && !(*json)["cluster"].is_null()) {
    absl::StatusOr<ClusterSpec> cluster =
        ClusterSpecFromJson((*json)["cluster"]);
    if (!cluster.ok()) return WithPrefix(cluster.status());
    config.cluster = *std::move(cluster);
  }
  if (json->contains("task") && !(*json)["task"].is_null()) {
    ASSIGN_OR_RETURN(TaskId task, TaskFromJson((*json)["task"]));
    config.task = std::move(task);
  }
  ASSIGN_OR_RETURN(std::optional<std::string> rpc_layer,
                   OptionalString(*json, "rpc_layer"));
  config.rpc_layer = std::move(rpc_layer);
  ASSIGN_OR_RETURN(std::optional<std::string> environment,
                   OptionalString(*json, "environment"));
  config.environment = std::move(environment);

  // In local mode there is nothing for the task to be checked against.
  if (!config.is_local() && config.task.has_value()) {
    RETURN_IF_ERROR(ValidateTaskInCluster(*config.task, config.cluster));
  }
  return config;
}

absl::Status ValidateTfConfig(const TfConfig& config) {
  if (config.is_local() || !config.task.has_value()) return absl::OkStatus();
  return ValidateTaskInCluster(*config.task, config.cluster);
}

absl::StatusOr<TfConfig> TfConfigFromEnvironment() {
  const char* text = std::getenv("TF_CONFIG");
  if (text == nullptr) return TfConfig{};
  return ParseTfConfig(text);
}

}  // namespace distrt
