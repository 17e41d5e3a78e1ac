#include "client/ps_calls.h"

#include "absl/strings/str_cat.h"

namespace distrt::ps_client_internal {

grpc::ClientContext* CallBase::NewAttempt(
    std::chrono::system_clock::time_point deadline) {
  context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(deadline);
  context->set_wait_for_ready(wait_for_ready);
  return context.get();
}

std::vector<int> AllTasks(int n) {
  std::vector<int> tasks(n);
  for (int t = 0; t < n; ++t) tasks[t] = t;
  return tasks;
}

std::string PsTaskName(int task, const std::string& address) {
  return absl::StrCat("ps task ", task, " (", address, ")");
}

}  // namespace distrt::ps_client_internal
