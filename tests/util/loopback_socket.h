#ifndef DISTRT_TESTS_UTIL_LOOPBACK_SOCKET_H_
#define DISTRT_TESTS_UTIL_LOOPBACK_SOCKET_H_

// Plain TCP connections to a server on 127.0.0.1, for tests that send raw
// bytes to it or hold connections open against it, as one or several
// clients: on Linux all of 127.0.0.0/8 is loopback, so a test can connect
// from 127.0.0.2, 127.0.0.3, ... to be several sources on one host.

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace distrt::testing {

// How ConnectLoopbackSocket connects.
struct LoopbackSocketOptions {
  // The address to connect from (its port is chosen by the kernel).
  std::string source = "127.0.0.1";
  // When positive, reads give up after this long (SO_RCVTIMEO: EAGAIN)
  // rather than hang a broken test; zero: they block.
  absl::Duration receive_timeout = absl::ZeroDuration();
  // Whether the socket is non-blocking (O_NONBLOCK). Then the connection
  // may still be in progress when the socket is returned: poll it for
  // POLLOUT and read SO_ERROR to learn how it ended.
  bool nonblocking = false;
};

// A TCP socket (close-on-exec) connected to 127.0.0.1:`port` from
// `options.source`. Returns its fd, which the caller owns and closes; -1
// and a test failure (ADD_FAILURE) when it cannot be made, bound to the
// source or connected.
int ConnectLoopbackSocket(int port, const LoopbackSocketOptions& options = {});

// `per_source` sockets from each of `sources` in turn (a source named
// twice connects twice as many), each connected as ConnectLoopbackSocket
// connects with `options` and that source in place of options.source.
// The caller closes them; one that could not be connected is -1 (and a
// test failure).
std::vector<int> ConnectLoopbackSockets(int port,
                                        const std::vector<std::string>& sources,
                                        int per_source,
                                        LoopbackSocketOptions options = {});

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_LOOPBACK_SOCKET_H_
