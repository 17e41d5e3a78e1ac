// distctl: inspect and operate a running cluster from the command line.
//
//   distctl resolve    print what this process's TF_CONFIG resolves to
//
// Exit status: 0 on success, 2 on bad input (TF_CONFIG, flags, command).

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "client/resolve_command.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {
namespace {

constexpr char kUsage[] = R"(distctl COMMAND

Commands:
  resolve   Read TF_CONFIG from the environment and print, as one JSON
            object, what a task started with it will see: mode, cluster,
            task_type, task_index, rpc_layer, environment, master, is_chief,
            num_workers, id_in_cluster. Exit status 2 and one line on stderr
            when TF_CONFIG is invalid.)";

constexpr int kExitBadInput = 2;

int Resolve() {
  absl::StatusOr<TfConfig> config = TfConfigFromEnvironment();
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", std::string(config.status().message()).c_str());
    return kExitBadInput;
  }
  std::printf("%s\n", DescribeResolvedConfig(*config).dump(2).c_str());
  return 0;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::fprintf(stderr, "distctl: no command given\n\nusage: %s\n", kUsage);
    return kExitBadInput;
  }
  const std::string command = args[1];
  if (command == "resolve" && args.size() == 2) return Resolve();
  if (command == "help") {
    std::printf("usage: %s\n", kUsage);
    return 0;
  }
  std::fprintf(stderr, "distctl: %s\n\nusage: %s\n",
               (command == "resolve"
                    ? std::string("resolve takes no arguments")
                    : absl::StrCat("unknown command \"", command, "\""))
                   .c_str(),
               kUsage);
  return kExitBadInput;
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) { return distrt::Main(argc, argv); }
