#include "runtime/cluster/slurm_cluster_resolver.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/slurm_host_list.h"
#include "runtime/util/status_macros.h"

namespace distrt {

// One task of the step, placed by the rules in the header.
struct SlurmPlacedTask {
  std::string host;
  int local_rank = 0;  // among the host's tasks
  std::string job;
  int index = 0;
};

struct SlurmClusterResolver::Layout {
  std::vector<SlurmPlacedTask> tasks;  // by rank
  int rank = 0;
  std::vector<SlurmJob> jobs;  // sorted by name
};

namespace {

absl::Status BadSlurm(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("Slurm: ", what));
}

// A step variable that Slurm's rules cannot read: `why` (from
// slurm_host_list.h) says what is wrong with its value.
absl::Status BadVariable(absl::string_view name, absl::string_view value,
                         const absl::Status& why) {
  return absl::Status(why.code(), absl::StrCat("Slurm: ", name, "=\"", value,
                                               "\": ", why.message()));
}

absl::StatusOr<std::string> Required(const EnvironmentLookup& env,
                                     absl::string_view name) {
  std::optional<std::string> value = env(name);
  if (!value.has_value() || value->empty()) {
    return BadSlurm(absl::StrCat(name,
                                 " is not set (is this process started by "
                                 "srun inside a Slurm job?)"));
  }
  return *std::move(value);
}

absl::StatusOr<int> NonNegative(absl::string_view name,
                                absl::string_view value) {
  int number = 0;
  if (!absl::SimpleAtoi(value, &number) || number < 0) {
    return BadSlurm(
        absl::StrCat(name, "=\"", value, "\" is not a non-negative integer"));
  }
  return number;
}

// The step's hosts in the step's order, with the number of tasks on each.
struct StepHosts {
  std::vector<std::string> hosts;
  std::vector<int> counts;  // one per host
};

// Reads SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE, which must name
// distinct hosts with `num_tasks` tasks in all.
absl::StatusOr<StepHosts> ReadStepHosts(const EnvironmentLookup& env,
                                        int num_tasks) {
  ASSIGN_OR_RETURN(std::string nodelist, Required(env, "SLURM_STEP_NODELIST"));
  ASSIGN_OR_RETURN(std::string tasks_per_node,
                   Required(env, "SLURM_STEP_TASKS_PER_NODE"));
  StepHosts step;
  absl::StatusOr<std::vector<std::string>> expanded_hosts =
      ExpandSlurmHostList(nodelist);
  if (!expanded_hosts.ok()) {
    return BadVariable("SLURM_STEP_NODELIST", nodelist,
                       expanded_hosts.status());
  }
  step.hosts = *std::move(expanded_hosts);
  absl::StatusOr<std::vector<int>> expanded_counts =
      ExpandSlurmTasksPerNode(tasks_per_node);
  if (!expanded_counts.ok()) {
    return BadVariable("SLURM_STEP_TASKS_PER_NODE", tasks_per_node,
                       expanded_counts.status());
  }
  step.counts = *std::move(expanded_counts);
  if (step.hosts.size() != step.counts.size()) {
    return BadSlurm(absl::StrCat("SLURM_STEP_NODELIST=\"", nodelist,
                                 "\" names ", step.hosts.size(),
                                 " hosts but SLURM_STEP_TASKS_PER_NODE=\"",
                                 tasks_per_node, "\" ", step.counts.size()));
  }
  // Hosts in the step's order, which is how Slurm numbers the ranks of a
  // block distribution (node9 before node10). TF's resolver sorts them by
  // name instead, which differs once names are not zero-padded.
  std::set<std::string> seen_hosts;
  for (const std::string& host : step.hosts) {
    if (!seen_hosts.insert(host).second) {
      return BadSlurm(absl::StrCat("SLURM_STEP_NODELIST=\"", nodelist,
                                   "\" names ", host, " twice"));
    }
  }
  const int listed = std::accumulate(step.counts.begin(), step.counts.end(), 0);
  if (listed != num_tasks) {
    return BadSlurm(absl::StrCat(
        "SLURM_STEP_TASKS_PER_NODE=\"", tasks_per_node, "\" adds up to ",
        listed, " tasks but SLURM_STEP_NUM_TASKS is ", num_tasks));
  }
  return step;
}

// The step's tasks by rank, placed block-wise on its hosts (job and index
// still unset); each host's tasks take ports from `port_base` on.
absl::StatusOr<std::vector<SlurmPlacedTask>> PlaceTasks(const StepHosts& step,
                                                        int port_base) {
  std::vector<SlurmPlacedTask> tasks;
  for (size_t h = 0; h < step.hosts.size(); ++h) {
    const std::string& host = step.hosts[h];
    const int count = step.counts[h];
    if (port_base + count - 1 > 65535) {
      return BadSlurm(absl::StrCat("--slurm_port_base=", port_base,
                                   " leaves no port for the ", count,
                                   " tasks on ", host));
    }
    for (int local = 0; local < count; ++local) {
      tasks.push_back(SlurmPlacedTask{host, local, "", 0});
    }
  }
  return tasks;
}

// The jobs asked for (all `num_tasks` tasks workers when none is), sorted
// by name; they take consecutive ranks of `tasks` in that order, which
// this sets.
absl::StatusOr<std::vector<SlurmJob>> AssignJobs(
    std::vector<SlurmJob> jobs, int num_tasks,
    std::vector<SlurmPlacedTask>& tasks) {
  if (jobs.empty()) jobs.push_back({std::string(kWorkerJob), num_tasks});
  std::sort(jobs.begin(), jobs.end(), [](const SlurmJob& a, const SlurmJob& b) {
    return a.name < b.name;
  });
  int asked = 0;
  for (const SlurmJob& job : jobs) asked += job.num_tasks;
  if (asked != num_tasks) {
    std::vector<std::string> items;
    for (const SlurmJob& job : jobs) {
      items.push_back(absl::StrCat(job.name, ":", job.num_tasks));
    }
    return BadSlurm(absl::StrCat(
        "--slurm_jobs=", absl::StrJoin(items, ","), " asks for ", asked,
        " tasks but the step has ", num_tasks, " (srun --ntasks)"));
  }
  int rank = 0;
  for (const SlurmJob& job : jobs) {
    for (int index = 0; index < job.num_tasks; ++index, ++rank) {
      tasks[rank].job = job.name;
      tasks[rank].index = index;
    }
  }
  return jobs;
}

// A cyclic or arbitrary distribution numbers tasks differently; then the
// addresses of the block layout would not be the tasks' own. Checks task
// `rank`'s SLURM_LOCALID and SLURMD_NODENAME, where set, against `own`.
absl::Status CheckBlockDistribution(const EnvironmentLookup& env, int rank,
                                    const SlurmPlacedTask& own) {
  if (std::optional<std::string> local = env("SLURM_LOCALID");
      local.has_value() && *local != absl::StrCat(own.local_rank)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Slurm: task ", rank, " has SLURM_LOCALID=", *local,
        " but the block layout that TF's rules assume puts it at rank ",
        own.local_rank, " on ", own.host,
        "; start the step with srun --distribution=block"));
  }
  if (std::optional<std::string> node = env("SLURMD_NODENAME");
      node.has_value() && *node != own.host) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Slurm: task ", rank, " runs on ", *node,
        " but the block layout that TF's rules assume puts it on ", own.host,
        "; start the step with srun --distribution=block"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<SlurmJob>> ParseSlurmJobs(absl::string_view text) {
  std::vector<SlurmJob> jobs;
  std::set<std::string> seen;
  for (absl::string_view item :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(item, absl::MaxSplits(':', 1));
    SlurmJob job;
    job.name = std::string(parts.first);
    if (item.find(':') == absl::string_view::npos ||
        !absl::SimpleAtoi(parts.second, &job.num_tasks) || job.num_tasks < 1) {
      return BadSlurm(
          absl::StrCat("--slurm_jobs: \"", item,
                       "\" is not JOB:COUNT with a count of at least 1 (e.g. "
                       "ps:2,worker:3)"));
    }
    if (absl::Status type = ValidateTaskType(job.name); !type.ok()) {
      return BadSlurm(absl::StrCat("--slurm_jobs: ", type.message()));
    }
    if ((job.name == kChiefJob || job.name == kEvaluatorJob) &&
        job.num_tasks != 1) {
      return BadSlurm(absl::StrCat(
          "--slurm_jobs: \"", item, "\" asks for ", job.num_tasks, " ",
          job.name, " tasks; a job has one ", job.name, " at most"));
    }
    if (!seen.insert(job.name).second) {
      return BadSlurm(
          absl::StrCat("--slurm_jobs: \"", job.name, "\" is given twice"));
    }
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) {
    return BadSlurm("--slurm_jobs: no jobs (e.g. ps:2,worker:3)");
  }
  return jobs;
}

