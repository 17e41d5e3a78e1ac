#ifndef DISTRT_CLIENT_PS_CHANNELS_H_
#define DISTRT_CLIENT_PS_CHANNELS_H_

// PsChannels: PsClient's gRPC channels to the ps tasks and its retry policy
// (internal to client/). It owns connections_per_task channels per ps task
// (each its own TCP connection, with fast reconnects and keepalive pings),
// gives every attempt a deadline (rpc_timeout, capped by
// ps_failure_timeout and Options::deadline), sends again the calls that
// failed for want of the ps task (UNAVAILABLE, DEADLINE_EXCEEDED) with
// jittered exponential backoff until ps_failure_timeout, and describes
// failures: every error names the RPC (by its PsMethod) and the ps task.
//
// Thread-safety: thread-safe; any number of operations may send through
// one PsChannels at once. The calls of one operation belong to that
// operation's thread, except while a round of them is in flight.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/ps_calls.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/ps_methods.h"
#include "rpc/transport_security.h"
#include "runtime/util/status_macros.h"

namespace distrt::ps_client_internal {

class PsChannels {
 public:
  // PsClient::Options' fields of these names (documented there).
  struct Options {
    absl::Duration rpc_timeout = absl::Seconds(60);
    absl::Duration ps_failure_timeout = absl::Minutes(2);
    absl::Time deadline = absl::InfiniteFuture();
    std::string timeout_flag = "--ps_failure_timeout";
    absl::Duration initial_retry_backoff = absl::Milliseconds(50);
    absl::Duration max_retry_backoff = absl::Seconds(2);
    int connections_per_task = 2;
    // Where retry warnings go; must be set.
    std::function<void(absl::string_view)> log;
    std::shared_ptr<const rpc::TransportSecurity> security;
  };

  // Channels to the ps tasks at `addresses` (task i at addresses[i]).
  PsChannels(Options options, std::vector<std::string> addresses);

  PsChannels(const PsChannels&) = delete;
  PsChannels& operator=(const PsChannels&) = delete;

  int num_tasks() const { return addresses_.size(); }
  const std::string& address(int task) const { return addresses_[task]; }
  // "ps task 3 (host:port)".
  std::string TaskName(int task) const;
  const Options& options() const { return options_; }

  // The typed stub through `task`'s first connection (for the RPCs
  // without tensors), and the generic one through its connection `stripe`
  // (for the RPCs that carry tensors as message bytes). Owned here.
  ps::ParameterServer::Stub* stub(int task) { return stubs_[task].get(); }
  grpc::GenericStub* generic_stub(int task, int stripe) {
    return generic_stubs_[task][stripe].get();
  }
  // "/distrt.ps.ParameterServer/PullDense": how a generic call names it.
  const std::string& MethodPath(rpc::PsMethod method) const {
    return method_paths_[method];
  }

  // A new id for a push (see PushDenseRequest.request_id): distinct within
  // this client (SplitMix64 is a bijection of the counter), random across
  // clients (the seed), never 0. That the ps task applies each id once is
  // what makes pushes safe to retry.
  uint64_t NewRequestId();

  // The deadline of one attempt of a request: rpc_timeout, and never more
  // than ps_failure_timeout, so that a ps task that stopped answering is
  // given up on in time, nor past Options::deadline.
  absl::Duration AttemptTimeout() const;
  // `timeout` from now, ending no later than Options::deadline (and not
  // negative).
  absl::Duration CapAtDeadline(absl::Duration timeout) const;

  // Whether a failed call may be sent again: the ps task could not be
  // reached, or did not answer in time. Pushes may be too (NewRequestId).
  static bool Retryable(const grpc::Status& status);

