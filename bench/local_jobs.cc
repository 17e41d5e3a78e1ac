#include "bench/local_jobs.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

// `relative` (e.g. "deploy/launch") under `dir`, absolute; NOT_FOUND naming
// the target that //bench must list in its data to have it there.
absl::StatusOr<std::string> FindBinary(const std::filesystem::path& dir,
                                       const std::string& relative,
                                       const std::string& target) {
  const std::string path = (dir / relative).lexically_normal().string();
  if (access(path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "cannot find ", path, " (", target,
        " must be in the data of //bench; run it with `bazel run`)"));
  }
  return path;
}

}  // namespace

absl::StatusOr<ProjectBinaries> FindProjectBinaries(const BenchConfig& config) {
  std::error_code error;
  const std::filesystem::path dir =
      std::filesystem::absolute(config.binaries_dir, error);
  if (error) {
    return absl::NotFoundError(absl::StrCat("cannot resolve the binaries dir ",
                                            config.binaries_dir, ": ",
                                            error.message()));
  }
  ProjectBinaries binaries;
  const struct {
    std::string* field;
    const char* relative;
    const char* target;
  } wanted[] = {
      {&binaries.launch, "deploy/launch", "//deploy:launch"},
      {&binaries.worker, "worker/worker", "//worker"},
      {&binaries.ps_server, "ps_server/ps_server", "//ps_server"},
      {&binaries.gen_data, "tools/gen_data/gen_data", "//tools/gen_data"},
  };
  for (const auto& binary : wanted) {
    ASSIGN_OR_RETURN(std::string path,
                     FindBinary(dir, binary.relative, binary.target));
    *binary.field = std::move(path);
  }
  return binaries;
}

absl::StatusOr<std::string> GenerateData(const ProjectBinaries& binaries,
                                         const std::vector<std::string>& flags,
                                         absl::Duration timeout) {
  testing::SubprocessOptions options;
  options.argv = {binaries.gen_data};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  options.timeout = timeout;
  ASSIGN_OR_RETURN(testing::SubprocessResult result,
                   testing::RunSubprocess(options));
  if (result.exit_code != 0) {
    return absl::InternalError(absl::StrCat(
        "gen_data ", absl::StrJoin(flags, " "), " exited ", result.exit_code,
        " (signal ", result.term_signal, "): ", Tail(result.stderr_text)));
  }
  std::string line = result.stdout_text;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

testing::SubprocessOptions LaunchCommand(
    const ProjectBinaries& binaries,
    const std::vector<std::string>& launch_flags,
    const std::vector<std::string>& task_flags, absl::Duration timeout) {
  testing::SubprocessOptions options;
  options.argv = {binaries.launch, "--ps_server_bin=" + binaries.ps_server,
                  "--worker_bin=" + binaries.worker};
  options.argv.insert(options.argv.end(), launch_flags.begin(),
                      launch_flags.end());
  options.argv.push_back("--");
  options.argv.insert(options.argv.end(), task_flags.begin(), task_flags.end());
  options.env["BUILD_WORKING_DIRECTORY"] = std::nullopt;
  options.timeout = timeout;
  return options;
}

absl::Status RunLaunch(const testing::SubprocessOptions& command) {
  absl::StatusOr<testing::SubprocessResult> result =
      testing::RunSubprocess(command);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat("launch: ", result.status().message()));
  }
  if (result->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat(absl::StrJoin(command.argv, " "), " exited ",
                     result->exit_code, " (signal ", result->term_signal,
                     "): ", Tail(result->stdout_text + result->stderr_text)));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobMetrics> ReadJobMetrics(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const nlohmann::json json =
      nlohmann::json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  // find(), not [], which on a const object asserts that the key exists.
  auto is_number = [&json](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_number();
  };
  if (!json.is_object() || !is_number("global_step") ||
      !is_number("examples_per_sec") || !is_number("wall_secs")) {
    return absl::InternalError(absl::StrCat(
        path,
        " is not a job's metrics (global_step, examples_per_sec and "
        "wall_secs): ",
        Tail(text, 500)));
  }
  JobMetrics metrics;
  metrics.global_step = json.at("global_step").get<int64_t>();
  metrics.examples_per_sec = json.at("examples_per_sec").get<double>();
  metrics.wall_secs = json.at("wall_secs").get<double>();
  if (is_number("eval_accuracy")) {
    metrics.eval_accuracy = json.at("eval_accuracy").get<double>();
  }
  return metrics;
}

std::string Tail(const std::string& text, size_t max_chars) {
  if (text.size() <= max_chars) return text;
  return absl::StrCat("...", text.substr(text.size() - max_chars));
}

}  // namespace distrt::bench
