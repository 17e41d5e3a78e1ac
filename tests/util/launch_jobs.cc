#include "tests/util/launch_jobs.h"

#include <signal.h>

#include <cerrno>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "runtime/util/file_system.h"

namespace distrt::testing {
namespace {

constexpr char kLaunch[] = "deploy/launch";
constexpr char kGenData[] = "tools/gen_data/gen_data";

}  // namespace

void GenerateData(const std::string& dir, const std::string& name,
                  const std::vector<std::string>& flags) {
  SubprocessOptions options;
  options.argv = {kGenData, "--out_dir=" + dir, "--prefix=" + name, "--seed=7"};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->exit_code, 0) << result->stderr_text;
}

SubprocessOptions LaunchProcess(const std::vector<std::string>& launch_flags,
                                const std::vector<std::string>& task_flags) {
  SubprocessOptions options;
  options.argv = {kLaunch, "--ps_server_bin=ps_server/ps_server",
                  "--worker_bin=worker/worker"};
  options.argv.insert(options.argv.end(), launch_flags.begin(),
                      launch_flags.end());
  options.argv.push_back("--");
  options.argv.insert(options.argv.end(), task_flags.begin(), task_flags.end());
  options.timeout = absl::Minutes(4);
  return options;
}

nlohmann::json ReadJson(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return nlohmann::json::parse(text.ok() ? *text : "null");
}

bool ProcessExists(int pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

int PidOf(const std::string& started_line) {
  const size_t at = started_line.rfind("(pid ");
  int pid = 0;
  if (at == std::string::npos ||
      !absl::SimpleAtoi(
          started_line.substr(at + 5, started_line.size() - at - 6), &pid)) {
    ADD_FAILURE() << "no pid in \"" << started_line << "\"";
  }
  return pid;
}

std::string ReadUntilLineWith(Subprocess& process, const std::string& text,
                              absl::Duration timeout, int max_lines) {
  for (int i = 0; i < max_lines; ++i) {
    absl::StatusOr<std::string> line = process.ReadStdoutLine(timeout);
    if (!line.ok()) {
      ADD_FAILURE() << "no line with \"" << text << "\": " << line.status();
      return "";
    }
    if (line->find(text) != std::string::npos) return *line;
  }
  ADD_FAILURE() << "no line with \"" << text << "\" in " << max_lines
                << " lines";
  return "";
}

}  // namespace distrt::testing
