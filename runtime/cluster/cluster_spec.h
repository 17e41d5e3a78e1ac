#ifndef DISTRT_RUNTIME_CLUSTER_CLUSTER_SPEC_H_
#define DISTRT_RUNTIME_CLUSTER_CLUSTER_SPEC_H_

// ClusterSpec: the tasks of a training job and their "host:port" addresses,
// grouped by task type (job), with TensorFlow's meaning (tf.train.ClusterSpec).
//
// A job is either dense (given as a list: task i is element i) or sparse
// (given as an object from task index to address, as Kubeflow writes for
// "dynamic" workers). A sparse job's tasks are exactly the indices it lists;
// its size is how many it lists, not the largest index plus one.
//
// A ClusterSpec is only ever built valid (see Create): task types are the
// four that multi-worker training knows, at most one chief and one evaluator,
// every address has a port, and no address is used twice. It is an immutable
// value, safe to share between threads.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distrt {

// The task types of multi-worker training (TF's multi_worker_util).
inline constexpr absl::string_view kChiefJob = "chief";
inline constexpr absl::string_view kWorkerJob = "worker";
inline constexpr absl::string_view kPsJob = "ps";
inline constexpr absl::string_view kEvaluatorJob = "evaluator";

struct JobSpec {
  std::string name;
  // Task index -> "host:port".
  std::map<int, std::string> tasks;
  // True when the job was given as an object keyed by index rather than as a
  // list; kept so that the spec prints back the way it was written.
  bool sparse = false;
};

class ClusterSpec {
 public:
  // An empty cluster: local mode.
  ClusterSpec() = default;

  // Validates `jobs` (see the file comment) and keeps their order. Errors are
  // INVALID_ARGUMENT with a message naming the job, task and problem.
  static absl::StatusOr<ClusterSpec> Create(std::vector<JobSpec> jobs);

  // True when the cluster has no tasks at all (no jobs, or only empty jobs).
  bool empty() const;

  const std::vector<JobSpec>& jobs() const { return jobs_; }
  bool HasJob(absl::string_view job) const { return FindJob(job) != nullptr; }
  // Null when there is no such job. Valid as long as this ClusterSpec.
  const JobSpec* FindJob(absl::string_view job) const;

  // Number of tasks in `job` (0 when there is no such job).
  int NumTasks(absl::string_view job) const;
  // The task indices of `job` in increasing order.
  std::vector<int> TaskIndices(absl::string_view job) const;
  // NOT_FOUND naming the job or index when the task does not exist.
  absl::StatusOr<std::string> TaskAddress(absl::string_view job,
                                          int index) const;

  // Total number of tasks across all jobs.
  int NumTasks() const;

 private:
  explicit ClusterSpec(std::vector<JobSpec> jobs) : jobs_(std::move(jobs)) {}

  std::vector<JobSpec> jobs_;
};

// OK for the four task types above; otherwise INVALID_ARGUMENT saying what
// to write instead where that is known ("master" -> "chief").
absl::Status ValidateTaskType(absl::string_view type);

struct HostPort {
  std::string host;  // "[v6-address]" keeps its brackets
  int port = 0;
};

// Splits a task address "host:port" with a non-empty host and a port in
// 1..65535 ("[v6-address]:port" for IPv6). The error message names the
// address but not its context.
absl::StatusOr<HostPort> ParseTaskAddress(absl::string_view address);

// ParseTaskAddress, for callers that only need to know it is valid.
absl::Status ValidateTaskAddress(absl::string_view address);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_CLUSTER_SPEC_H_
