#include "tests/util/loopback_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gtest/gtest.h"

namespace distrt::testing {

int ConnectLoopbackSocket(int port, const LoopbackSocketOptions& options) {
  const int fd = socket(
      AF_INET,
      SOCK_STREAM | SOCK_CLOEXEC | (options.nonblocking ? SOCK_NONBLOCK : 0),
      0);
  if (fd < 0) {
    ADD_FAILURE() << "socket(): " << std::strerror(errno);
    return -1;
  }
  if (options.receive_timeout > absl::ZeroDuration()) {
    const timeval limit = absl::ToTimeval(options.receive_timeout);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit)) != 0) {
      ADD_FAILURE() << "SO_RCVTIMEO: " << std::strerror(errno);
      close(fd);
      return -1;
    }
  }
  sockaddr_in from{};
  from.sin_family = AF_INET;
  if (inet_pton(AF_INET, options.source.c_str(), &from.sin_addr) != 1) {
    ADD_FAILURE() << "not an IPv4 address: " << options.source;
    close(fd);
    return -1;
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof(from)) != 0) {
    ADD_FAILURE() << "bind to " << options.source << ": "
                  << std::strerror(errno);
    close(fd);
    return -1;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0 &&
      !(options.nonblocking && errno == EINPROGRESS)) {
    ADD_FAILURE() << "connect from " << options.source
                  << " to 127.0.0.1:" << port << ": " << std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

std::vector<int> ConnectLoopbackSockets(int port,
                                        const std::vector<std::string>& sources,
                                        int per_source,
                                        LoopbackSocketOptions options) {
  std::vector<int> fds;
  for (const std::string& source : sources) {
    options.source = source;
    for (int i = 0; i < per_source; ++i) {
      fds.push_back(ConnectLoopbackSocket(port, options));
    }
  }
  return fds;
}

}  // namespace distrt::testing
