#ifndef DISTRT_RPC_TCP_SOCKETS_H_
#define DISTRT_RPC_TCP_SOCKETS_H_

// Plain TCP sockets for the runtime's own protocols beside gRPC (the ps
// tasks' data plane, the workers' TLS ring): listening on a host,
// connecting by a deadline, and naming a peer. Errors say what failed
// without saying for whom; callers prefix their own name.

#include <sys/socket.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace distrt::rpc {

struct ListeningSocket {
  int fd = -1;  // the caller's to close
  int port = 0;
};

// Listens on `host` ("" or "0.0.0.0": every interface) and `port` (0: the
// OS picks one), on the first of the host's addresses that can be bound.
// UNAVAILABLE "cannot resolve the host ..." or "cannot listen on ...".
absl::StatusOr<ListeningSocket> ListenTcp(const std::string& host, int port);

// A connected socket to `host`:`port` (non-blocking, close-on-exec, no
// Nagle delay), trying each address of the host until `deadline`.
// UNAVAILABLE "cannot resolve: ..." or "cannot connect: ..."; the latter
// is DEADLINE_EXCEEDED when the deadline passed.
absl::StatusOr<int> ConnectTcp(const std::string& host, int port,
                               absl::Time deadline);

// "host:port", an IPv6 literal in brackets.
std::string HostPortText(const std::string& host, int port);

// The numeric "host:port" of `address`; `fallback` when it has none.
std::string PeerName(const sockaddr_storage& address, socklen_t length,
                     const std::string& fallback);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_TCP_SOCKETS_H_
