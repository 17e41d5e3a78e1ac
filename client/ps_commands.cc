#include "client/ps_commands.h"

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rpc/ps_admin_client.h"
#include "runtime/util/format_bytes.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Calls `visit(address, name)` for every ps task in index order and prints
// one line per task: its name, its address, and what `visit` returned, or
// `error_prefix` and the error. Returns the exit status: 0 when every call
// succeeded, 1 otherwise (or when there are no ps tasks).
int ForEachPsTask(
    const ClusterSpec& cluster, std::FILE* out, absl::string_view error_prefix,
    const std::function<absl::StatusOr<std::string>(
        const std::string& address, const std::string& name)>& visit) {
  if (cluster.NumTasks(kPsJob) == 0) {
    std::fprintf(out, "the cluster has no ps tasks\n");
    return 1;
  }
  int failures = 0;
  for (const int index : cluster.TaskIndices(kPsJob)) {
    const std::string address = *cluster.TaskAddress(kPsJob, index);
    const std::string name = absl::StrCat("ps task ", index);
    absl::StatusOr<std::string> result = visit(address, name);
    if (!result.ok()) ++failures;
    const std::string text =
        result.ok() ? *result
                    : absl::StrCat(error_prefix, result.status().message());
    std::fprintf(out, "%-10s %-28s %s\n", name.c_str(), address.c_str(),
                 text.c_str());
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int RunStatsCommand(const ClusterSpec& cluster, absl::Duration timeout,
                    const rpc::TransportSecurity* security, std::FILE* out) {
  return ForEachPsTask(
      cluster, out, "unreachable: ",
      [timeout, security](const std::string& address, const std::string& name)
          -> absl::StatusOr<std::string> {
        ASSIGN_OR_RETURN(
            rpc::PsTaskStatus status,
            rpc::GetPsTaskStatus(address, name, timeout, security));
        return absl::StrFormat(
            "up %-10s incarnation %016x  variables %d (%s, %d rows)  "
            "hash tables %d (%s, %d rows)  requests %d (%d failed)",
            absl::FormatDuration(
                absl::Trunc(status.uptime, absl::Milliseconds(100))),
            status.incarnation, status.num_variables,
            FormatBytes(status.variable_bytes), status.variable_rows,
            status.num_hash_tables, FormatBytes(status.hash_table_bytes),
            status.hash_table_rows, status.requests, status.failed_requests);
      });
}

int RunShutdownCommand(const ClusterSpec& cluster, absl::Duration timeout,
                       const rpc::TransportSecurity* security, std::FILE* out) {
  return ForEachPsTask(
      cluster, out, "",
      [timeout, security](const std::string& address, const std::string& name)
          -> absl::StatusOr<std::string> {
        RETURN_IF_ERROR(rpc::ShutdownPsTask(address, name, "distctl shutdown",
                                            timeout, security));
        return std::string("shutting down");
      });
}

}  // namespace distrt
