#include "deploy/launcher/job_plan.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "deploy/launcher/free_ports.h"
#include "runtime/cluster/cluster_spec_json.h"
#include "runtime/cluster/json_util.h"
#include "runtime/cluster/rpc_layer.h"
#include "runtime/util/status_macros.h"

namespace distrt::launcher {
namespace {

absl::StatusOr<std::vector<JobSpec>> JobsFromCounts(const JobCounts& counts) {
  if (counts.num_ps < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the number of ps tasks must not be negative, got ", counts.num_ps));
  }
  if (counts.num_workers < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of workers must not be negative, got ",
                     counts.num_workers));
  }
  // Addresses are filled in later; only the indices matter here.
  auto dense_job = [](absl::string_view name, int size) {
    JobSpec job;
    job.name = std::string(name);
    for (int i = 0; i < size; ++i) job.tasks.emplace(i, "");
    return job;
  };
  std::vector<JobSpec> jobs;
  if (counts.chief) jobs.push_back(dense_job(kChiefJob, 1));
  if (counts.num_workers > 0) {
    jobs.push_back(dense_job(kWorkerJob, counts.num_workers));
  }
  if (counts.num_ps > 0) jobs.push_back(dense_job(kPsJob, counts.num_ps));
  if (counts.evaluator) jobs.push_back(dense_job(kEvaluatorJob, 1));
  return jobs;
}

// The jobs of the cluster spec or of the counts, whichever was given (not
// yet checked as a cluster, and without addresses from counts).
absl::StatusOr<std::vector<JobSpec>> JobsOf(const JobPlanOptions& options) {
  if (options.cluster_spec_text.has_value()) {
    // Parsed as given first, so that an invalid spec is reported as written
    // (two chiefs, a bad task type) rather than after its ports change.
    ASSIGN_OR_RETURN(ClusterSpec shape,
                     ParseClusterSpecText(*options.cluster_spec_text));
    return shape.jobs();
  }
  return JobsFromCounts(*options.counts);
}

int NumTasks(const std::vector<JobSpec>& jobs) {
  int num_tasks = 0;
  for (const JobSpec& job : jobs) {
    num_tasks += static_cast<int>(job.tasks.size());
  }
  return num_tasks;
}

absl::Status CheckSomethingTrains(const std::vector<JobSpec>& jobs) {
  int num_trainers = 0;
  for (const JobSpec& job : jobs) {
    if (job.name == kChiefJob || job.name == kWorkerJob) {
      num_trainers += static_cast<int>(job.tasks.size());
    }
  }
  if (num_trainers == 0) {
    return absl::InvalidArgumentError(
        "the job has no chief and no worker task; nothing would train");
  }
  return absl::OkStatus();
}

// Gives every task of `jobs` a free port on options.bind_host; returns the
// ps tasks' data plane ports. With the TCP data plane, each ps task's data
// plane port is picked with the others, so that no task's port is taken by
// a data plane that the OS gave it while the later tasks were not listening
// yet.
absl::StatusOr<std::vector<int>> AssignFreePorts(const JobPlanOptions& options,
                                                 std::vector<JobSpec>& jobs) {
  const int num_tasks = NumTasks(jobs);
  int num_ps = 0;
  for (const JobSpec& job : jobs) {
    if (job.name == kPsJob) num_ps = static_cast<int>(job.tasks.size());
  }
  const int num_data_planes = options.rpc_layer == "grpc+tcp" ? num_ps : 0;
  ASSIGN_OR_RETURN(
      std::vector<int> ports,
      PickFreePorts(options.bind_host, num_tasks + num_data_planes));
  size_t next_port = 0;
  for (JobSpec& job : jobs) {
    for (auto& [index, address] : job.tasks) {
      address = TaskAddressOn(options.bind_host, (ports)[next_port++]);
    }
  }
  return std::vector<int>(ports.begin() + num_tasks, ports.end());
}

// The cluster's tasks, grouped by type (ps, chief, worker, evaluator) and
// by index within a type.
std::vector<LaunchTask> LaunchTasks(const ClusterSpec& cluster) {
  std::vector<LaunchTask> tasks;
  for (absl::string_view type :
       {kPsJob, kChiefJob, kWorkerJob, kEvaluatorJob}) {
    const JobSpec* job = cluster.FindJob(type);
    if (job == nullptr) continue;
    for (const auto& [index, address] : job->tasks) {
      tasks.push_back(LaunchTask{std::string(type), index, address});
    }
  }
  return tasks;
}

// The index in plan.tasks of the first chief, else of the first worker:
// the job's primary task (JobPlan::primary).
int PrimaryTask(const JobPlan& plan) {
  const absl::string_view primary_type =
      plan.cluster.NumTasks(kChiefJob) > 0 ? kChiefJob : kWorkerJob;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    if (plan.tasks[i].type == primary_type) return static_cast<int>(i);
  }
  return 0;  // not reached: the job has a chief or a worker
}

}  // namespace

std::string LaunchTask::label() const { return absl::StrCat(type, ":", index); }

std::string LaunchTask::file_stem() const {
  return absl::StrCat(type, "-", index);
}

absl::StatusOr<JobPlan> MakeJobPlan(const JobPlanOptions& options) {
  const bool have_spec = options.cluster_spec_text.has_value();
  const bool have_counts = options.counts.has_value();
  if (have_spec == have_counts) {
    return absl::InvalidArgumentError(
        have_spec ? "give either a cluster spec or task counts, not both"
                  : "give either a cluster spec or task counts (how many ps "
                    "tasks and workers, whether there is a chief)");
  }

  if (absl::StatusOr<RpcLayer> layer = ParseRpcLayer(options.rpc_layer);
      !layer.ok()) {
    return layer.status();
  }

  ASSIGN_OR_RETURN(std::vector<JobSpec> jobs, JobsOf(options));
  RETURN_IF_ERROR(CheckSomethingTrains(jobs));
  if (options.keep_addresses && !have_spec) {
    return absl::InvalidArgumentError(
        "--keep_addresses keeps a cluster spec's addresses; give "
        "--cluster_spec");
  }
  std::vector<int> data_plane_ports;
  if (!options.keep_addresses) {
    ASSIGN_OR_RETURN(data_plane_ports, AssignFreePorts(options, jobs));
  }

  ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpec::Create(std::move(jobs)));

  JobPlan plan;
  plan.cluster = std::move(cluster);
  plan.rpc_layer = options.rpc_layer;
  plan.data_plane_ports = std::move(data_plane_ports);
  plan.tasks = LaunchTasks(plan.cluster);
  plan.primary = PrimaryTask(plan);
  return plan;
}

std::string TfConfigText(const ClusterSpec& cluster, const LaunchTask& task,
                         const std::string& rpc_layer) {
  Json config = Json::object();
  config["cluster"] = ClusterSpecToJson(cluster);
  config["task"] = Json{{"type", task.type}, {"index", task.index}};
  if (!rpc_layer.empty()) config["rpc_layer"] = rpc_layer;
  return config.dump();
}

}  // namespace distrt::launcher
