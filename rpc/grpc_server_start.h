#ifndef DISTRT_RPC_GRPC_SERVER_START_H_
#define DISTRT_RPC_GRPC_SERVER_START_H_

// StartGrpcServer: how every gRPC server of this project starts listening:
// on exactly the address it is given (port 0: the OS picks a free one), and
// never sharing a port with another process. gRPC enables SO_REUSEPORT by
// default, which would let a second task bind a port already in use and
// silently split its connections with the first.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "rpc/transport_security.h"

namespace distrt::rpc {

struct StartedGrpcServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;  // the port actually listened on
};

// Serves `service` (borrowed: it must outlive the server) on
// `listen_address` ("host:port"), with the TLS and token check of
// `security` (null: plain TCP, no token). `configure`, when set, sets further
// options on the builder first (message sizes, ...). UNAVAILABLE naming the
// address when it cannot listen there (the port is in use, or the host is
// not an address of this machine).
absl::StatusOr<StartedGrpcServer> StartGrpcServer(
    const std::string& listen_address, grpc::Service* service,
    const TransportSecurity* security,
    const std::function<void(grpc::ServerBuilder&)>& configure = nullptr);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_GRPC_SERVER_START_H_
