#include "client/ps_commands.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rpc/ps_admin_client.h"

namespace distrt {
namespace {

bool HasPsTasks(const ClusterSpec& cluster, std::FILE* out) {
  if (cluster.NumTasks(kPsJob) > 0) return true;
  std::fprintf(out, "the cluster has no ps tasks\n");
  return false;
}

}  // namespace

int RunStatsCommand(const ClusterSpec& cluster, absl::Duration timeout,
                    std::FILE* out) {
  if (!HasPsTasks(cluster, out)) return 1;
  int failures = 0;
  for (const int index : cluster.TaskIndices(kPsJob)) {
    const std::string address = *cluster.TaskAddress(kPsJob, index);
    const std::string name = absl::StrCat("ps task ", index);
    absl::StatusOr<rpc::PsTaskStatus> status =
        rpc::GetPsTaskStatus(address, name, timeout);
    if (!status.ok()) {
      ++failures;
      std::fprintf(out, "%-10s %-28s unreachable: %s\n", name.c_str(),
                   address.c_str(),
                   std::string(status.status().message()).c_str());
      continue;
    }
    std::fprintf(out, "%-10s %-28s up %-10s incarnation %016llx\n",
                 name.c_str(), address.c_str(),
                 absl::FormatDuration(
                     absl::Trunc(status->uptime, absl::Milliseconds(100)))
                     .c_str(),
                 static_cast<unsigned long long>(status->incarnation));
  }
  return failures == 0 ? 0 : 1;
}

int RunShutdownCommand(const ClusterSpec& cluster, absl::Duration timeout,
                       std::FILE* out) {
  if (!HasPsTasks(cluster, out)) return 1;
  int failures = 0;
  for (const int index : cluster.TaskIndices(kPsJob)) {
    const std::string address = *cluster.TaskAddress(kPsJob, index);
    const std::string name = absl::StrCat("ps task ", index);
    absl::Status status =
        rpc::ShutdownPsTask(address, name, "distctl shutdown", timeout);
    if (status.ok()) {
      std::fprintf(out, "%-10s %-28s shutting down\n", name.c_str(),
                   address.c_str());
    } else {
      ++failures;
      std::fprintf(out, "%-10s %-28s %s\n", name.c_str(), address.c_str(),
                   std::string(status.message()).c_str());
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace distrt
