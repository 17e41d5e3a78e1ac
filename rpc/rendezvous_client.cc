#include "rpc/rendezvous_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "proto/rendezvous.grpc.pb.h"
#include "rpc/grpc_status.h"
#include "rpc/transport_security.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {
namespace {

int ToMillisInt(absl::Duration d) {
  return static_cast<int>(
      std::clamp<int64_t>(absl::ToInt64Milliseconds(d), 1, INT32_MAX));
}

std::shared_ptr<grpc::Channel> NewChannel(
    const RendezvousClient::Options& options) {
  grpc::ChannelArguments args;
  // gRPC's defaults (1 s, growing to 120 s) would make a worker that came
  // up before the chief wait up to two minutes after the chief is ready.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              ToMillisInt(options.initial_backoff));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              ToMillisInt(options.max_backoff));
  // The server bounds every value (InMemoryKvStore::Options); a Get of many
  // keys may add up to more than gRPC's default 4 MiB.
  args.SetMaxReceiveMessageSize(-1);
  if (options.security != nullptr) {
    return options.security->NewChannel(options.address, args);
  }
  return grpc::CreateCustomChannel(options.address,
                                   grpc::InsecureChannelCredentials(), args);
}

}  // namespace

class RendezvousClient::Impl {
 public:
  explicit Impl(const Options& options)
      : options_(options),
        channel_(NewChannel(options)),
        stub_(rendezvous::Rendezvous::NewStub(channel_)) {}

  // Sends one RPC: `attempt(context)` fills in the request, sets the
  // deadline and calls the stub. Waits for the server first (see
  // AwaitServer). An UNAVAILABLE (or CANCELLED) answer means the
  // connection broke or the server is stopping; the RPC is sent again after
  // a backoff if `resend`, until connect_timeout from now.
  template <typename Attempt>
  absl::Status Call(absl::string_view method, bool resend, Attempt attempt) {
    const absl::Time give_up = absl::Now() + options_.connect_timeout;
    absl::Duration backoff = options_.initial_backoff;
    for (;;) {
      RETURN_IF_ERROR(AwaitServer(method, give_up));
      grpc::ClientContext context;
      // A call that may be resent fails at once when the connection is down
      // (and comes back here to wait for the server, within give_up); one
      // that may not (Add) waits for gRPC to reconnect, within its own short
      // deadline, so that UNAVAILABLE means it was sent. Not for Get: its
      // deadline includes the wait for keys, which may be long.
      context.set_wait_for_ready(!resend);
      grpc::Status status = attempt(context);
      // This client never cancels a call, so CANCELLED is the server
      // shutting down with the call in flight: the server going away, as
      // UNAVAILABLE says.
      if (status.error_code() == grpc::StatusCode::CANCELLED) {
        status = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              "the server cancelled the call (stopping?)");
      }
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE) {
        return FromGrpcStatus(status, Describe(method));
      }
      if (!resend) {
        return absl::UnavailableError(absl::StrCat(
            Describe(method), ": ", status.error_message(),
            " (the server may have applied it, so it was not sent again)"));
      }
      if (absl::Now() + backoff >= give_up) {
        return FromGrpcStatus(status, Describe(method));
      }
      // Pacing, not synchronisation: a server that is stopping answers
      // UNAVAILABLE at once, and would otherwise be asked in a tight loop.
      absl::SleepFor(backoff);
      backoff = std::min(2 * backoff, options_.max_backoff);
    }
  }

  std::string Describe(absl::string_view method) const {
    return absl::StrCat(method, " to rendezvous server at ", options_.address);
  }

  std::chrono::system_clock::time_point DeadlineIn(absl::Duration d) const {
    return absl::ToChronoTime(absl::Now() + d);
  }

  const Options options_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<rendezvous::Rendezvous::Stub> stub_;

 private:
  // Returns once the channel is connected. While the server cannot be
  // reached, gRPC keeps trying with backoff (NewChannel); UNAVAILABLE naming
  // the address once `give_up` passes.
  absl::Status AwaitServer(absl::string_view method, absl::Time give_up) {
    for (;;) {
      const grpc_connectivity_state state =
          channel_->GetState(/*try_to_connect=*/true);
      if (state == GRPC_CHANNEL_READY) return absl::OkStatus();
      if (absl::Now() >= give_up ||
          !channel_->WaitForStateChange(state, absl::ToChronoTime(give_up))) {
        return absl::UnavailableError(
            absl::StrCat(Describe(method), ": cannot reach the server within ",
                         absl::FormatDuration(options_.connect_timeout),
                         " (is it up, and is this its address?)"));
      }
    }
  }
};

RendezvousClient::RendezvousClient(const Options& options)
    : impl_(std::make_unique<Impl>(options)) {}

RendezvousClient::~RendezvousClient() = default;

absl::Status RendezvousClient::Set(absl::string_view key,
                                   absl::string_view value) {
  rendezvous::SetRequest request;
  request.set_key(std::string(key));
  request.set_value(std::string(value));
  return impl_->Call("Set", /*resend=*/true, [&](grpc::ClientContext& context) {
    context.set_deadline(impl_->DeadlineIn(impl_->options_.rpc_timeout));
    rendezvous::SetResponse response;
    return impl_->stub_->Set(&context, request, &response);
  });
}

absl::StatusOr<std::vector<std::string>> RendezvousClient::Get(
    absl::Span<const std::string> keys, absl::Duration timeout) {
  const absl::Time start = absl::Now();
  const absl::Time keys_deadline = start + timeout;
  rendezvous::GetRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  rendezvous::GetResponse response;
  for (;;) {
    absl::Status status =
        impl_->Call("Get", /*resend=*/true, [&](grpc::ClientContext& context) {
          const absl::Duration wait =
              std::max(keys_deadline - absl::Now(), absl::ZeroDuration());
          request.set_timeout_ms(absl::ToInt64Milliseconds(wait));
          context.set_deadline(
              impl_->DeadlineIn(wait + impl_->options_.rpc_timeout));
          response.Clear();
          return impl_->stub_->Get(&context, request, &response);
        });
    // The server waits no longer than its cap; ask again for the rest.
    if (status.code() == absl::StatusCode::kDeadlineExceeded &&
        absl::Now() < keys_deadline) {
      continue;
    }
    if (!status.ok()) {
      if (status.code() != absl::StatusCode::kDeadlineExceeded) return status;
      return absl::DeadlineExceededError(
          absl::StrCat(status.message(), " (waited ",
                       absl::FormatDuration(absl::Now() - start), " in all)"));
    }
    break;
  }
  if (response.values_size() != static_cast<int>(keys.size())) {
    return absl::InternalError(
        absl::StrCat(impl_->Describe("Get"), ": asked for ", keys.size(),
                     " keys, got ", response.values_size(), " values"));
  }
  return std::vector<std::string>(response.values().begin(),
                                  response.values().end());
}

absl::StatusOr<int64_t> RendezvousClient::Add(absl::string_view key,
                                              int64_t delta) {
  rendezvous::AddRequest request;
  request.set_key(std::string(key));
  request.set_delta(delta);
  rendezvous::AddResponse response;
  absl::Status status =
      impl_->Call("Add", /*resend=*/false, [&](grpc::ClientContext& context) {
        context.set_deadline(impl_->DeadlineIn(impl_->options_.rpc_timeout));
        return impl_->stub_->Add(&context, request, &response);
      });
  RETURN_IF_ERROR(status);
  return response.value();
}

}  // namespace distrt::rpc
