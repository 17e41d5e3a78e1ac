#ifndef DISTRT_RPC_PS_ADMIN_CLIENT_H_
#define DISTRT_RPC_PS_ADMIN_CLIENT_H_

// Blocking calls for operating ps tasks: status and shutdown. Each call has
// a deadline; errors name the task and the address.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rpc/transport_security.h"

namespace distrt::rpc {

// One hash embedding table's shard on a ps task (see HashTableInfo and
// runtime/ps/hash_embedding_table.h's HashTableCounters).
struct PsTableStatus {
  std::string name;
  int64_t rows = 0;
  int64_t bytes = 0;
  int64_t admitted = 0;
  int64_t evicted_by_ttl = 0;
  int64_t evicted_by_capacity = 0;
  int64_t unknown_lookups = 0;
  int64_t dropped_pushes = 0;
  int64_t clock = 0;
};

struct PsTaskStatus {
  int task_index = 0;
  uint64_t incarnation = 0;
  absl::Duration uptime;
  // What it holds, and the requests it served (see GetStatusResponse).
  int64_t num_variables = 0;
  int64_t variable_bytes = 0;
  int64_t variable_rows = 0;
  int64_t num_hash_tables = 0;
  int64_t hash_table_rows = 0;
  int64_t hash_table_bytes = 0;
  int64_t requests = 0;
  int64_t failed_requests = 0;
  std::vector<PsTableStatus> hash_tables;  // by name
};

// `task_name` (e.g. "ps task 1") is only used in error messages.
// `security`: the job's TLS and token (null: plain TCP, no token).
absl::StatusOr<PsTaskStatus> GetPsTaskStatus(
    const std::string& address, const std::string& task_name,
    absl::Duration timeout, const TransportSecurity* security = nullptr);

absl::Status ShutdownPsTask(const std::string& address,
                            const std::string& task_name,
                            const std::string& reason, absl::Duration timeout,
                            const TransportSecurity* security = nullptr);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_PS_ADMIN_CLIENT_H_
