#ifndef DISTRT_CLIENT_PS_TRANSPORT_H_
#define DISTRT_CLIENT_PS_TRANSPORT_H_

// PsTransport: how PsClient's requests reach the ps tasks (internal to
// client/). It owns the channels (connections_per_task TCP connections per
// ps task, with fast reconnects), sends a batch of calls at once with at
// most max_requests_in_flight outstanding (and per task
// max_requests_in_flight_per_task), retries what failed for want of
// the ps task (UNAVAILABLE, DEADLINE_EXCEEDED) with jittered exponential
// backoff until ps_failure_timeout, decodes pulled tensors straight into
// the caller's buffers, and names the RPC and the ps task in every error.

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/ps_calls.h"
#include "client/ps_client.h"
#include "client/request_window.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/bundle_message.h"
#include "rpc/data_plane_connection.h"
#include "rpc/data_plane_tls.h"
#include "rpc/grpc_status.h"
#include "rpc/ps_methods.h"
#include "rpc/tensor_codec.h"
#include "rpc/transport_security.h"
#include "rpc/wire_message.h"
#include "runtime/util/splitmix64.h"
#include "runtime/util/status_macros.h"

namespace distrt::ps_client_internal {

class PsTransport {
 public:
  // `data_plane_tls`: the job's TLS on the data plane (null: plain TCP).
  PsTransport(PsClient::Options options, std::vector<std::string> addresses,
              std::shared_ptr<const rpc::DataPlaneTls> data_plane_tls)
      : options_(std::move(options)),
        addresses_(std::move(addresses)),
        data_plane_tls_(std::move(data_plane_tls)) {
    if (!options_.log) {
      options_.log = [](absl::string_view message) {
        std::fprintf(stderr, "%s\n", std::string(message).c_str());
      };
    }
    for (const std::string& address : addresses_) {
      std::vector<std::unique_ptr<grpc::GenericStub>> stripes;
      for (int stripe = 0; stripe < options_.connections_per_task; ++stripe) {
        grpc::ChannelArguments args;
        // Responses are bounded by the servers' own limit.
        args.SetMaxReceiveMessageSize(-1);
        // A TCP connection of its own for each stripe: channels with the
        // same target and arguments would share one subchannel (and so one
        // connection) through gRPC's global pool. A pool per channel and an
        // argument that differs per stripe each prevent that.
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        // gRPC's reconnect backoff grows to 2 minutes by default: a ps task
        // that restarted would go unnoticed that long.
        args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
        args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
        args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
        args.SetInt("distrt.stripe", stripe);
        SetKeepalive(options_.ps_failure_timeout, args);
        std::shared_ptr<grpc::Channel> channel =
            options_.security != nullptr
                ? options_.security->NewChannel(address, args)
                : grpc::CreateCustomChannel(
                      address, grpc::InsecureChannelCredentials(), args);
        if (stripe == 0)
          stubs_.push_back(ps::ParameterServer::NewStub(channel));
        stripes.push_back(std::make_unique<grpc::GenericStub>(channel));
      }
      wire_stubs_.push_back(std::move(stripes));
    }
  }

  int num_tasks() const { return addresses_.size(); }

  // With Options::data_plane, the tensor RPCs to `task` go over its TCP
  // data plane at `port` from now on, to the start of the task that
  // `incarnation` names (both from its GetStatus); port 0: over gRPC.
  // Says which, once per change.
  void LearnDataPlane(int task, int port, uint64_t incarnation) {
    if (!options_.data_plane) return;
    DataPlane& plane = data_planes_[task];
    plane.incarnation.store(incarnation, std::memory_order_relaxed);
    plane.relearn_after_ms.store(0, std::memory_order_relaxed);
    if (plane.port.exchange(port, std::memory_order_relaxed) == port) return;
    options_.log(
        port != 0
            ? absl::StrCat(TaskName(task),
                           ": tensors over its TCP data plane at port ", port,
                           " (rpc_layer \"grpc+tcp\"",
                           data_plane_tls_ == nullptr ? ""
                           : data_plane_tls_->token().empty()
                               ? ", mutual TLS"
                               : ", mutual TLS, cluster token",
                           ")")
            : absl::StrCat("warning: ", TaskName(task),
                           " offers no TCP data plane (is \"rpc_layer\" "
                           "\"grpc+tcp\" in its TF_CONFIG too?); its tensors "
                           "go over gRPC"));
  }

  // A new id for a push (see PushDenseRequest.request_id): distinct within
  // this client (SplitMix64 is a bijection of the counter), random across
  // clients (the seed), never 0.
  uint64_t NewRequestId() {
    for (;;) {
      const uint64_t id =
          SplitMix64(request_id_seed_ + next_request_.fetch_add(1));
      if (id != 0) return id;
    }
  }
  const std::string& address(int task) const { return addresses_[task]; }

  std::string TaskName(int task) const {
    return absl::StrCat("ps task ", task, " (", addresses_[task], ")");
  }

