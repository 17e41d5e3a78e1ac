#ifndef DISTRT_RPC_RENDEZVOUS_CLIENT_H_
#define DISTRT_RPC_RENDEZVOUS_CLIENT_H_

// RendezvousClient: a KvStore that lives in a RendezvousServer
// (rpc/rendezvous_server.h), usually the chief's, reached over gRPC.
//
// Workers often start before the chief listens, so every call first waits
// for the server: while it cannot be reached, gRPC retries the connection
// with exponential backoff (from Options.initial_backoff up to max_backoff)
// and the call gives up after Options.connect_timeout with UNAVAILABLE
// naming the address. Each RPC then has its own deadline
// (Options.rpc_timeout, plus the wait of a Get).
//
// A Set or Get whose connection breaks is sent again (they are idempotent)
// within the same connect_timeout; an Add is not, since the server may have
// counted it: its UNAVAILABLE says so.
//
// Errors are the server's (see proto/rendezvous.proto), prefixed with the
// method and the server's address.
//
// Thread-safe: every method may be called from any thread, concurrently.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/collective/kv_store.h"

namespace distrt::rpc {

class TransportSecurity;

class RendezvousClient final : public KvStore {
 public:
  struct Options {
    // The server, "host:port".
    std::string address;
    // How long a call waits for an unreachable server before UNAVAILABLE.
    // Generous, because workers may start well before the chief.
    absl::Duration connect_timeout = absl::Seconds(60);
    // Backoff between connection attempts while the server is unreachable
    // (gRPC's reconnect backoff: grows 1.6x per attempt, with jitter), and
    // between resends of a Set or Get (doubles): from initial_backoff up to
    // max_backoff.
    absl::Duration initial_backoff = absl::Milliseconds(100);
    absl::Duration max_backoff = absl::Seconds(2);
    // Deadline of one RPC once connected, beyond the time a Get asks the
    // server to wait.
    absl::Duration rpc_timeout = absl::Seconds(10);
    // The job's TLS and cluster token (see transport_security.h); null:
    // plain TCP, no token.
    std::shared_ptr<const TransportSecurity> security;
  };

  // Does not connect yet: the first call does.
  explicit RendezvousClient(const Options& options);
  ~RendezvousClient() override;

  RendezvousClient(const RendezvousClient&) = delete;
  RendezvousClient& operator=(const RendezvousClient&) = delete;

  absl::Status Set(absl::string_view key, absl::string_view value) override;
  // Waits up to `timeout` for the keys, asking the server again as often as
  // its cap on one wait (RendezvousServer::Options.max_get_wait) requires.
  absl::StatusOr<std::vector<std::string>> Get(
      absl::Span<const std::string> keys, absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) override;

 private:
  class Impl;  // the channel and the RPCs, gRPC types kept out of here

  std::unique_ptr<Impl> impl_;
};

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_RENDEZVOUS_CLIENT_H_
