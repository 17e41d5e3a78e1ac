#ifndef DISTRT_RPC_RENDEZVOUS_SERVER_H_
#define DISTRT_RPC_RENDEZVOUS_SERVER_H_

// RendezvousServer: serves an InMemoryKvStore over gRPC (the Rendezvous
// service, proto/rendezvous.proto), so that the workers of a job can meet
// before their first collective. The chief runs one; workers reach it with
// RendezvousClient (rpc/rendezvous_client.h).
//
//   Start() --> serving --Stop()--> stopped
//
// Stop() closes the store first, so that Gets waiting for keys return
// UNAVAILABLE at once instead of holding the server up until their timeouts.
//
// A waiting Get holds one of the gRPC server's threads (the synchronous API,
// as in PsGrpcServer: the handler blocks on the store). A job has one
// waiting Get per worker at most, and Options.max_get_wait bounds each.
//
// Thread-safe: every method may be called from any thread.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/collective/kv_store.h"

namespace distrt::rpc {

class TransportSecurity;

class RendezvousServer {
 public:
  struct Options {
    // "host:port" to listen on; port 0 lets the OS pick a free port (see
    // port()). "0.0.0.0:0" listens on every interface.
    std::string listen_address;
    // The longest a Get waits for its keys in the server, whatever the
    // client asked for (and never past the client's deadline). A client that
    // wants to wait longer asks again, as RendezvousClient does; the cap
    // keeps a client that went away from holding a server thread for long.
    absl::Duration max_get_wait = absl::Seconds(30);
    // How long Stop() lets in-flight Sets and Adds finish.
    absl::Duration stop_grace = absl::Seconds(5);
    // Limits of the store served (key, value and total sizes).
    InMemoryKvStore::Options store;
    // TLS and the cluster token every caller must present (see
    // transport_security.h); null: plain TCP, anybody may call.
    std::shared_ptr<const TransportSecurity> security;
  };

  // Listens and starts serving. UNAVAILABLE naming the address when it
  // cannot listen there (in use, or not an address of this machine).
  static absl::StatusOr<std::unique_ptr<RendezvousServer>> Start(
      const Options& options);

  // Stops (see Stop) if not stopped yet.
  ~RendezvousServer();

  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  // The port actually listened on.
  int port() const;

  // The store served, for this process's own use without RPCs (the chief
  // is a member of the groups it serves). Owned by the server; valid until
  // it is destroyed, closed (UNAVAILABLE) after Stop().
  KvStore* store();

  // Closes the store (waiting Gets return UNAVAILABLE), stops accepting
  // requests, lets in-flight ones finish (up to stop_grace) and returns when
  // the server is down. Idempotent.
  void Stop();

 private:
  class Impl;
  explicit RendezvousServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_RENDEZVOUS_SERVER_H_