  // HTTP/2 pings while requests are in flight, so that a connection whose
  // ps task became unreachable (packets dropped, the host gone) fails
  // within a fraction of ps_failure_timeout rather than at the request's
  // deadline, which for a checkpoint's save is checkpoint_timeout: without
  // them, a save meeting a partition waited that long (network_faults_test
  // f). The failed request is then sent again like any other. The ps
  // tasks accept pings this often (rpc/grpc_server_start.cc).
  static void SetKeepalive(absl::Duration ps_failure_timeout,
                           grpc::ChannelArguments& args) {
    const absl::Duration quarter = ps_failure_timeout / 4;
    const absl::Duration every =
        std::clamp(quarter, absl::Seconds(2), absl::Seconds(60));
    const absl::Duration wait =
        std::clamp(quarter, absl::Seconds(2), absl::Seconds(20));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, absl::ToInt64Milliseconds(every));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, absl::ToInt64Milliseconds(wait));
    // Idle connections need none; a long save sends no data, and gRPC
    // would otherwise stop pinging after two pings without any.
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }

  // The deadline of one attempt of a request: rpc_timeout, and never more
  // than ps_failure_timeout, so that a ps task that stopped answering is
  // given up on in time, nor past Options::deadline.
  absl::Duration AttemptTimeout() const {
    return CapAtDeadline(
        std::min(options_.rpc_timeout, options_.ps_failure_timeout));
  }

  // `timeout` from now, ending no later than Options::deadline (and not
  // negative).
  absl::Duration CapAtDeadline(absl::Duration timeout) const {
    return std::clamp(options_.deadline - absl::Now(), absl::ZeroDuration(),
                      timeout);
  }

  // Whether a failed call may be sent again: the ps task could not be
  // reached, or did not answer in time. Pushes may be too: the ps task
  // applies each request id once (NewRequestId).
  static bool Retryable(const grpc::Status& status) {
    return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
           status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  }

  // Sends `send` (the calls of one operation) until none fails in a way
  // worth retrying, or until ps_failure_timeout from now (at the latest
  // Options::deadline). `send_round(round)` sends the calls given and returns
  // when all have ended. Between rounds it waits an exponential backoff with
  // full jitter, so that workers that lost the same ps task do not come back
  // at the same moment. UNAVAILABLE naming the ps task and the last error
  // when time runs out.
  template <typename CallType, typename SendRound>
  absl::Status SendWithRetries(absl::string_view rpc,
                               std::vector<CallType*> send, bool retry,
                               SendRound send_round) {
    const absl::Time start = absl::Now();
    const absl::Time give_up =
        std::min(start + options_.ps_failure_timeout, options_.deadline);
    absl::Duration backoff = options_.initial_retry_backoff;
    for (;;) {
      send_round(send);
      if (!retry) return absl::OkStatus();
      std::vector<CallType*> failed;
      for (CallType* call : send) {
        if (Retryable(call->status)) failed.push_back(call);
      }
      if (failed.empty()) return absl::OkStatus();
      const CallBase& first = *failed.front();
      const absl::Time now = absl::Now();
      if (now >= give_up) {
        return absl::UnavailableError(absl::StrCat(
            TaskName(first.ps_task), " did not answer ",
            first.rpc.empty() ? rpc : first.rpc, first.about, " for ",
            absl::FormatDuration(
                absl::Trunc(give_up - start, absl::Milliseconds(100))),
            " (", options_.timeout_flag,
            "); last error: ", DescribeWithEarlier(first)));
      }
      LogRetry(first, rpc, give_up - now);
      absl::SleepFor(std::min(give_up - now, Jittered(backoff)));
      backoff = std::min(options_.max_retry_backoff, backoff * 2);
      for (CallType* call : failed) {
        if (call->status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
          call->earlier_failure = call->status;
        }
        call->status = grpc::Status();
      }
      send = std::move(failed);
    }
  }

  // The call's error, and its earlier attempt's when this one only timed
  // out: "DEADLINE_EXCEEDED: Deadline Exceeded (an earlier attempt:
  // UNAVAILABLE: failed to connect ...: Socket closed)".
  static std::string DescribeWithEarlier(const CallBase& call) {
    std::string text = Describe(call.status);
    if (call.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
        !call.earlier_failure.ok()) {
      absl::StrAppend(
          &text, " (an earlier attempt: ", Describe(call.earlier_failure), ")");
    }
    return text;
  }

  // "UNAVAILABLE: failed to connect to all addresses"
  static std::string Describe(const grpc::Status& status) {
    return absl::StrCat(absl::StatusCodeToString(
                            static_cast<absl::StatusCode>(status.error_code())),
                        ": ", status.error_message());
  }

  // Uniform in [0, limit]: "full jitter".
  static absl::Duration Jittered(absl::Duration limit) {
    thread_local std::mt19937_64 random(std::random_device{}());
    return limit * std::uniform_real_distribution<double>(0, 1)(random);
  }

  // Says that a ps task is being retried, at most every few seconds (every
  // step of every replica may be retrying the same task).
  void LogRetry(const CallBase& call, absl::string_view rpc,
                absl::Duration left) {
    {
      absl::MutexLock lock(&log_mu_);
      const absl::Time now = absl::Now();
      if (now - last_retry_log_ < absl::Seconds(5)) return;
      last_retry_log_ = now;
    }
    options_.log(
        absl::StrCat("warning: ", call.rpc.empty() ? rpc : call.rpc, " to ",
                     TaskName(call.ps_task), " failed (", Describe(call.status),
                     "); retrying for up to ",
                     absl::FormatDuration(absl::Trunc(left, absl::Seconds(1))),
                     " (", options_.timeout_flag, ")"));
  }

  // Sends every call at once and waits for all of them (each attempt is
  // bounded by `timeout`), sending again those that fail as Retryable
  // (unless `retry` is false). `issue(async_stub, context, request,
  // response, done)` starts one. Returns the first error, naming the RPC
  // and the ps task.
  template <typename Request, typename Response, typename Issue>
  absl::Status RunAll(absl::string_view rpc, Calls<Request, Response>& calls,
                      absl::Duration timeout, Issue issue, bool retry = true) {
    if (calls.empty()) return absl::OkStatus();
    using CallType = Call<Request, Response>;
    std::vector<CallType*> all;
    for (auto& call : calls) all.push_back(call.get());
    absl::Status gave_up = SendWithRetries(
        rpc, std::move(all), retry, [&](const std::vector<CallType*>& round) {
          absl::BlockingCounter pending(round.size());
          const auto deadline =
              std::chrono::system_clock::now() +
              absl::ToChronoMilliseconds(CapAtDeadline(timeout));
          for (CallType* c : round) {
            issue(stubs_[c->ps_task]->async(), c->NewAttempt(deadline),
                  &c->request, &c->response,
                  [c, &pending](grpc::Status status) {
                    c->status = std::move(status);
                    pending.DecrementCount();
                  });
          }
          pending.Wait();
        });
    RETURN_IF_ERROR(gave_up);
    return FirstError(rpc, calls);
  }

  // Like RunAll, for RPCs whose calls carry `wire_request` and get
  // `wire_response`: `decode(call)` runs as each response arrives (on a
  // gRPC thread, so responses are decoded in parallel) and its error counts
  // as the call's. A call whose `rpc` is set is sent as that RPC instead of
  // `rpc`. The calls to one ps task take its connections in turn. Every
  // attempt is bounded by AttemptTimeout().
  template <typename CallType, typename Decode>
  absl::Status RunWire(absl::string_view rpc,
                       std::vector<std::unique_ptr<CallType>>& calls,
                       Decode decode) {
    std::vector<CallType*> all;
    all.reserve(calls.size());
    for (auto& call : calls) all.push_back(call.get());
    return RunWireCalls(rpc, std::move(all), decode);
  }

  // RunWire over calls owned elsewhere, possibly of several kinds (as
  // CallBase, each with its `rpc` set): one operation's requests, or a
  // training step's several operations sent in one round (PullStep). With
  // `bundle`, the round's small calls to one ps task go as one Bundle call
  // (Options::bundle_below_bytes, counting a pull's rows): the pieces that
  // max_request_bytes cuts a large operation into are too large for it and
  // still travel apart.
  template <typename CallType, typename Decode>
  absl::Status RunWireCalls(absl::string_view rpc, std::vector<CallType*> all,
                            Decode decode, bool bundle = false) {
    if (all.empty()) return absl::OkStatus();
    const auto method_of = [](absl::string_view name) {
      return absl::StrCat("/", ps::ParameterServer::service_full_name(), "/",
                          name);
    };
    const std::string method = method_of(rpc);
    std::vector<int> calls_per_task(num_tasks(), 0);
    for (CallType* call : all) {
      CallType& c = *call;
      if (!c.rpc.empty() && c.rpc != rpc) c.method = method_of(c.rpc);
      // Round-robin over the task's connections.
      c.stripe = calls_per_task[c.ps_task]++ % options_.connections_per_task;
    }
    absl::Status gave_up = SendWithRetries(
        rpc, all, /*retry=*/true, [&](const std::vector<CallType*>& round) {
          SendWireRound(rpc, method, round, decode, bundle);
        });
    RETURN_IF_ERROR(gave_up);
    for (const CallType* call : all) {
      RETURN_IF_ERROR(CallError(rpc, *call));
    }
    for (const CallType* call : all) {
      if (!call->decoded.ok()) return call->decoded;
    }
    return absl::OkStatus();
  }

  // Sends `round` through RunWire's connections, at most
  // max_requests_in_flight at a time and max_requests_in_flight_per_task to
  // any one task (each answer starts the next one: RequestWindow), and
  // returns when every call has ended. With `bundle`, the small calls to
  // one ps task go together as one Bundle call.
  template <typename CallType, typename Decode>
  void SendWireRound(absl::string_view rpc, const std::string& method,
                     const std::vector<CallType*>& round, Decode& decode,
                     bool bundle) {
    std::vector<std::vector<CallType*>> units;
    if (bundle) {
      units = BundleUnits(round);
    } else {
      for (CallType* c : round) units.push_back({c});
    }
    // Units to tasks with a data plane go there, from this thread, while
    // the others go over gRPC.
    std::vector<std::vector<CallType*>> over_tcp;
    if (options_.data_plane) {
      std::vector<std::vector<CallType*>> over_grpc;
      for (std::vector<CallType*>& unit : units) {
        (OverDataPlane(rpc, unit) ? over_tcp : over_grpc)
            .push_back(std::move(unit));
      }
      units = std::move(over_grpc);
    }
    // The Bundle calls' own messages, by unit (null for single calls).
    std::vector<std::unique_ptr<BundleCall>> bundles(units.size());
    absl::BlockingCounter pending(units.size());
    const auto deadline = std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(AttemptTimeout());
    RequestWindow window = Window(units);
    std::function<void(size_t)> start = [&](size_t index) {
      // Each answer starts the unit that takes its place in the window.
      const auto ended = [&window, &start, &pending, index] {
        if (std::optional<size_t> next = window.End(index)) start(*next);
        pending.DecrementCount();
      };
      for (CallType* c : units[index]) {
        c->decoded = absl::OkStatus();
        c->wire_response.Clear();
      }
      if (units[index].size() > 1) {
        bundles[index] = std::make_unique<BundleCall>();
        SendBundle(rpc, units[index], *bundles[index], deadline, decode, ended);
        return;
      }
      CallType* c = units[index][0];
      wire_stubs_[c->ps_task][c->stripe]->UnaryCall(
          c->NewAttempt(deadline), c->method.empty() ? method : c->method,
          grpc::StubOptions(), &c->wire_request, &c->wire_response,
          [c, &decode, ended](grpc::Status status) {
            c->status = std::move(status);
            if (c->status.ok()) c->decoded = decode(*c);
            ended();
          });
    };
    for (size_t index : window.Open()) start(index);
    if (!over_tcp.empty()) SendOverDataPlanes(rpc, over_tcp, decode);
    pending.Wait();
    assert(window.AllStarted());
  }

  // The window that `units` (each calls to one ps task) go out through:
  // max_requests_in_flight in all, max_requests_in_flight_per_task each.
  template <typename CallType>
  RequestWindow Window(const std::vector<std::vector<CallType*>>& units) const {
    std::vector<int> task_of(units.size());
    for (size_t i = 0; i < units.size(); ++i) task_of[i] = units[i][0]->ps_task;
    return RequestWindow(task_of, num_tasks(), options_.max_requests_in_flight,
                         options_.max_requests_in_flight_per_task);
  }

  // Whether `unit` (calls to one ps task) goes over the task's TCP data
  // plane: one is known (LearnDataPlane) and carries the unit's RPCs. A task
  // sent back to gRPC (ConnectToDataPlane) is asked for its data plane
  // again, at most every kRelearnEvery.
  template <typename CallType>
  bool OverDataPlane(absl::string_view rpc,
                     const std::vector<CallType*>& unit) {
    const int task = unit[0]->ps_task;
    DataPlane& plane = data_planes_[task];
    if (plane.port.load(std::memory_order_relaxed) <= 0) {
      // One caller at a time asks, once the time has come.
      int64_t after = plane.relearn_after_ms.load();
      if (after == 0 || absl::ToUnixMillis(absl::Now()) < after ||
          !plane.relearn_after_ms.compare_exchange_strong(
              after, absl::ToUnixMillis(absl::Now() + kRelearnEvery))) {
        return false;
      }
      RelearnDataPlane(task);
      if (plane.port.load(std::memory_order_relaxed) <= 0) return false;
    }
    for (const CallType* c : unit) {
      if (MethodNumber(c->rpc.empty() ? rpc : c->rpc) < 0) return false;
    }
    return true;
  }

  // How often a task sent back to gRPC is asked for its data plane again.
  static constexpr absl::Duration kRelearnEvery = absl::Seconds(5);

  // Asks `task` for its data plane (GetStatus) and takes what it says.
  void RelearnDataPlane(int task) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMilliseconds(
                             std::min(AttemptTimeout(), absl::Seconds(2))));
    ps::GetStatusResponse status;
    if (stubs_[task]
            ->GetStatus(&context, ps::GetStatusRequest(), &status)
            .ok()) {
      LearnDataPlane(task, status.data_plane_port(), status.incarnation());
    }
  }

  // The RPC's number (rpc/ps_methods.h); -1 for a name that is none.
  static int MethodNumber(absl::string_view name) {
    for (int m = 0; m < rpc::kNumPsMethods; ++m) {
      if (name == rpc::kPsMethodNames[m]) return m;
    }
    return -1;
  }

  // SendWireRound's `units` (each a single call or a Bundle) over the ps
  // tasks' TCP data planes, from this thread: each unit on a connection of
  // its own (through the window of max_requests_in_flight and
  // max_requests_in_flight_per_task), answers read in
  // the order sent. A unit whose pooled connection turns out closed (the
  // task restarted, or dropped it) is sent again at once on a new one: a
  // push is applied once per request id however often it is sent. Other
  // failures fail the unit's calls (UNAVAILABLE and DEADLINE_EXCEEDED are
  // retried by SendWithRetries).
  template <typename CallType, typename Decode>
  void SendOverDataPlanes(absl::string_view rpc,
                          const std::vector<std::vector<CallType*>>& units,
                          Decode& decode) {
    const absl::Time deadline = absl::Now() + AttemptTimeout();
    struct Sent {
      size_t unit;
      std::unique_ptr<rpc::DataPlaneConnection> connection;
      bool reused = false;
      std::unique_ptr<BundleCall> bundle;
    };
    std::deque<Sent> in_flight;
    const auto fail = [&](const std::vector<CallType*>& parts,
                          const absl::Status& status) {
      for (CallType* c : parts) c->status = rpc::ToGrpcStatus(status);
    };
    // Sends unit `index`, on a new connection when `fresh`. False when it
    // failed before it was sent (its calls say why); true when it is in
    // flight, or queued to be sent again on a new connection because the
    // pooled one it was written to had died.
    const auto start = [&](size_t index, bool fresh) {
      const std::vector<CallType*>& parts = units[index];
      for (CallType* c : parts) {
        c->decoded = absl::OkStatus();
        c->wire_response.Clear();
      }
      const int task = parts[0]->ps_task;
      Sent sent{index, nullptr, false, nullptr};
      const grpc::ByteBuffer* request = &parts[0]->wire_request;
      int method = MethodNumber(parts[0]->rpc.empty() ? rpc : parts[0]->rpc);
      if (parts.size() > 1) {
        sent.bundle = std::make_unique<BundleCall>();
        sent.bundle->request = EncodeBundleRequest(rpc, parts);
        request = &sent.bundle->request;
        method = rpc::kBundle;
      }
      absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>> connection =
          fresh ? nullptr : TakeIdleDataPlaneConnection(task);
      sent.reused = connection.ok() && *connection != nullptr;
      if (!sent.reused) connection = ConnectToDataPlane(task, deadline);
      if (!connection.ok()) {
        fail(parts, connection.status());
        return false;
      }
      sent.connection = *std::move(connection);
      absl::Status s = sent.connection->Send(method, *request, deadline);
      if (!s.ok() && sent.reused) {
        // The pooled connection had died; a new one gets the request.
        in_flight.push_back(std::move(sent));
        in_flight.back().connection = nullptr;
        return true;
      }
      if (!s.ok()) {
        fail(parts, s);
        return false;
      }
      in_flight.push_back(std::move(sent));
      return true;
    };
    RequestWindow window = Window(units);
    std::deque<size_t> to_start;
    for (size_t index : window.Open()) to_start.push_back(index);
    // Bounded: every unit is started once and ends once (sent again on a
    // fresh connection at most once, when its pooled connection had died).
    while (true) {
      while (!to_start.empty()) {
        const size_t index = to_start.front();
        to_start.pop_front();
        // A unit that fails before it is sent ends at once, making room.
        if (!start(index, /*fresh=*/false)) {
          if (std::optional<size_t> next = window.End(index)) {
            to_start.push_back(*next);
          }
        }
      }
      if (in_flight.empty()) break;
      Sent sent = std::move(in_flight.front());
      in_flight.pop_front();
      const std::vector<CallType*>& parts = units[sent.unit];
      bool resent = false;
      if (sent.connection == nullptr) {  // its pooled connection had died
        resent = start(sent.unit, /*fresh=*/true);
      } else {
        grpc::Status status;
        grpc::ByteBuffer* response = sent.bundle != nullptr
                                         ? &sent.bundle->response
                                         : &parts[0]->wire_response;
        absl::Status received =
            sent.connection->Receive(deadline, &status, response);
        if (!received.ok() && sent.reused &&
            received.code() == absl::StatusCode::kUnavailable) {
          resent = start(sent.unit, /*fresh=*/true);
        } else if (!received.ok()) {
          fail(parts, received);
        } else {
          GiveBackDataPlaneConnection(parts[0]->ps_task,
                                      std::move(sent.connection));
          if (sent.bundle != nullptr) {
            FinishBundle(parts, *sent.bundle, std::move(status), decode);
          } else {
            CallType* c = parts[0];
            c->status = std::move(status);
            if (c->status.ok()) c->decoded = decode(*c);
          }
        }
      }
      if (resent) continue;  // still in flight, on its new connection
      if (std::optional<size_t> next = window.End(sent.unit)) {
        to_start.push_back(*next);
      }
    }
    // Every unit went out (or failed trying): none is left reading as OK
    // without having been sent.
    assert(window.AllStarted());
  }

  // An idle connection to `task`'s data plane; null when there is none.
  std::unique_ptr<rpc::DataPlaneConnection> TakeIdleDataPlaneConnection(
      int task) {
    DataPlane& plane = data_planes_[task];
    absl::MutexLock lock(&plane.mu);
    if (plane.idle.empty()) return nullptr;
    std::unique_ptr<rpc::DataPlaneConnection> connection =
        std::move(plane.idle.back());
    plane.idle.pop_back();
    return connection;
  }

  // A new connection to `task`'s data plane. One that is refused or
  // unreachable (no hello within kConnectTimeout), or reaches something
  // else (another ps task, another start of it), sends the task back to
  // gRPC, with a warning, until OverDataPlane asks it again: after 5 s, and
  // twice as long after each failure in a row, up to 5 minutes, so that a
  // data plane behind a firewall stalls a step only now and then.
  absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>> ConnectToDataPlane(
      int task, absl::Time deadline) {
    DataPlane& plane = data_planes_[task];
    const int port = plane.port.load(std::memory_order_relaxed);
    if (port <= 0) return absl::UnavailableError("no TCP data plane");
    rpc::DataPlaneConnection::Expected expected;
    expected.task_index = task;
    expected.incarnation = plane.incarnation.load(std::memory_order_relaxed);
    const absl::Time connect_by =
        std::min(deadline, absl::Now() + kConnectTimeout);
    absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>> connection =
        rpc::DataPlaneConnection::Connect(HostOf(addresses_[task]), port,
                                          expected, connect_by,
                                          data_plane_tls_.get());
    const absl::StatusCode code = connection.status().code();
    const bool unreachable =
        code == absl::StatusCode::kUnavailable ||
        (code == absl::StatusCode::kDeadlineExceeded && connect_by < deadline);
    if (unreachable && plane.port.exchange(0) > 0) {
      const int failures = std::min(plane.failures.fetch_add(1) + 1, 7);
      const absl::Duration wait =
          std::min(kRelearnEvery * (1 << (failures - 1)), absl::Minutes(5));
      plane.relearn_after_ms.store(absl::ToUnixMillis(absl::Now() + wait));
      options_.log(absl::StrCat(
          "warning: ", TaskName(task), ": ", connection.status().message(),
          "; its tensors go over gRPC until it is asked again in ",
          absl::FormatDuration(wait)));
    }
    if (unreachable && code == absl::StatusCode::kDeadlineExceeded) {
      return absl::UnavailableError(absl::StrCat(
          TaskName(task), ": TCP data plane at port ", port,
          " did not answer within ", absl::FormatDuration(kConnectTimeout)));
    }
    return connection;
  }

  // A data plane's connection and hello take well under a millisecond on
  // a working network; this long means it is not reachable.
  static constexpr absl::Duration kConnectTimeout = absl::Seconds(5);

  // Keeps `connection` for the next call to `task`, up to kMaxIdle.
  void GiveBackDataPlaneConnection(
      int task, std::unique_ptr<rpc::DataPlaneConnection> connection) {
    DataPlane& plane = data_planes_[task];
    // A call went through: the next failure waits 5 s again.
    if (plane.failures.load(std::memory_order_relaxed) != 0) {
      plane.failures.store(0, std::memory_order_relaxed);
    }
    absl::MutexLock lock(&plane.mu);
    if (plane.idle.size() < kMaxIdleDataPlaneConnections) {
      plane.idle.push_back(std::move(connection));
    }
  }

  // Idle connections kept per ps task: each holds a thread of the task.
  static constexpr size_t kMaxIdleDataPlaneConnections = 16;

  // "host" of "host:port", "v6" of "[v6]:port".
  static std::string HostOf(const std::string& address) {
    std::string host = address.substr(0, address.rfind(':'));
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    return host;
  }

  // A Bundle call's own context and messages.
  struct BundleCall {
    std::unique_ptr<grpc::ClientContext> context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };

  // The most calls one Bundle carries.
  static constexpr size_t kMaxBundleParts = 64;

  // `round` cut into what SendWireRound sends as one call: a single call,
  // or calls to one ps task that are small enough to bundle (each carrying
  // at most bundle_below_bytes both ways, a bundle at most twice that, no
  // more than max_request_bytes, and kMaxBundleParts calls); the single
  // calls first, then the bundles, each in round order.
  template <typename CallType>
  std::vector<std::vector<CallType*>> BundleUnits(
      const std::vector<CallType*>& round) const {
    const int64_t limit = options_.bundle_below_bytes;
    // Within what the ps task accepts in one message, as every call is.
    const int64_t max_bytes = limit >= options_.max_request_bytes / 2
                                  ? options_.max_request_bytes
                                  : 2 * limit;
    std::vector<std::vector<CallType*>> units;
    std::vector<std::vector<CallType*>> small(num_tasks());
    std::vector<int64_t> small_bytes(num_tasks(), 0);
    for (CallType* c : round) {
      const int64_t bytes =
          static_cast<int64_t>(c->wire_request.Length()) + c->response_bytes;
      // (Every wire call is sent without waiting for the connection today;
      // one that waits goes alone rather than make a bundle wait.)
      if (limit <= 0 || bytes > limit || bytes > max_bytes ||
          c->wait_for_ready ||
          serves_no_bundles_[c->ps_task].load(std::memory_order_relaxed)) {
        units.push_back({c});
        continue;
      }
      std::vector<CallType*>& group = small[c->ps_task];
      int64_t& group_bytes = small_bytes[c->ps_task];
      if (group.size() == kMaxBundleParts || group_bytes + bytes > max_bytes) {
        units.push_back(std::move(group));
        group.clear();
        group_bytes = 0;
      }
      group.push_back(c);
      group_bytes += bytes;
    }
    for (std::vector<CallType*>& group : small) {
      if (group.size() == 1) {
        units.push_back({group[0]});
      } else if (!group.empty()) {
        units.push_back(std::move(group));
      }
    }
    return units;
  }

  // Sends `parts` (calls to one ps task) as one Bundle call through the
  // task's first connection; when it ends, gives each call its part's
  // status and response (decoding those that succeeded) and runs `done`.
  // A failed Bundle fails every part alike; one refused as unknown (an
  // older ps_server) is marked retryable, and the task gets no more.
  template <typename CallType, typename Decode, typename Done>
  void SendBundle(absl::string_view rpc, const std::vector<CallType*>& parts,
                  BundleCall& bundle,
                  std::chrono::system_clock::time_point deadline,
                  Decode& decode, Done done) {
    bundle.request = EncodeBundleRequest(rpc, parts);
    bundle.context = std::make_unique<grpc::ClientContext>();
    bundle.context->set_deadline(deadline);
    wire_stubs_[parts[0]->ps_task][0]->UnaryCall(
        bundle.context.get(), bundle_method_, grpc::StubOptions(),
        &bundle.request, &bundle.response,
        [this, parts, &bundle, &decode, done](grpc::Status status) {
          FinishBundle(parts, bundle, std::move(status), decode);
          done();
        });
  }

  // A Bundle request carrying `parts`.
  template <typename CallType>
  static grpc::ByteBuffer EncodeBundleRequest(
      absl::string_view rpc, const std::vector<CallType*>& parts) {
    std::vector<rpc::WirePart> request(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      request[i].method =
          std::string(parts[i]->rpc.empty() ? rpc : parts[i]->rpc);
      request[i].message = parts[i]->wire_request;  // shares its slices
    }
    return rpc::EncodeBundle(request);
  }

  // Gives `parts` the outcome of their Bundle call, which ended with
  // `status` (see SendBundle).
  template <typename CallType, typename Decode>
  void FinishBundle(const std::vector<CallType*>& parts, BundleCall& bundle,
                    grpc::Status status, Decode& decode) {
    const int task = parts[0]->ps_task;
    if (status.ok()) {
      status = TakeBundleAnswers(task, bundle.response, parts, decode);
    }
    if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      serves_no_bundles_[task].store(true, std::memory_order_relaxed);
      status = grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          absl::StrCat(TaskName(task),
                       " does not serve Bundle (an older ps_server?); "
                       "its requests go one by one from now on"));
    }
    if (!status.ok()) {
      for (CallType* c : parts) c->status = status;
    }
  }

  // Gives each of `parts` its answer in a Bundle response, decoding those
  // that succeeded. An error when the response does not answer them all.
  template <typename CallType, typename Decode>
  grpc::Status TakeBundleAnswers(int task, grpc::ByteBuffer& response,
                                 const std::vector<CallType*>& parts,
                                 Decode& decode) {
    absl::StatusOr<std::vector<rpc::WirePart>> answers = rpc::DecodeBundle(
        &response, absl::StrCat("Bundle response from ", TaskName(task)));
    if (answers.ok() && answers->size() != parts.size()) {
      answers = absl::InternalError(
          absl::StrCat(TaskName(task), " answered ", answers->size(),
                       " parts of a Bundle of ", parts.size()));
    }
    if (!answers.ok()) return rpc::ToGrpcStatus(answers.status());
    for (const rpc::WirePart& answer : *answers) {
      if (answer.code < 0 || answer.code > grpc::StatusCode::UNAUTHENTICATED) {
        return grpc::Status(grpc::StatusCode::INTERNAL,
                            absl::StrCat(TaskName(task),
                                         " answered a part of "
                                         "a Bundle with status code ",
                                         answer.code));
      }
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      CallType* c = parts[i];
      rpc::WirePart& answer = (*answers)[i];
      c->status = grpc::Status(static_cast<grpc::StatusCode>(answer.code),
                               answer.error);
      c->wire_response = std::move(answer.message);
      if (c->status.ok()) c->decoded = decode(*c);
    }
    return grpc::Status::OK;
  }

  // Decodes a pull's response, whose field 1 is `bytes` bytes of elements
  // of type T, into `destination`. INTERNAL naming the ps task when it sent
  // another size, type or shape.
  template <typename T, typename CallType>
  absl::Status DecodePulled(CallType& call, absl::string_view what,
                            T* destination, int64_t elements) {
    rpc::IncomingTensor values(1);
    const int64_t expected = elements * int64_t{sizeof(T)};
    const auto wrong = [&](absl::string_view detail) {
      return absl::InternalError(
          absl::StrCat(TaskName(call.ps_task), " sent ", what, " ", detail));
    };
    values.destination = [&](int64_t bytes) -> absl::StatusOr<char*> {
      if (bytes != expected) {
        return wrong(absl::StrCat("of ", bytes, " bytes, expected ", expected));
      }
      return reinterpret_cast<char*>(destination);
    };
    typename CallType::ResponseType fields;
    RETURN_IF_ERROR(rpc::DecodeWithTensors(
        &call.wire_response,
        absl::StrCat(what, " from ", TaskName(call.ps_task)), &fields,
        {&values}));
    if (values.bytes != expected) {
      return wrong(
          absl::StrCat("of ", values.bytes, " bytes, expected ", expected));
    }
    std::vector<T> unused;
    absl::StatusOr<absl::Span<const T>> checked;
    if constexpr (std::is_same_v<T, float>) {
      checked = rpc::Float32Elements(values.view(), what, &unused);
    } else {
      checked = rpc::Int64Elements(values.view(), what, &unused);
    }
    if (!checked.ok()) {  // the message names `what` already
      return absl::InternalError(absl::StrCat(TaskName(call.ps_task), ": ",
                                              checked.status().message()));
    }
    return absl::OkStatus();
  }

  template <typename CallType>
  absl::Status FirstError(absl::string_view rpc,
                          const std::vector<std::unique_ptr<CallType>>& calls,
                          bool ignore_not_found = false) const {
    for (const auto& call : calls) {
      if (ignore_not_found &&
          call->status.error_code() == grpc::StatusCode::NOT_FOUND) {
        continue;
      }
      RETURN_IF_ERROR(CallError(rpc, *call));
    }
    return absl::OkStatus();
  }

  // The call's gRPC error, naming the RPC and the ps task; OK when none.
  absl::Status CallError(absl::string_view rpc, const CallBase& call) const {
    if (call.status.ok()) return absl::OkStatus();
    absl::Status error = rpc::FromGrpcStatus(
        call.status, absl::StrCat(call.rpc.empty() ? rpc : call.rpc, call.about,
                                  " to ", TaskName(call.ps_task)));
    if (call.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
        !call.earlier_failure.ok()) {
      error = absl::Status(
          error.code(), absl::StrCat(error.message(), " (an earlier attempt: ",
                                     Describe(call.earlier_failure), ")"));
    }
    return error;
  }

  const PsClient::Options& options() const { return options_; }

 private:
  PsClient::Options options_;
  const std::vector<std::string> addresses_;
  absl::Mutex log_mu_;
  absl::Time last_retry_log_ ABSL_GUARDED_BY(log_mu_) = absl::InfinitePast();
  const uint64_t request_id_seed_ =
      (uint64_t{std::random_device()()} << 32) ^ std::random_device()();
  std::atomic<uint64_t> next_request_{0};
  // Per ps task, for the RPCs without tensors: its first connection.
  std::vector<std::unique_ptr<Stub>> stubs_;
  // Per ps task and stripe (connections_per_task of them), for the RPCs
  // that carry tensors as message bytes.
  std::vector<std::vector<std::unique_ptr<grpc::GenericStub>>> wire_stubs_;
  const std::string bundle_method_ =
      absl::StrCat("/", ps::ParameterServer::service_full_name(), "/Bundle");
  // Per ps task: whether it refused a Bundle (so its calls go alone).
  std::unique_ptr<std::atomic<bool>[]> serves_no_bundles_ =
      std::make_unique<std::atomic<bool>[]>(addresses_.size());
  // Per ps task, with Options::data_plane: its TCP data plane's port (0:
  // none, gRPC; -1: not known yet, gRPC) and the connections to it not in
  // use.
  struct DataPlane {
    std::atomic<int> port{-1};
    std::atomic<uint64_t> incarnation{0};
    // When (Unix ms) to ask a task sent back to gRPC for its data plane
    // again; 0: never.
    std::atomic<int64_t> relearn_after_ms{0};
    // Times in a row its data plane could not be reached.
    std::atomic<int> failures{0};
    absl::Mutex mu;
    std::vector<std::unique_ptr<rpc::DataPlaneConnection>> idle
        ABSL_GUARDED_BY(mu);
  };
  std::unique_ptr<DataPlane[]> data_planes_ =
      std::make_unique<DataPlane[]>(addresses_.size());
  const std::shared_ptr<const rpc::DataPlaneTls> data_plane_tls_;
};

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_TRANSPORT_H_
