#ifndef DISTRT_RUNTIME_METRICS_METRICS_HTTP_SERVER_H_
#define DISTRT_RUNTIME_METRICS_METRICS_HTTP_SERVER_H_

// MetricsHttpServer: serves a MetricsRegistry to a Prometheus scraper.
//
//   GET /metrics   200, Content-Type: text/plain; version=0.0.4; charset=utf-8,
//                  body MetricsRegistry::Exposition()
//   GET other      404
//   other method   405 (Allow: GET)
//
// It is a GNU libmicrohttpd daemon with one internal thread that accepts,
// reads and answers; a scrape renders the registry on that thread. Start()
// binds and listens before it returns, so a scraper may connect as soon as
// it has port(). The destructor stops the daemon and joins its thread
// (finishing a scrape in flight); after it returns the registry is no longer
// used.
//
// There is no TLS or authentication: bind to loopback (the default) or to a
// network that only the monitoring system reaches. In a job with TLS the
// tasks keep it on loopback (runtime/metrics/metrics_listen_host.h).
//
// Thread-safe: port() may be called from any thread.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/metrics/metrics_registry.h"

struct MHD_Daemon;

namespace distrt {

class MetricsHttpServer {
 public:
  struct Options {
    // A host name or IP literal (IPv4 "10.0.0.5", IPv6 "::1", no brackets)
    // to listen on, resolved with getaddrinfo; the first address it gives
    // that can be bound is used. "0.0.0.0" or "::" listen on every
    // interface (on Linux "::" takes IPv4 too). Default: loopback only, so
    // that exposing metrics beyond the machine is a deliberate choice.
    std::string bind_host = "127.0.0.1";
    // 0: the OS picks a free port (tests); port() reports it.
    int port = 0;
    // Borrowed; must outlive the server. Required.
    MetricsRegistry* registry = nullptr;
    // A connection idle this long is closed, so that a stuck client cannot
    // hold the single thread's connection slot forever; 0: never.
    int connection_timeout_seconds = 30;
  };

  // Binds, listens and starts serving. Errors name "host:port":
  // InvalidArgument for bad options, a host that does not resolve or an
  // address that is not this machine's; Unavailable for a port in use or a
  // resolver that is down; PermissionDenied for a privileged port.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const Options& options);

  // Stops serving and joins the server's thread.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The port bound (the OS's pick when Options::port was 0).
  int port() const { return port_; }
  // "http://HOST:PORT/metrics", for start-up lines (an IPv6 host in
  // brackets).
  const std::string& url() const { return url_; }

 private:
  MetricsHttpServer(std::string url, int port, MHD_Daemon* daemon);

  // Constant after construction. The daemon's handler holds the registry.
  const std::string url_;
  const int port_;
  MHD_Daemon* const daemon_;  // owned; stopped by the destructor
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_METRICS_METRICS_HTTP_SERVER_H_
