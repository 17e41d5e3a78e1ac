#include "rpc/in_process_ps_tasks.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {

absl::StatusOr<InProcessPsTasks> StartInProcessPsTasks(int num_tasks) {
  InProcessPsTasks tasks;
  for (int task = 0; task < num_tasks; ++task) {
    PsGrpcServer::Options options;
    options.listen_address = "127.0.0.1:0";
    options.task_index = task;
    options.stop_grace = absl::Seconds(1);
    ASSIGN_OR_RETURN(std::unique_ptr<PsGrpcServer> server,
                     PsGrpcServer::Start(options));
    tasks.addresses.push_back(absl::StrCat("127.0.0.1:", server->port()));
    tasks.servers.push_back(std::move(server));
  }
  return tasks;
}

std::vector<int64_t> RequestsPerTask(
    absl::Span<const ps::GetStatusResponse> stats, absl::string_view method) {
  std::vector<int64_t> counts;
  for (const ps::GetStatusResponse& task : stats) {
    auto it = task.requests().find(std::string(method));
    counts.push_back(it == task.requests().end() ? 0 : it->second);
  }
  return counts;
}

}  // namespace distrt::rpc
