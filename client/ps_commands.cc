#include "client/ps_commands.h"

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "client/failure_description.h"
#include "rpc/ps_admin_client.h"
#include "runtime/util/format_bytes.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// `status` without its "RPC to ps task N (ADDRESS): " prefix, which the
// line that reports it already says.
absl::Status WithoutTaskName(const absl::Status& status,
                             const std::string& name,
                             const std::string& address) {
  const std::string task = absl::StrCat(" to ", name, " (", address, "): ");
  const absl::string_view message = status.message();
  const size_t at = message.find(task);
  if (at == absl::string_view::npos) return status;
  return absl::Status(status.code(), message.substr(at + task.size()));
}

// Calls `visit(address, name)` for every ps task, all at once (so that the
// command takes one task's deadline, not one per task), and prints one line
// per task in index order: its name, its address, and what `visit` returned,
// or why it failed (DescribeFailure: refused, unreachable, or the error).
// Returns the exit status: 0 when every call succeeded, 1 otherwise (or
// when there are no ps tasks).
int ForEachPsTask(
    const ClusterSpec& cluster, const rpc::TransportSecurity* security,
    std::FILE* out,
    const std::function<absl::StatusOr<std::string>(
        const std::string& address, const std::string& name)>& visit) {
  if (cluster.NumTasks(kPsJob) == 0) {
    std::fprintf(out, "the cluster has no ps tasks\n");
    return 1;
  }
  struct Task {
    std::string address;
    std::string name;
    absl::StatusOr<std::string> result;
  };
  std::vector<Task> tasks;
  for (const int index : cluster.TaskIndices(kPsJob)) {
    tasks.push_back(Task{*cluster.TaskAddress(kPsJob, index),
                         absl::StrCat("ps task ", index), std::string()});
  }
  {
    std::vector<std::thread> threads;
    threads.reserve(tasks.size());
    for (Task& task : tasks) {
      threads.emplace_back(
          [&task, &visit] { task.result = visit(task.address, task.name); });
    }
    for (std::thread& thread : threads) thread.join();
  }
  const bool uses_tls = security != nullptr && security->uses_tls();
  int failures = 0;
  for (const Task& task : tasks) {
    if (!task.result.ok()) ++failures;
    const std::string text =
        task.result.ok()
            ? *task.result
            : DescribeFailure(WithoutTaskName(task.result.status(), task.name,
                                              task.address),
                              uses_tls);
    std::fprintf(out, "%-10s %-28s %s\n", task.name.c_str(),
                 task.address.c_str(), text.c_str());
  }
  return failures == 0 ? 0 : 1;
}

// One line under its task's: a hash table's rows and what admission and
// eviction did, e.g.
//   table "C1": 1200 rows (75.0 KiB)  admitted 1500  evicted 250 by ttl,
//   50 by capacity  unknown lookups 900  dropped pushes 40  clock 4000
std::string DescribeTable(const rpc::PsTableStatus& table) {
  return absl::StrFormat(
      "    table \"%s\": %d rows (%s)  admitted %d  evicted %d by ttl, %d by "
      "capacity  unknown lookups %d  dropped pushes %d  clock %d",
      table.name, table.rows, FormatBytes(table.bytes), table.admitted,
      table.evicted_by_ttl, table.evicted_by_capacity, table.unknown_lookups,
      table.dropped_pushes, table.clock);
}

}  // namespace

int RunStatsCommand(const ClusterSpec& cluster, absl::Duration timeout,
                    const rpc::TransportSecurity* security, std::FILE* out) {
  return ForEachPsTask(
      cluster, security, out,
      [timeout, security](const std::string& address, const std::string& name)
          -> absl::StatusOr<std::string> {
        ASSIGN_OR_RETURN(
            rpc::PsTaskStatus status,
            rpc::GetPsTaskStatus(address, name, timeout, security));
        std::string text = absl::StrFormat(
            "up %-10s incarnation %016x  variables %d (%s, %d rows)  "
            "hash tables %d (%s, %d rows)  requests %d (%d failed)",
            absl::FormatDuration(
                absl::Trunc(status.uptime, absl::Milliseconds(100))),
            status.incarnation, status.num_variables,
            FormatBytes(status.variable_bytes), status.variable_rows,
            status.num_hash_tables, FormatBytes(status.hash_table_bytes),
            status.hash_table_rows, status.requests, status.failed_requests);
        for (const rpc::PsTableStatus& table : status.hash_tables) {
          absl::StrAppend(&text, "\n", DescribeTable(table));
        }
        return text;
      });
}

int RunShutdownCommand(const ClusterSpec& cluster, absl::Duration timeout,
                       const rpc::TransportSecurity* security, std::FILE* out) {
  return ForEachPsTask(
      cluster, security, out,
      [timeout, security](const std::string& address, const std::string& name)
          -> absl::StatusOr<std::string> {
        RETURN_IF_ERROR(rpc::ShutdownPsTask(address, name, "distctl shutdown",
                                            timeout, security));
        return std::string("shutting down");
      });
}

}  // namespace distrt
