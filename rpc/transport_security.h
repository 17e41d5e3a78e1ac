#ifndef DISTRT_RPC_TRANSPORT_SECURITY_H_
#define DISTRT_RPC_TRANSPORT_SECURITY_H_

// TransportSecurity: how the processes of one job know each other, and keep
// everybody else out. Two independent layers, each optional:
//
//   - Mutual TLS (gRPC SSL credentials). Every server asks for a client
//     certificate and refuses every call of a caller without one
//     (UNAUTHENTICATED) or with one that the job's CA did not sign for TLS
//     clients (PERMISSION_DENIED, saying why); a caller speaking plain TCP
//     fails its handshake. Every client checks that the server's
//     certificate is signed by that CA and names the host it dialled (a DNS
//     or IP subjectAltName).
//   - A cluster token: a shared secret sent with every RPC as
//     "authorization: Bearer <token>" and compared, in constant time, on
//     every RPC the server receives. A call without it is refused with
//     UNAUTHENTICATED, one with another token with PERMISSION_DENIED, before
//     any handler runs. It needs TLS, which keeps it secret on the way
//     (gRPC cannot check call metadata on a plain-TCP server either), on
//     every connection, loopback included.
//
// TensorFlow's own gRPC servers have neither (its SECURITY.md warns that
// whoever reaches the port can run code); here a job started with both
// refuses any caller outside it.
//
// One object serves the whole process: servers take ServerCredentials(),
// clients open their channels with NewChannel(). Immutable, so thread-safe.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace distrt::rpc {

struct TransportSecurityOptions {
  // PEM files: this process's certificate (chain), its private key, and the
  // CA certificate(s) that sign every task's certificate. All three or none.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;
  // A file holding the cluster token (surrounding whitespace ignored; at
  // least 16 characters). Empty: no token. Needs the TLS files.
  std::string cluster_token_file;
};

class TransportSecurity {
 public:
  // Plain TCP and no token: what a job without security flags uses.
  static std::shared_ptr<const TransportSecurity> Insecure();

  // Reads the files. INVALID_ARGUMENT naming the file and what is wrong with
  // it: unreadable, empty, not PEM, a key that does not match the
  // certificate, a token too short; or naming the missing flags when only
  // some of the TLS files are given, or a token without them.
  static absl::StatusOr<std::shared_ptr<const TransportSecurity>> Load(
      const TransportSecurityOptions& options);

  // For tests: TLS from PEM text rather than files (empty strings: none),
  // and a token (empty: none; needs TLS).
  static absl::StatusOr<std::shared_ptr<const TransportSecurity>> FromPem(
      std::string cert_pem, std::string key_pem, std::string ca_pem,
      std::string cluster_token);

  bool uses_tls() const { return !ca_pem_.empty(); }
  bool uses_token() const { return !token_.empty(); }
  // "mutual TLS and a cluster token", "no TLS, no cluster token", ...: for
  // start-up lines.
  std::string Description() const;

  // The PEM text and the token, for transports that are not gRPC's (the
  // TCP data plane, rpc/data_plane_tls.h). Empty when not in use.
  const std::string& cert_pem() const { return cert_pem_; }
  const std::string& key_pem() const { return key_pem_; }
  const std::string& ca_pem() const { return ca_pem_; }
  const std::string& cluster_token() const { return token_; }

  // Credentials for a server: TLS requiring a verified client certificate
  // when uses_tls(), and the token check when uses_token().
  std::shared_ptr<grpc::ServerCredentials> ServerCredentials() const;

  // A channel to `address` ("host:port") that presents this process's
  // certificate and sends the token with every call.
  std::shared_ptr<grpc::Channel> NewChannel(
      const std::string& address, const grpc::ChannelArguments& args) const;
  std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) const;

 private:
  TransportSecurity(std::string cert_pem, std::string key_pem,
                    std::string ca_pem, std::string token);

  std::string cert_pem_;
  std::string key_pem_;
  std::string ca_pem_;
  std::string token_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_TRANSPORT_SECURITY_H_
