#ifndef DISTRT_RPC_PS_GRPC_SERVER_H_
#define DISTRT_RPC_PS_GRPC_SERVER_H_

// PsGrpcServer: one ps task's gRPC server, serving the ParameterServer
// service (proto/ps_service.proto). A library, so that tests and
// single-process users can run a ps task in-process; ps_server/ wraps it in a
// binary.
//
// Lifecycle:
//
// The requests themselves are handled by PsRequestHandler; this class adds
// the transport, identity and request counts.
//
//   Start() --> serving --(Shutdown RPC or RequestShutdown())--> requested
//                  |                                                 |
//                  +---------------------- Stop() <------------------+
//                                            |
//                                         stopped (in-flight requests
//                                         finish, within stop_grace)
//
// Thread-safe: every method may be called from any thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/checkpoint/ps_checkpoint.h"

namespace distrt {
class MetricsRegistry;
}  // namespace distrt

namespace distrt::rpc {

class TransportSecurity;

class PsGrpcServer {
 public:
  struct Options {
    // "host:port" to listen on; port 0 lets the OS pick a free port (see
    // port()). "0.0.0.0:2222" listens on every interface.
    std::string listen_address;
    // This task's index in the cluster's "ps" job, reported by GetStatus.
    int task_index = 0;
    // How long Stop() lets in-flight requests finish before cancelling them.
    absl::Duration stop_grace = absl::Seconds(5);
    // Largest request or response message; a larger request is refused with
    // RESOURCE_EXHAUSTED before it is read, a pull that would produce a
    // larger response too.
    int64_t max_message_bytes = int64_t{256} << 20;
    // Memory for variables, hash-table rows and their optimizer slots.
    int64_t max_variable_bytes = int64_t{64} << 30;
    // TLS and the cluster token every caller must present (see
    // transport_security.h); null: plain TCP, anybody may call.
    std::shared_ptr<const TransportSecurity> security;
    // A checkpoint root directory (the chief's --checkpoint_dir). When it
    // has a committed checkpoint, Start takes back this task's shard of the
    // latest one (RecreateShard, with task_index of num_ps_tasks) before it
    // listens: a ps task that was restarted comes back holding what it held
    // then, and the job goes on. Empty: start empty.
    std::string restore_dir;
    int num_ps_tasks = 1;
    // Where this task's metrics go (rpc/ps_server_metrics.h); borrowed, must
    // outlive the server. Null: none.
    MetricsRegistry* metrics = nullptr;
    // Also serve the tensor RPCs over a TCP data plane
    // (rpc/data_plane_wire.h; TF_CONFIG "rpc_layer": "grpc+tcp") on the
    // host of listen_address, at `data_plane_port` (0: one the OS picks),
    // which GetStatus reports. With `security`'s TLS and token, as gRPC
    // (rpc/data_plane_tls.h).
    bool data_plane = false;
    int data_plane_port = 0;
    // Where the data plane says which connections it refused and why
    // (DataPlaneServer::Options::log); null: nowhere. Called from several
    // threads at once: it must be thread-safe.
    std::function<void(absl::string_view)> log;
  };

  // Listens and starts serving. UNAVAILABLE naming the address when it
  // cannot listen there (in use, or not an address of this machine).
  static absl::StatusOr<std::unique_ptr<PsGrpcServer>> Start(
      const Options& options);

  // Stops (see Stop) if not stopped yet.
  ~PsGrpcServer();

  PsGrpcServer(const PsGrpcServer&) = delete;
  PsGrpcServer& operator=(const PsGrpcServer&) = delete;

  // The port actually listened on.
  int port() const;
  // The TCP data plane's port; 0 without one (Options::data_plane).
  int data_plane_port() const;
  // Random at every start; see GetStatusResponse.incarnation.
  uint64_t incarnation() const;
  // What Start restored from Options.restore_dir; nullopt when nothing.
  const std::optional<RestoreInfo>& restored() const;

  // Marks shutdown as requested, as the Shutdown RPC does.
  void RequestShutdown(absl::string_view reason);
  // Waits up to `timeout` for a shutdown request; returns whether one came.
  bool WaitForShutdownRequest(absl::Duration timeout);
  // Why shutdown was requested; empty when it was not.
  std::string shutdown_reason() const;

  // Stops accepting requests, lets in-flight ones finish (up to stop_grace)
  // and returns when the server is down. Idempotent.
  void Stop();
  // Waits for a shutdown request, then stops.
  void Join();

 private:
  class Impl;
  explicit PsGrpcServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_PS_GRPC_SERVER_H_
