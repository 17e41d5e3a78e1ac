#ifndef DISTRT_CLIENT_PS_COMMANDS_H_
#define DISTRT_CLIENT_PS_COMMANDS_H_

// `distctl stats` and `distctl shutdown`: operations on every ps task of a
// cluster. Each calls every task at once, each call within `timeout`,
// prints one line per task (what it said, or "refused (WHY)" /
// "unreachable (WHY)" as DescribeFailure says) and returns the process exit
// status: 0 when every task answered, 1 otherwise.

#include <cstdio>

#include "absl/time/time.h"
#include "rpc/transport_security.h"
#include "runtime/cluster/cluster_spec.h"

namespace distrt {

// `distctl stats` also prints, under each task's line, one line per hash
// embedding table it holds: rows, admitted, evicted by ttl and by capacity,
// unknown lookups, dropped pushes and the table's clock (global step).
// `security`: the job's TLS and cluster token (null: plain TCP, no token).
int RunStatsCommand(const ClusterSpec& cluster, absl::Duration timeout,
                    const rpc::TransportSecurity* security, std::FILE* out);
int RunShutdownCommand(const ClusterSpec& cluster, absl::Duration timeout,
                       const rpc::TransportSecurity* security, std::FILE* out);

}  // namespace distrt

#endif  // DISTRT_CLIENT_PS_COMMANDS_H_
