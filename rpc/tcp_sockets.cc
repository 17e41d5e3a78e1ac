#include "rpc/tcp_sockets.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distrt::rpc {
namespace {

// Connects a non-blocking socket to `a` by `deadline`.
absl::StatusOr<int> ConnectTo(const addrinfo& a, absl::Time deadline) {
  const int fd = socket(
      a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol);
  if (fd < 0) return absl::UnavailableError(std::strerror(errno));
  if (connect(fd, a.ai_addr, a.ai_addrlen) != 0 && errno != EINPROGRESS) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(std::strerror(error));
  }
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      close(fd);
      return absl::DeadlineExceededError(
          "the deadline passed while connecting");
    }
    pollfd p{fd, POLLOUT, 0};
    const int n = poll(
        &p, 1,
        static_cast<int>(std::min<int64_t>(
            absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))),
            INT32_MAX)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // the deadline is checked above
    int error = 0;
    socklen_t length = sizeof(error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      close(fd);
      return absl::UnavailableError(std::strerror(error));
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
}

}  // namespace

absl::StatusOr<ListeningSocket> ListenTcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int error = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                service.c_str(), &hints, &found);
  if (error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve the host \"", host,
                     "\" to listen on: ", gai_strerror(error)));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
      why = std::strerror(errno);
      close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
    ListeningSocket listening;
    listening.fd = fd;
    listening.port =
        bound.ss_family == AF_INET6
            ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
            : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    freeaddrinfo(found);
    return listening;
  }
  freeaddrinfo(found);
  return absl::UnavailableError(
      absl::StrCat("cannot listen on ", host, ":", port, ": ", why));
}

absl::StatusOr<int> ConnectTcp(const std::string& host, int port,
                               absl::Time deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error =
      getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve: ", gai_strerror(error)));
  }
  absl::Status last = absl::UnavailableError("no address");
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    absl::StatusOr<int> connected = ConnectTo(*a, deadline);
    if (connected.ok()) {
      fd = *connected;
    } else {
      last = connected.status();
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::Status(last.code(),
                        absl::StrCat("cannot connect: ", last.message()));
  }
  return fd;
}

std::string HostPortText(const std::string& host, int port) {
  return host.find(':') != std::string::npos
             ? absl::StrCat("[", host, "]:", port)
             : absl::StrCat(host, ":", port);
}

std::string PeerName(const sockaddr_storage& address, socklen_t length,
                     const std::string& fallback) {
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host,
                  sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return fallback;
  }
  return absl::StrCat(host, ":", port);
}

}  // namespace distrt::rpc
