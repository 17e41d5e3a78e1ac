#ifndef DISTRT_RPC_DATA_PLANE_SERVER_H_
#define DISTRT_RPC_DATA_PLANE_SERVER_H_

// DataPlaneServer: a ps task's TCP data plane (rpc/data_plane_wire.h), the
// tensor RPCs over plain TCP beside its gRPC server. A thread per
// connection reads a request, has `serve` answer it and writes the answer:
// the same handlers as gRPC's (PsGrpcServer hands them in), with no thread
// hand-off between the socket and the handler.
//
// A request whose method `serve` refuses, or larger than max_message_bytes,
// is answered with an error (the latter then closes the connection, whose
// stream can no longer be followed); a connection that does not say hello
// is closed. Thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/support/byte_buffer.h"

namespace distrt::rpc {

class DataPlaneServer {
 public:
  struct Options {
    // The host to listen on ("127.0.0.1", "0.0.0.0", "::", a name); the
    // port is chosen by the OS unless `port` is set.
    std::string host = "127.0.0.1";
    int port = 0;
    int64_t max_message_bytes = int64_t{256} << 20;
    // Connections served at once; more are closed at once.
    int max_connections = 512;
  };
  // Answers request bytes `in` of RPC `method` (rpc/ps_methods.h) with
  // response bytes `out`, or an error.
  using Serve = std::function<absl::Status(int method, grpc::ByteBuffer* in,
                                           grpc::ByteBuffer* out)>;

  // Listens and starts accepting. UNAVAILABLE naming the host when it
  // cannot listen there.
  static absl::StatusOr<std::unique_ptr<DataPlaneServer>> Start(
      const Options& options, Serve serve);
  ~DataPlaneServer();  // Stop()

  int port() const;
  // Stops accepting, closes every connection (a request being served is
  // answered first if it can be) and waits for their threads. Idempotent.
  void Stop();

 private:
  class Impl;
  explicit DataPlaneServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_DATA_PLANE_SERVER_H_
