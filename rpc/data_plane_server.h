#ifndef DISTRT_RPC_DATA_PLANE_SERVER_H_
#define DISTRT_RPC_DATA_PLANE_SERVER_H_

// DataPlaneServer: a ps task's TCP data plane (rpc/data_plane_wire.h), the
// tensor RPCs over TCP (and the job's TLS, when it has one) beside its gRPC
// server. A thread per
// connection reads a request, has `serve` answer it and writes the answer:
// the same handlers as gRPC's (PsGrpcServer hands them in), with no thread
// hand-off between the socket and the handler.
//
// A request whose method `serve` refuses, or larger than max_message_bytes,
// is answered with an error (the latter then closes the connection, whose
// stream can no longer be followed); a connection that does not say hello
// within hello_timeout is closed, as is one whose peer stops answering TCP
// (keepalive, TCP_USER_TIMEOUT) or takes minutes to send a request it began
// or to read an answer. A request's buffers grow as its bytes arrive.
//
// Connections still in their handshake cannot crowd out the job's clients.
// A connection is unauthenticated from its accept until its hello (and,
// with TLS, its token) is accepted:
//
//   accept ──> unauthenticated ──hello, token──> authenticated
//                │                               (never closed to make room)
//                ├─ no hello within hello_timeout: closed
//                └─ the oldest of max_unauthenticated, when a newcomer comes:
//                   closed to make room
//
// A connection from a source that has max_unauthenticated_per_source
// unauthenticated ones already is closed at accept, so that one host
// cannot keep evicting everyone else's handshakes; the source is the
// peer's IPv4 address, or its IPv6 /64. As max_unauthenticated is below
// max_connections, only authenticated connections can fill it: a client of
// the job is refused only when max_connections clients of the job are in.
//
// Thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/byte_buffer.h"
#include "rpc/data_plane_tls.h"

namespace distrt::rpc {

class DataPlaneServer {
 public:
  struct Options {
    // The host to listen on ("127.0.0.1", "0.0.0.0", "::", a name); the
    // port is chosen by the OS unless `port` is set.
    std::string host = "127.0.0.1";
    int port = 0;
    int64_t max_message_bytes = int64_t{256} << 20;
    // Connections served at once (a thread each); more are closed at once
    // when all of these are authenticated.
    int max_connections = 512;
    // Connections still in their TLS handshake or hello, in all: at this
    // bound a newcomer closes the oldest of them. Must be at least 1 and
    // below max_connections.
    int max_unauthenticated = 64;
    // Such connections from one source address (IPv4 address, IPv6 /64):
    // more from it are closed at once, so that one host cannot keep
    // evicting the handshakes of others. At least 1.
    int max_unauthenticated_per_source = 16;
    // How long a client has for its TLS handshake and hello, and to read
    // the task's hello. No longer than a worker waits for it (its connect
    // timeout, 5 s, client/ps_data_plane_client.h): after that it has given up.
    absl::Duration hello_timeout = absl::Seconds(5);
    // Who this is, for the hello (see rpc/data_plane_wire.h).
    int task_index = 0;
    uint64_t incarnation = 0;
    // How long Stop lets requests being served finish.
    absl::Duration stop_grace = absl::Seconds(5);
    // The job's TLS and token (null: plain TCP). A client that fails the
    // handshake is closed; one without the token is told so in the hello
    // and closed.
    std::shared_ptr<const DataPlaneTls> tls;
    // Where a refused connection (a failed TLS handshake, a hello of another
    // version or protocol, a missing or wrong token) is said, with its peer
    // and reason, at most once per 30 s; null: nowhere. So is one closed for
    // the bounds above. Under TLS a connection closed before its handshake
    // ends (a TCP health check) is one too; without TLS, one closed before
    // its hello is not. Called on the server's threads, several at once: it
    // must be thread-safe.
    std::function<void(absl::string_view)> log;
  };
  // Answers request bytes `in` of RPC `method` (rpc/ps_methods.h) with
  // response bytes `out`, or an error.
  using Serve = std::function<absl::Status(int method, grpc::ByteBuffer* in,
                                           grpc::ByteBuffer* out)>;

  // Listens and starts accepting. INVALID_ARGUMENT naming the option when
  // the bounds above do not hold; UNAVAILABLE naming the host when it
  // cannot listen there.
  static absl::StatusOr<std::unique_ptr<DataPlaneServer>> Start(
      const Options& options, Serve serve);
  ~DataPlaneServer();  // Stop()

  int port() const;
  // Stops accepting and reading requests, lets those being served be
  // answered within stop_grace, then closes every connection and waits for
  // their threads. Idempotent; a second caller returns once the first is
  // done.
  void Stop();

 private:
  class Impl;
  explicit DataPlaneServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_DATA_PLANE_SERVER_H_
