#include "deploy/launcher/free_ports.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distrt::launcher {
namespace {

// Closes every socket it holds when it goes out of scope, on every path.
class SocketSet {
 public:
  SocketSet() = default;
  SocketSet(const SocketSet&) = delete;
  SocketSet& operator=(const SocketSet&) = delete;
  ~SocketSet() {
    for (int fd : fds_) close(fd);
  }
  void Add(int fd) { fds_.push_back(fd); }

 private:
  std::vector<int> fds_;
};

absl::Status BindError(absl::string_view what, absl::string_view host,
                       int error) {
  return absl::UnavailableError(absl::StrCat(
      "cannot ", what, " a TCP socket on ", host, ": ", std::strerror(error)));
}

}  // namespace

absl::StatusOr<std::vector<int>> PickFreePorts(absl::string_view host,
                                               int count) {
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot pick ", count, " ports"));
  }
  // getaddrinfo wants "::1", not "[::1]".
  std::string name(host);
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  if (const int rc = getaddrinfo(name.c_str(), "0", &hints, &resolved);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve host \"", host, "\": ", gai_strerror(rc)));
  }
  // The first address is the one a task given `host` will use too.
  sockaddr_storage address{};
  std::memcpy(&address, resolved->ai_addr, resolved->ai_addrlen);
  const socklen_t address_len = resolved->ai_addrlen;
  const int family = resolved->ai_family;
  freeaddrinfo(resolved);

  SocketSet held;
  std::vector<int> ports;
  ports.reserve(count);
  for (int i = 0; i < count; ++i) {
    const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return BindError("create", host, errno);
    held.Add(fd);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&address), address_len) !=
        0) {
      return BindError("bind", host, errno);
    }
    sockaddr_storage bound{};
    socklen_t bound_len = sizeof(bound);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
      return BindError("read the port of", host, errno);
    }
    const int port =
        family == AF_INET6
            ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
            : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    ports.push_back(port);
  }
  return ports;
}

std::string TaskAddressOn(absl::string_view host, int port) {
  const bool bare_v6 = host.find(':') != absl::string_view::npos &&
                       !(host.size() >= 2 && host.front() == '[');
  if (bare_v6) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

}  // namespace distrt::launcher