std::optional<std::string> ProcessEnvironment(absl::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

SlurmClusterResolver::SlurmClusterResolver(SlurmClusterOptions options,
                                           EnvironmentLookup env)
    : options_(std::move(options)), env_(std::move(env)) {}

bool SlurmClusterResolver::InSlurmStep(const EnvironmentLookup& env) {
  return env("SLURM_PROCID").has_value() &&
         env("SLURM_STEP_NUM_TASKS").has_value() &&
         env("SLURM_STEP_NODELIST").has_value();
}

absl::StatusOr<SlurmClusterResolver::Layout>
SlurmClusterResolver::ResolveLayout() const {
  Layout layout;
  ASSIGN_OR_RETURN(std::string procid, Required(env_, "SLURM_PROCID"));
  ASSIGN_OR_RETURN(layout.rank, NonNegative("SLURM_PROCID", procid));
  ASSIGN_OR_RETURN(std::string num_tasks_text,
                   Required(env_, "SLURM_STEP_NUM_TASKS"));
  ASSIGN_OR_RETURN(int num_tasks,
                   NonNegative("SLURM_STEP_NUM_TASKS", num_tasks_text));
  ASSIGN_OR_RETURN(const StepHosts step, ReadStepHosts(env_, num_tasks));
  if (layout.rank >= num_tasks) {
    return BadSlurm(
        absl::StrCat("SLURM_PROCID=", layout.rank,
                     " is not below SLURM_STEP_NUM_TASKS=", num_tasks));
  }
  ASSIGN_OR_RETURN(layout.tasks, PlaceTasks(step, options_.port_base));
  ASSIGN_OR_RETURN(layout.jobs,
                   AssignJobs(options_.jobs, num_tasks, layout.tasks));
  RETURN_IF_ERROR(
      CheckBlockDistribution(env_, layout.rank, layout.tasks[layout.rank]));
  return layout;
}

absl::StatusOr<TfConfig> SlurmClusterResolver::Resolve() const {
  ASSIGN_OR_RETURN(Layout layout, ResolveLayout());
  // Jobs take consecutive ranks (ResolveLayout), so each job's tasks are
  // the next num_tasks of layout.tasks.
  std::vector<JobSpec> specs;
  size_t rank = 0;
  for (const SlurmJob& job : layout.jobs) {
    JobSpec spec{job.name, {}, false};
    for (int index = 0; index < job.num_tasks; ++index, ++rank) {
      const SlurmPlacedTask& task = layout.tasks[rank];
      spec.tasks[index] =
          absl::StrCat(task.host, ":", options_.port_base + task.local_rank);
    }
    // The evaluator takes a rank but stays outside the cluster.
    if (job.name != kEvaluatorJob) specs.push_back(std::move(spec));
  }
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::Create(std::move(specs));
  if (!cluster.ok()) {
    return absl::Status(cluster.status().code(),
                        absl::StrCat("Slurm: ", cluster.status().message()));
  }
  TfConfig config;
  config.cluster = *std::move(cluster);
  const SlurmPlacedTask& own = layout.tasks[layout.rank];
  config.task = TaskId{own.job, own.index};
  config.rpc_layer = options_.rpc_layer;
  // Valid by construction: the task is one of the cluster's, or evaluator 0.
  return config;
}

absl::StatusOr<std::optional<std::string>> SlurmClusterResolver::TaskGpus()
    const {
  ASSIGN_OR_RETURN(Layout layout, ResolveLayout());
  std::optional<std::string> visible;
  std::string source;
  for (absl::string_view name :
       {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    visible = env_(name);
    if (visible.has_value() && !visible->empty()) {
      source = std::string(name);
      break;
    }
    visible.reset();
  }
  if (!visible.has_value()) return std::nullopt;
  const std::vector<std::string> ids =
      absl::StrSplit(*visible, ',', absl::SkipEmpty());
  const SlurmPlacedTask& own = layout.tasks[layout.rank];
  // ps tasks keep no GPUs: the host's GPUs are shared by its other tasks.
  if (own.job == kPsJob) return std::string();
  int sharing = 0;
  int own_share = 0;
  for (const SlurmPlacedTask& task : layout.tasks) {
    if (task.host != own.host || task.job == kPsJob) continue;
    if (&task == &own) own_share = sharing;
    ++sharing;
  }
  int per_task = 0;
  if (std::optional<std::string> asked = env_("SLURM_GPUS_PER_TASK");
      asked.has_value()) {
    // "[type:]count", as --gpus-per-task takes it.
    absl::string_view count = *asked;
    if (const size_t colon = count.rfind(':');
        colon != absl::string_view::npos) {
      count = count.substr(colon + 1);
    }
    if (!absl::SimpleAtoi(count, &per_task) || per_task < 1) {
      return BadSlurm(absl::StrCat("SLURM_GPUS_PER_TASK=\"", *asked,
                                   "\" is not a GPU count"));
    }
    // Slurm bound this task's GPUs itself (--gpu-bind): keep them.
    if (static_cast<int>(ids.size()) == per_task) return *visible;
  } else {
    per_task = static_cast<int>(ids.size()) / sharing;
  }
  if (per_task < 1 || per_task * sharing > static_cast<int>(ids.size())) {
    return BadSlurm(absl::StrCat(
        own.host, " has ", ids.size(), " GPUs (", source, "=", *visible,
        ") for its ", sharing, " tasks that are not ps tasks",
        per_task > 0 ? absl::StrCat(" at ", per_task, " each") : ""));
  }
  std::vector<std::string> mine(ids.begin() + own_share * per_task,
                                ids.begin() + (own_share + 1) * per_task);
  return absl::StrJoin(mine, ",");
}

}  // namespace distrt
