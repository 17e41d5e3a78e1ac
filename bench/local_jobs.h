#ifndef DISTRT_BENCH_LOCAL_JOBS_H_
#define DISTRT_BENCH_LOCAL_JOBS_H_

// LocalJobs: what the end_to_end and time_to_accuracy families share to run
// the project's own binaries as a user would: gen_data for a data set, and
// `launch` for a whole job on this machine, whose metrics.json is then read.
//
// Every process is started through testing::Subprocess, with a timeout after
// which it is killed; `launch` kills its tasks when it dies (they are started
// with PR_SET_PDEATHSIG), so nothing outlives a family. Not thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/bench_family.h"
#include "tests/util/subprocess.h"

namespace distrt::bench {

// Absolute paths of the project's binaries, so that they stay right whatever
// directory a child process runs in.
struct ProjectBinaries {
  std::string launch;     // deploy/launch
  std::string worker;     // worker/worker
  std::string ps_server;  // ps_server/ps_server
  std::string gen_data;   // tools/gen_data/gen_data
};

// The binaries under config.binaries_dir. NOT_FOUND naming the first one
// that is missing and the data dependency of //bench that brings it.
absl::StatusOr<ProjectBinaries> FindProjectBinaries(const BenchConfig& config);

// Runs gen_data with `flags` (--out_dir, --prefix, --rows, ...) and returns
// the one line it prints (what it wrote, and the true model's accuracy).
// INTERNAL with its stderr when it fails; DEADLINE_EXCEEDED after `timeout`.
absl::StatusOr<std::string> GenerateData(const ProjectBinaries& binaries,
                                         const std::vector<std::string>& flags,
                                         absl::Duration timeout);

// The command line of `launch launch_flags... -- task_flags...`, with the
// task binaries named explicitly. BUILD_WORKING_DIRECTORY is removed from
// its environment: `bazel run //bench` sets it, and launch would change to
// that directory.
testing::SubprocessOptions LaunchCommand(
    const ProjectBinaries& binaries,
    const std::vector<std::string>& launch_flags,
    const std::vector<std::string>& task_flags, absl::Duration timeout);

// Runs `launch` to completion. INTERNAL with the end of its output when it
// exits non-zero; DEADLINE_EXCEEDED (after killing it and so its tasks) when
// it outlives command.timeout.
absl::Status RunLaunch(const testing::SubprocessOptions& command);

// The fields of a job's metrics.json (worker/final_metrics.h) the families
// use.
struct JobMetrics {
  int64_t global_step = 0;
  std::optional<double> eval_accuracy;
  // The chief's own examples/s and the seconds of its training loop.
  double examples_per_sec = 0;
  double wall_secs = 0;
};

// INTERNAL naming the file when it cannot be read or lacks a field.
absl::StatusOr<JobMetrics> ReadJobMetrics(const std::string& path);

// The last `max_chars` characters of `text`, for error messages that quote
// a process's output.
std::string Tail(const std::string& text, size_t max_chars = 2000);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_LOCAL_JOBS_H_
