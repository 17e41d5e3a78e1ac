#include "deploy/launcher/task_args.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace distrt::launcher {

bool SetsFlag(const std::vector<std::string>& args, absl::string_view name) {
  for (absl::string_view arg : args) {
    if (arg == "--") return false;
    if (!absl::ConsumePrefix(&arg, "-")) continue;
    absl::ConsumePrefix(&arg, "-");
    if (!absl::ConsumePrefix(&arg, name)) continue;
    if (arg.empty() || arg.front() == '=') return true;
  }
  return false;
}

std::optional<std::string> FlagValue(const std::vector<std::string>& args,
                                     absl::string_view name) {
  std::optional<std::string> value;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "-")) continue;
    absl::ConsumePrefix(&arg, "-");
    if (!absl::ConsumePrefix(&arg, name)) continue;
    if (absl::ConsumePrefix(&arg, "=")) {
      value = std::string(arg);
    } else if (arg.empty() && i + 1 < args.size()) {
      value = args[++i];
    }
  }
  return value;
}

std::vector<std::string> WithDefaultFlags(
    std::vector<std::string> args,
    const std::vector<std::pair<std::string, std::string>>& defaults) {
  std::vector<std::string> added;
  for (const auto& [name, value] : defaults) {
    if (!SetsFlag(args, name))
      added.push_back(absl::StrCat("--", name, "=", value));
  }
  const auto end_of_flags = std::find(args.begin(), args.end(), "--");
  args.insert(end_of_flags, added.begin(), added.end());
  return args;
}

}  // namespace distrt::launcher
