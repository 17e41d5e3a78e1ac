#include "bench/bench_ps_cluster.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {

absl::StatusOr<BenchPsCluster> StartBenchPsCluster(
    int num_ps, const std::vector<std::string>& extra_flags,
    PsClient::Options options) {
  // StartPsProcesses runs this path relative to the working directory; say
  // what is missing rather than let every start fail with exec's error.
  std::error_code error;
  if (!std::filesystem::exists(testing::kPsServerBinary, error)) {
    return absl::FailedPreconditionError(absl::StrCat(
        testing::kPsServerBinary, " is not under the working directory ",
        std::filesystem::current_path(error).string(),
        " (run the bench with `bazel run`; its target must list "
        "//ps_server in data)"));
  }
  BenchPsCluster cluster;
  ASSIGN_OR_RETURN(std::vector<testing::PsProcess> tasks,
                   testing::StartPsProcesses(num_ps, extra_flags, "grpc+tcp"));
  cluster.tasks = std::move(tasks);
  const std::vector<std::string> addresses =
      testing::AddressesOf(cluster.tasks);
  ASSIGN_OR_RETURN(cluster.client, PsClient::Create(addresses, options));
  RETURN_IF_ERROR(cluster.client->WaitForServers(absl::Seconds(30)));
  options.data_plane = true;
  // Which transport each task got needs no line in a table.
  options.log = [](absl::string_view) {};
  ASSIGN_OR_RETURN(cluster.data_plane_client,
                   PsClient::Create(addresses, std::move(options)));
  RETURN_IF_ERROR(cluster.data_plane_client->WaitForServers(absl::Seconds(30)));
  return cluster;
}

}  // namespace distrt::bench
