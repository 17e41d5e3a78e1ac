#include "runtime/metrics/metrics_http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

constexpr char kMetricsPath[] = "/metrics";
constexpr char kExpositionContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";

// "host:port", with an IPv6 literal in brackets.
std::string HostPort(absl::string_view host, int port) {
  return absl::StrContains(host, ':') ? absl::StrCat("[", host, "]:", port)
                                      : absl::StrCat(host, ":", port);
}

absl::Status SocketError(absl::string_view what, absl::string_view where,
                         int error_number) {
  const std::string message = absl::StrCat("metrics server: ", what, " ", where,
                                           ": ", std::strerror(error_number));
  switch (error_number) {
    case EADDRINUSE:
      return absl::UnavailableError(message);
    case EADDRNOTAVAIL:  // not an address of this machine
    case EAFNOSUPPORT:   // e.g. IPv6 turned off
      return absl::InvalidArgumentError(message);
    case EACCES:  // a port below 1024 without the capability
      return absl::PermissionDeniedError(message);
    default:
      return absl::UnavailableError(message);
  }
}

// A socket bound to `address` and listening, non-blocking as libmicrohttpd
// expects of a listening socket it is given.
absl::StatusOr<int> Listen(const addrinfo& address, absl::string_view where) {
  const int fd = socket(address.ai_family,
                        address.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        address.ai_protocol);
  if (fd < 0) return SocketError("cannot make a socket for", where, errno);
  // Lets a restarted process bind while the old one's connections sit in
  // TIME_WAIT; on Linux it does not let two processes listen on one port.
  const int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      bind(fd, address.ai_addr, address.ai_addrlen) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    const int error_number = errno;
    close(fd);
    return SocketError("cannot listen on", where, error_number);
  }
  return fd;
}

// The port `fd` is bound to.
absl::StatusOr<int> BoundPort(int fd, absl::string_view where) {
  sockaddr_storage address;
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return SocketError("cannot read the port of", where, errno);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

// libmicrohttpd's request handler; `cls` is the registry. Called once per
// request on the daemon's thread; answers at once, whatever the body.
MHD_Result HandleRequest(void* cls, MHD_Connection* connection, const char* url,
                         const char* method, const char* /*version*/,
                         const char* /*upload_data*/,
                         size_t* /*upload_data_size*/,
                         void** /*request_state*/) {
  unsigned int status = MHD_HTTP_OK;
  const char* content_type = "text/plain; charset=utf-8";
  std::string body;
  const bool is_get = std::strcmp(method, MHD_HTTP_METHOD_GET) == 0;
  if (!is_get) {
    status = MHD_HTTP_METHOD_NOT_ALLOWED;
    body = "Only GET is supported.\n";
  } else if (std::strcmp(url, kMetricsPath) != 0) {
    status = MHD_HTTP_NOT_FOUND;
    body = absl::StrCat("Not found; metrics are at ", kMetricsPath, "\n");
  } else {
    body = static_cast<const MetricsRegistry*>(cls)->Exposition();
    content_type = kExpositionContentType;
  }
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), body.data(), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;  // out of memory: drop the client
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (!is_get) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET");
  const MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);  // the connection holds its own reference
  return queued;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const Options& options) {
  const std::string where = HostPort(options.bind_host, options.port);
  if (options.registry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics server on ", where, ": no registry given"));
  }
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics server on ", where, ": port is not in [0, 65535]"));
  }
  if (options.bind_host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics server on ", where, ": bind_host is empty"));
  }
  if (options.connection_timeout_seconds < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics server on ", where,
                     ": connection_timeout_seconds is negative"));
  }

  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* resolved = nullptr;
  const int resolve_error =
      getaddrinfo(options.bind_host.c_str(),
                  std::to_string(options.port).c_str(), &hints, &resolved);
  if (resolve_error != 0) {
    const std::string message =
        absl::StrCat("metrics server: cannot resolve ", where, ": ",
                     resolve_error == EAI_SYSTEM ? std::strerror(errno)
                                                 : gai_strerror(resolve_error));
    // EAI_AGAIN: the resolver is down or slow, which may pass.
    return resolve_error == EAI_AGAIN ? absl::UnavailableError(message)
                                      : absl::InvalidArgumentError(message);
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(resolved,
                                                               &freeaddrinfo);

  absl::StatusOr<int> fd = absl::InvalidArgumentError(
      absl::StrCat("metrics server: ", where, " resolves to no address"));
  for (const addrinfo* address = addresses.get(); address != nullptr;
       address = address->ai_next) {
    fd = Listen(*address, where);
    if (fd.ok()) break;
  }
  if (!fd.ok()) return fd.status();

  absl::StatusOr<int> port = BoundPort(*fd, where);
  if (!port.ok()) {
    close(*fd);
    return port.status();
  }

  // On success the daemon owns the listening socket (MHD_stop_daemon closes
  // it); on failure it leaves it to us (libmicrohttpd 0.9.75).
  MHD_Daemon* daemon = MHD_start_daemon(
      MHD_USE_AUTO_INTERNAL_THREAD, /*port=*/0, /*apc=*/nullptr,
      /*apc_cls=*/nullptr, &HandleRequest, options.registry,
      MHD_OPTION_LISTEN_SOCKET, static_cast<MHD_socket>(*fd),
      MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned int>(options.connection_timeout_seconds),
      MHD_OPTION_END);
  if (daemon == nullptr) {
    close(*fd);
    // Its thread, epoll or eventfd could not be made.
    return absl::UnavailableError(
        absl::StrCat("metrics server: libmicrohttpd failed to start on ", where,
                     " (out of threads or file descriptors?)"));
  }
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(
      absl::StrCat("http://", HostPort(options.bind_host, *port), "/metrics"),
      *port, daemon));
}

MetricsHttpServer::MetricsHttpServer(std::string url, int port,
                                     MHD_Daemon* daemon)
    : url_(std::move(url)), port_(port), daemon_(daemon) {}

MetricsHttpServer::~MetricsHttpServer() { MHD_stop_daemon(daemon_); }

}  // namespace distrt
