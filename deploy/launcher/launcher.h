#ifndef DISTRT_DEPLOY_LAUNCHER_LAUNCHER_H_
#define DISTRT_DEPLOY_LAUNCHER_LAUNCHER_H_

// Launch: what the `launch` program does, as a library (launch_main.cc is
// its flags): plans the cluster, finds the ps_server and worker binaries,
// makes the job dir, starts every task with its TF_CONFIG and flags, and
// supervises them until the job ends (JobRunner). Ctrl-C and SIGTERM stop
// the job in order: Launch installs process-wide handlers for them (and
// ignores SIGPIPE) and leaves them in place, so it is meant for a program
// whose work is the launch, as `launch` is.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "deploy/launcher/job_plan.h"
#include "deploy/launcher/job_runner.h"
#include "rpc/transport_security.h"

namespace distrt::launcher {

inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

struct LaunchOptions {
  // The cluster: a cluster spec's text and/or task counts, and the host
  // every task listens on.
  JobPlanOptions plan;
  // Where the spec came from, named in errors about it.
  std::string cluster_spec_path;
  // The binaries; empty: found beside this program (FindTaskBinary).
  std::string worker_bin;
  std::string ps_server_bin;
  // Empty: /tmp/distrt-job-<time>-<pid>.
  std::string job_dir;
  absl::Duration finish_grace = absl::Seconds(120);
  absl::Duration stop_timeout = absl::Seconds(10);
  int max_restarts = 0;
  // Mutual TLS and a token of the job's own, or the user's files (not
  // both).
  bool secure = false;
  rpc::TransportSecurityOptions user_security;
  // For every chief, worker and evaluator (what follows "--").
  std::vector<std::string> task_flags;
};

// Runs the job; returns launch's exit status: 0 when the primary task (the
// chief, else worker 0) finished, kExitFailed when a task failed,
// kExitBadInput for bad options (said on stderr, prefixed "launch: "),
// 128 + N when stopped by signal N.
int Launch(const LaunchOptions& options);

// Every task's command: ps tasks run `ps_server_bin` listening on
// `bind_host`, or on their own address's host when it is empty (taking back
// their shards from `checkpoint_dir` when restarted); the others run
// `worker_bin` with `training_flags`. Each gets its TF_CONFIG and its security
// flags (security_args[t]).
struct TaskCommandOptions {
  std::string worker_bin;
  std::string ps_server_bin;
  std::string bind_host;
  std::vector<std::string> training_flags;
  std::vector<std::vector<std::string>> security_args;  // one per task
};
std::vector<TaskCommand> MakeTaskCommands(const JobPlan& plan,
                                          const TaskCommandOptions& options);

// The task flags with the job dir's defaults for what the user did not set
// (checkpoints, summaries and metrics in the job dir; the rendezvous host,
// unless bind_host is empty: then each task's own address's host).
std::vector<std::string> TrainingFlags(const std::vector<std::string>& flags,
                                       const std::string& job_dir,
                                       const std::string& bind_host);

// The binary `flag_value` names, or else `relative_path` (e.g.
// "ps_server/ps_server") found next to this program: in its Bazel runfiles
// tree, or beside it in bazel-bin. Errors name `flag_name`.
absl::StatusOr<std::string> FindTaskBinary(absl::string_view flag_name,
                                           const std::string& flag_value,
                                           absl::string_view relative_path);

// A bare IPv6 address in brackets, as ps_server appends ":port" to it.
std::string ListenHost(const std::string& host);

}  // namespace distrt::launcher

#endif  // DISTRT_DEPLOY_LAUNCHER_LAUNCHER_H_
