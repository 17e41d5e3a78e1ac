#ifndef DISTRT_TESTS_UTIL_LAUNCH_JOBS_H_
#define DISTRT_TESTS_UTIL_LAUNCH_JOBS_H_

// Whole jobs started by `launch` for integration tests: data from gen_data
// (known ground truth), the launch command line with the binaries from the
// test's runfiles (it must list //deploy:launch, //ps_server, //worker and
// //tools/gen_data in its data), and what a job leaves in its job dir.

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/util/subprocess.h"

namespace distrt::testing {

// Writes DIR/NAME.train.svm and DIR/NAME.eval.svm with gen_data `flags`
// (and --seed=7); records a test failure when it cannot.
void GenerateData(const std::string& dir, const std::string& name,
                  const std::vector<std::string>& flags);

// launch with `launch_flags`, then "--" and `task_flags`; a 4-minute limit.
SubprocessOptions LaunchProcess(const std::vector<std::string>& launch_flags,
                                const std::vector<std::string>& task_flags);

// The JSON file at `path`; null (and a test failure) when it cannot be read.
nlohmann::json ReadJson(const std::string& path);

bool ProcessExists(int pid);

// The pid in one of launch's start-up lines, "launch: started ps:1 at
// HOST:PORT (pid 4711)": 4711. 0 and a test failure when the line has none.
int PidOf(const std::string& started_line);

// Reads `process`'s stdout until a line containing `text` (returned), for
// at most `max_lines` lines and `timeout` per line; a test failure and an
// empty string otherwise.
std::string ReadUntilLineWith(Subprocess& process, const std::string& text,
                              absl::Duration timeout, int max_lines = 5000);

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_LAUNCH_JOBS_H_
