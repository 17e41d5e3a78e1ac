#ifndef DISTRT_RPC_PS_ADMIN_CLIENT_H_
#define DISTRT_RPC_PS_ADMIN_CLIENT_H_

// Blocking calls for operating ps tasks: status and shutdown. Each call has
// a deadline; errors name the task and the address.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace distrt::rpc {

struct PsTaskStatus {
  int task_index = 0;
  uint64_t incarnation = 0;
  absl::Duration uptime;
};

// `task_name` (e.g. "ps task 1") is only used in error messages.
absl::StatusOr<PsTaskStatus> GetPsTaskStatus(const std::string& address,
                                             const std::string& task_name,
                                             absl::Duration timeout);

absl::Status ShutdownPsTask(const std::string& address,
                            const std::string& task_name,
                            const std::string& reason, absl::Duration timeout);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_PS_ADMIN_CLIENT_H_
