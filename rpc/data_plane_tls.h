#ifndef DISTRT_RPC_DATA_PLANE_TLS_H_
#define DISTRT_RPC_DATA_PLANE_TLS_H_

// DataPlaneTls: the job's mutual TLS and cluster token
// (rpc/transport_security.h) on the ps tasks' TCP data plane
// (rpc/data_plane_wire.h), which is not gRPC's and so gets neither from
// gRPC's credentials. The same rules as on gRPC:
//
//   - every connection is a TLS session (1.2 or later) from its first byte;
//   - a ps task asks every client for a certificate and verifies it against
//     the job's CA for TLS clients (extendedKeyUsage clientAuth);
//   - a client checks that the ps task's certificate comes from the CA for
//     TLS servers and names the host it dialled (a DNS or IP
//     subjectAltName);
//   - with a token, the client's hello carries it inside the session and
//     the ps task compares it in constant time before reading any request.
//
// Made with OpenSSL's libssl over the socket the data plane already polls;
// writes never raise SIGPIPE. Immutable after creation, so thread-safe.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

struct ssl_st;      // OpenSSL's SSL
struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace distrt::rpc {

class TransportSecurity;

class DataPlaneTls {
 public:
  struct SessionFree {
    void operator()(ssl_st* ssl) const;
  };
  // One connection's TLS session; the socket stays the caller's to close.
  using Session = std::unique_ptr<ssl_st, SessionFree>;

  // The job's TLS: nullptr when `security` uses none. FAILED_PRECONDITION
  // when it has a token without TLS, which the data plane could not keep
  // secret (TransportSecurity::Load and FromPem refuse to make one).
  static absl::StatusOr<std::shared_ptr<const DataPlaneTls>> ForJob(
      const TransportSecurity& security);

  // From PEM text: this process's certificate (chain) and key, the CA
  // certificate(s), and the token (empty: none). INVALID_ARGUMENT saying
  // which of them OpenSSL cannot use, and why.
  static absl::StatusOr<std::shared_ptr<const DataPlaneTls>> FromPem(
      const std::string& cert_pem, const std::string& key_pem,
      const std::string& ca_pem, std::string token);

  ~DataPlaneTls();
  DataPlaneTls(const DataPlaneTls&) = delete;
  DataPlaneTls& operator=(const DataPlaneTls&) = delete;

  // The ps task's side of the handshake on `fd` (connected, non-blocking),
  // by `deadline`. UNAVAILABLE naming `peer` and saying why (no
  // certificate, another CA's, not for TLS clients, not TLS at all);
  // DEADLINE_EXCEEDED.
  absl::StatusOr<Session> Accept(int fd, absl::Time deadline,
                                 absl::string_view peer) const;
  // The client's side: the ps task's certificate must name `host`.
  absl::StatusOr<Session> Connect(int fd, const std::string& host,
                                  absl::Time deadline,
                                  absl::string_view peer) const;

  // What a client's hello carries (empty without a token).
  const std::string& token() const { return token_; }
  // Whether a client may send requests, given the token its hello
  // `offered`: OK (also whenever the job has no token), UNAUTHENTICATED
  // when it offered none, PERMISSION_DENIED when it offered another.
  absl::Status CheckToken(absl::string_view offered) const;

 private:
  DataPlaneTls(ssl_ctx_st* server, ssl_ctx_st* client, std::string token)
      : server_(server), client_(client), token_(std::move(token)) {}

  absl::StatusOr<Session> Handshake(bool as_server, int fd,
                                    const std::string& host,
                                    absl::Time deadline,
                                    absl::string_view peer) const;

  ssl_ctx_st* const server_;
  ssl_ctx_st* const client_;
  const std::string token_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_DATA_PLANE_TLS_H_
