#ifndef DISTRT_RUNTIME_CLUSTER_TF_CONFIG_H_
#define DISTRT_RUNTIME_CLUSTER_TF_CONFIG_H_

// TfConfig: the TF_CONFIG environment variable, read as TensorFlow reads it
// (TFConfigClusterResolver plus multi_worker_util's validation), so that the
// JSON written for TensorFlow, by hand or by Kubeflow's TFJob operator, works
// unchanged:
//
//   {"cluster": {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"],
//                "ps": ["p0:2222"]},
//    "task": {"type": "worker", "index": 1},
//    "rpc_layer": "grpc", "environment": "cloud"}
//
// Local mode (one process, no cluster): TF_CONFIG unset, "{}", or a
// "cluster" with no tasks. Everything else must be consistent; see
// ParseTfConfig for what is checked.

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cluster/cluster_spec.h"

namespace distrt {

// One task of the cluster: "/job:<type>/task:<index>".
struct TaskId {
  std::string type;
  int index = 0;

  friend bool operator==(const TaskId& a, const TaskId& b) {
    return a.type == b.type && a.index == b.index;
  }
};

struct TfConfig {
  ClusterSpec cluster;
  // Absent when TF_CONFIG has no "task" (a client that only needs the
  // cluster); always present in a valid distributed config of a task.
  std::optional<TaskId> task;
  std::optional<std::string> rpc_layer;    // e.g. "grpc"
  std::optional<std::string> environment;  // Kubeflow writes "cloud"

  bool is_local() const { return cluster.empty(); }
};

// Parses TF_CONFIG's text. Errors are INVALID_ARGUMENT with a message that
// starts "TF_CONFIG: " and names the problem, e.g.
//   TF_CONFIG: task index 3 is out of range for job "worker" (3 tasks)
// Checked: valid JSON object; "cluster" (see ClusterSpec); "task" an object
// with a string "type" and an integer (or digit-string) "index"; the task's
// type is a job of the cluster (the evaluator may be outside it, as index 0)
// and its index is one of that job's tasks; "rpc_layer" and "environment"
// strings when present. Unknown top-level keys are ignored, as TF does.
absl::StatusOr<TfConfig> ParseTfConfig(absl::string_view text);

// The checks ParseTfConfig makes of what it read, for a TfConfig built in
// code (SimpleClusterResolver): the task is one of the cluster's (or the
// evaluator). The same INVALID_ARGUMENT messages.
absl::Status ValidateTfConfig(const TfConfig& config);

// Reads the TF_CONFIG environment variable: unset means local mode; set but
// empty is an error (an unset variable is written as no variable at all).
// Only main() functions should call this; libraries take a TfConfig.
absl::StatusOr<TfConfig> TfConfigFromEnvironment();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_TF_CONFIG_H_
