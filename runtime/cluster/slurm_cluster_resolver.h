#ifndef DISTRT_RUNTIME_CLUSTER_SLURM_CLUSTER_RESOLVER_H_
#define DISTRT_RUNTIME_CLUSTER_SLURM_CLUSTER_RESOLVER_H_

// SlurmClusterResolver: the cluster of a job step started by `srun`, derived
// from Slurm's environment by TensorFlow's rules
// (tf.distribute.cluster_resolver.SlurmClusterResolver):
//
//   this task's rank       SLURM_PROCID
//   tasks in the step      SLURM_STEP_NUM_TASKS
//   hosts, in step order   SLURM_STEP_NODELIST ("node[01-04,07]"), as Slurm
//                          numbers ranks (TF sorts them by name instead)
//   tasks on each host     SLURM_STEP_TASKS_PER_NODE ("2(x3),1")
//   a task's address       host:(port_base + its rank on the host)
//   jobs                   sorted by name, each taking the next ranks:
//                          {ps: 2, worker: 3} -> ranks 0-1 ps, 2-4 worker;
//                          by default every task is a worker
//
// With no chief job, worker 0 is the chief, as TF_CONFIG's rules make it.
// The evaluator, if asked for, is a task outside the cluster as in
// TF_CONFIG. Ranks must be laid out block by block (Slurm's default
// distribution): where SLURM_LOCALID / SLURMD_NODENAME disagree with that
// layout the resolver says so instead of giving two tasks one address.
//
// GPUs (TaskGpus, which only a process that uses GPUs needs): a host's GPUs are
// the ids in CUDA_VISIBLE_DEVICES (which Slurm sets from the step's gres) or
// else SLURM_STEP_GPUS / SLURM_JOB_GPUS; each task on the host takes
// SLURM_GPUS_PER_TASK of them (or an even share) by its rank on the host.
// TaskGpus() gives them for CUDA_VISIBLE_DEVICES, as TF's auto_set_gpu does.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cluster/cluster_resolver.h"

namespace distrt {

struct SlurmJob {
  std::string name;
  int num_tasks = 0;
};

// "ps:2,worker:3" (the --slurm_jobs flag). INVALID_ARGUMENT naming the item
// for a bad count, an unknown task type or a job given twice.
absl::StatusOr<std::vector<SlurmJob>> ParseSlurmJobs(absl::string_view text);

struct SlurmClusterOptions {
  // Empty: every task of the step is a worker.
  std::vector<SlurmJob> jobs;
  // TF's default.
  int port_base = 8888;
  std::optional<std::string> rpc_layer;
};

// Looks up an environment variable; absent when unset.
using EnvironmentLookup =
    std::function<std::optional<std::string>(absl::string_view name)>;
// The process's own environment.
std::optional<std::string> ProcessEnvironment(absl::string_view name);

class SlurmClusterResolver : public ClusterResolver {
 public:
  explicit SlurmClusterResolver(SlurmClusterOptions options,
                                EnvironmentLookup env = ProcessEnvironment);

  // Whether Slurm's step variables are set: the process runs under srun.
  static bool InSlurmStep(const EnvironmentLookup& env = ProcessEnvironment);

  // INVALID_ARGUMENT naming the variable or option for a step the rules
  // cannot place (missing or malformed variables, jobs that do not add up to
  // the step's tasks); FAILED_PRECONDITION for a non-block task layout.
  absl::StatusOr<TfConfig> Resolve() const override;

  // This task's GPU ids ("0,1") for CUDA_VISIBLE_DEVICES, or absent when the
  // step names no GPUs. INVALID_ARGUMENT when the host's tasks would need
  // more GPUs than it has.
  absl::StatusOr<std::optional<std::string>> TaskGpus() const;

 private:
  struct Layout;
  absl::StatusOr<Layout> ResolveLayout() const;

  SlurmClusterOptions options_;
  EnvironmentLookup env_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_SLURM_CLUSTER_RESOLVER_H_
