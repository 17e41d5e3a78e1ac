#ifndef DISTRT_BENCH_GRPC_BYTEBUFFER_BASELINE_H_
#define DISTRT_BENCH_GRPC_BYTEBUFFER_BASELINE_H_

// The bare gRPC baseline of the dense and sparse families: the least work
// gRPC itself needs to move N bytes in one unary call, with no protobuf, no
// copy into a message and no server-side handling. Two generic methods (no
// .proto): "push" carries N payload bytes sent straight from the caller's
// memory and answers nothing; "pull" carries N (8 bytes) and answers N bytes
// sent straight from one buffer the server allocated at start-up. Whatever
// PsClient does beyond this is the cost of its protocol and its
// parameter-server work.
//
// The client's Pull copies the response into the caller's buffer once, as
// PsClient::Pull must: gRPC receives into memory of its own, so that copy is
// part of the least work a Pull(span) API can do.
//
// Both sides are thread-safe; the bench uses one client from one thread.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/server.h"
#include "grpcpp/support/byte_buffer.h"

namespace distrt::bench {

// The methods' full names, as on the wire.
inline constexpr char kGrpcBaselinePushMethod[] = "/distrt.bench.Baseline/Push";
inline constexpr char kGrpcBaselinePullMethod[] = "/distrt.bench.Baseline/Pull";

class GrpcBaselineServer {
 public:
  struct Options {
    // The largest pull. The buffer pulls are answered from is allocated and
    // written once at start-up, so that no pull pays for page faults. Pushes
    // of any size are accepted.
    int64_t max_pull_bytes = int64_t{64} << 20;
    // How long the destructor lets in-flight calls finish before cancelling
    // them.
    absl::Duration stop_grace = absl::Seconds(5);
  };

  // Listens on 127.0.0.1 on a port the OS picks (see port()). UNAVAILABLE
  // when it cannot listen; INVALID_ARGUMENT for a negative max_pull_bytes.
  static absl::StatusOr<std::unique_ptr<GrpcBaselineServer>> Start(
      const Options& options);

  // Shuts the server down (in-flight calls get up to stop_grace) and waits
  // for it.
  ~GrpcBaselineServer();

  GrpcBaselineServer(const GrpcBaselineServer&) = delete;
  GrpcBaselineServer& operator=(const GrpcBaselineServer&) = delete;

  int port() const { return port_; }
  // "127.0.0.1:<port>".
  std::string address() const;

 private:
  class Service;
  GrpcBaselineServer();

  absl::Duration stop_grace_;
  int port_ = 0;
  // Declared before server_: the server must be destroyed first, as it
  // serves from both.
  std::unique_ptr<char[]> pull_buffer_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

class GrpcBaselineClient {
 public:
  struct Options {
    // Deadline of each call.
    absl::Duration rpc_timeout = absl::Seconds(60);
  };

  // A client of the server at `address` ("host:port"). The channel connects
  // on the first call.
  static std::unique_ptr<GrpcBaselineClient> Create(const std::string& address,
                                                    const Options& options);
  ~GrpcBaselineClient();

  GrpcBaselineClient(const GrpcBaselineClient&) = delete;
  GrpcBaselineClient& operator=(const GrpcBaselineClient&) = delete;

  // One "push" call carrying `payload`, which is sent from where it lies
  // (not copied) and must stay unchanged until Push returns. The gRPC status
  // of the call, naming the method and the server.
  absl::Status Push(absl::Span<const char> payload);
  // One "pull" call for out.size() bytes, copied into `out`. INTERNAL when
  // the server answers with a different number of bytes.
  absl::Status Pull(absl::Span<char> out);

 private:
  GrpcBaselineClient(std::string address, Options options,
                     std::unique_ptr<grpc::GenericStub> stub);
  // A blocking unary call of `method`, bounded by options_.rpc_timeout.
  absl::Status Call(const char* method, const grpc::ByteBuffer& request,
                    grpc::ByteBuffer* response);

  const std::string address_;
  const Options options_;
  const std::unique_ptr<grpc::GenericStub> stub_;
};

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_GRPC_BYTEBUFFER_BASELINE_H_
