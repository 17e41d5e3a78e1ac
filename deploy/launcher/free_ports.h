#ifndef DISTRT_DEPLOY_LAUNCHER_FREE_PORTS_H_
#define DISTRT_DEPLOY_LAUNCHER_FREE_PORTS_H_

// Choosing TCP ports for the tasks of a job started on one machine.
//
// The OS picks each port (a socket bound to port 0), so no port is fixed and
// none collides with a listener that exists now. The ports are only free at
// the moment they are chosen: another program may take one before the task
// that was given it starts listening. That window is short (the launcher
// starts the tasks right away) and the task then fails to start with a clear
// error, which is the accepted cost of not passing listening sockets down.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distrt::launcher {

// `count` distinct TCP ports that were free on `host` (a name or numeric
// address) when chosen. Every socket is held open until all ports are
// chosen, so that the OS cannot hand out the same port twice, and closed
// before returning. INVALID_ARGUMENT when `host` does not resolve or `count`
// is negative; UNAVAILABLE (with strerror) when a socket cannot be bound,
// e.g. `host` is not an address of this machine.
absl::StatusOr<std::vector<int>> PickFreePorts(absl::string_view host,
                                               int count);

// "host:port", with brackets around an IPv6 host ("[::1]:2222") as
// ParseTaskAddress expects; a host already in brackets keeps them.
std::string TaskAddressOn(absl::string_view host, int port);

}  // namespace distrt::launcher

#endif  // DISTRT_DEPLOY_LAUNCHER_FREE_PORTS_H_