  // Sends `send` (the calls of one operation, each with its method set)
  // until none fails in a way worth retrying, or until ps_failure_timeout
  // from now (at the latest Options::deadline). `send_round(round)` sends
  // the calls given and returns when all have ended. Between rounds it
  // waits an exponential backoff with full jitter, so that workers that
  // lost the same ps task do not come back at the same moment. UNAVAILABLE
  // naming the ps task and the last error when time runs out. Without
  // `retry`, one round.
  absl::Status SendWithRetries(
      std::vector<CallBase*> send, bool retry,
      absl::FunctionRef<void(const std::vector<CallBase*>&)> send_round);

  // Sends every call through the typed stubs at once as `method` and waits
  // for all of them (each attempt is bounded by `timeout`), sending again
  // those that fail as Retryable (unless `retry` is false). `issue(
  // async_stub, context, request, response, done)` starts one. Returns the
  // first error, naming the RPC and the ps task.
  template <typename Request, typename Response, typename Issue>
  absl::Status RunAll(rpc::PsMethod method, Calls<Request, Response>& calls,
                      absl::Duration timeout, Issue issue, bool retry = true) {
    if (calls.empty()) return absl::OkStatus();
    using CallType = Call<Request, Response>;
    std::vector<CallBase*> all;
    for (auto& call : calls) {
      call->method = method;
      all.push_back(call.get());
    }
    RETURN_IF_ERROR(SendWithRetries(
        std::move(all), retry, [&](const std::vector<CallBase*>& round) {
          absl::BlockingCounter pending(round.size());
          const auto deadline =
              std::chrono::system_clock::now() +
              absl::ToChronoMilliseconds(CapAtDeadline(timeout));
          for (CallBase* base : round) {
            CallType* c = static_cast<CallType*>(base);
            issue(stubs_[c->ps_task]->async(), c->NewAttempt(deadline),
                  &c->request, &c->response,
                  [c, &pending](grpc::Status status) {
                    c->status = std::move(status);
                    pending.DecrementCount();
                  });
          }
          pending.Wait();
        }));
    return FirstError(calls);
  }

  // The first of `calls`' errors (CallError); NOT_FOUND skipped when
  // `ignore_not_found`.
  template <typename CallType>
  absl::Status FirstError(const std::vector<std::unique_ptr<CallType>>& calls,
                          bool ignore_not_found = false) const {
    for (const auto& call : calls) {
      if (ignore_not_found &&
          call->status.error_code() == grpc::StatusCode::NOT_FOUND) {
        continue;
      }
      RETURN_IF_ERROR(CallError(*call));
    }
    return absl::OkStatus();
  }

  // The call's gRPC error, naming the RPC and the ps task; OK when none.
  absl::Status CallError(const CallBase& call) const;

  // "UNAVAILABLE: failed to connect to all addresses"
  static std::string Describe(const grpc::Status& status);
  // The call's error, and its earlier attempt's when this one only timed
  // out: "DEADLINE_EXCEEDED: Deadline Exceeded (an earlier attempt:
  // UNAVAILABLE: failed to connect ...: Socket closed)".
  static std::string DescribeWithEarlier(const CallBase& call);

 private:
  // Says that a ps task is being retried, at most every few seconds (every
  // step of every replica may be retrying the same task).
  void LogRetry(const CallBase& call, absl::Duration left);

  // Constant after construction.
  const Options options_;
  const std::vector<std::string> addresses_;
  // Per ps task, for the RPCs without tensors: its first connection.
  std::vector<std::unique_ptr<ps::ParameterServer::Stub>> stubs_;
  // Per ps task and stripe (connections_per_task of them), for the RPCs
  // that carry tensors as message bytes.
  std::vector<std::vector<std::unique_ptr<grpc::GenericStub>>> generic_stubs_;
  // By PsMethod.
  std::array<std::string, rpc::kNumPsMethods> method_paths_;
  const uint64_t request_id_seed_;

  std::atomic<uint64_t> next_request_{0};
  absl::Mutex log_mu_;
  absl::Time last_retry_log_ ABSL_GUARDED_BY(log_mu_) = absl::InfinitePast();
};

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_CHANNELS_H_
