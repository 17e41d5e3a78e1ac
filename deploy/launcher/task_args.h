#ifndef DISTRT_DEPLOY_LAUNCHER_TASK_ARGS_H_
#define DISTRT_DEPLOY_LAUNCHER_TASK_ARGS_H_

// The command-line flags the launcher passes to a task: what the user gave
// for every training task, plus the launcher's defaults (where the job dir
// keeps checkpoints, summaries and metrics) for the flags the user did not
// set. The user's value always wins.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace distrt::launcher {

// Whether `args` (a command line without argv[0]) sets the flag `name` in
// any form Abseil's parser accepts for a flag with a value: "--name=V",
// "--name V", "-name=V", "-name V". Arguments after a bare "--" are not
// flags and are not looked at.
bool SetsFlag(const std::vector<std::string>& args, absl::string_view name);

// The value `args` gives the flag `name` (the last one, as Abseil's
// parser keeps), in any form SetsFlag accepts; nullopt when it is not set.
std::optional<std::string> FlagValue(const std::vector<std::string>& args,
                                     absl::string_view name);

// `args` followed by "--<name>=<value>" for each (name, value) of
// `defaults`, in order, that `args` does not set (see SetsFlag). The
// defaults go before a bare "--" in `args` so that they stay flags.
std::vector<std::string> WithDefaultFlags(
    std::vector<std::string> args,
    const std::vector<std::pair<std::string, std::string>>& defaults);

}  // namespace distrt::launcher

#endif  // DISTRT_DEPLOY_LAUNCHER_TASK_ARGS_H_
