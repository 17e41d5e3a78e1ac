#include "rpc/grpc_server_start.h"

#include "absl/strings/str_cat.h"

namespace distrt::rpc {

absl::StatusOr<StartedGrpcServer> StartGrpcServer(
    const std::string& listen_address, grpc::Service* service,
    const TransportSecurity* security,
    const std::function<void(grpc::ServerBuilder&)>& configure) {
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Our clients ping every few seconds while a request is in flight, to
  // notice a peer that became unreachable (client/ps_channels.cc). gRPC's
  // default policy takes a ping more often than every 5 minutes without
  // data as misbehaviour and closes the connection after two; a long
  // checkpoint save sends no data.
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // A connection that has not finished its handshake (TLS and HTTP/2's
  // preface) within 10 s is closed, rather than after gRPC's default of
  // 120 s: a stranger who connects and says nothing holds a socket only
  // that long. Our own clients finish in milliseconds.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10000);
  if (configure) configure(builder);
  StartedGrpcServer started;
  builder.AddListeningPort(listen_address,
                           security != nullptr
                               ? security->ServerCredentials()
                               : grpc::InsecureServerCredentials(),
                           &started.port);
  builder.RegisterService(service);
  started.server = builder.BuildAndStart();
  if (started.server == nullptr || started.port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen_address,
                     " (is the port in use, or the host not an address of this "
                     "machine?)"));
  }
  return started;
}

}  // namespace distrt::rpc
