#include "client/ps_client.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "client/id_repeats.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/grpc_status.h"
#include "rpc/tensor_codec.h"
#include "rpc/transport_security.h"
#include "rpc/wire_message.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/splitmix64.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using Stub = ps::ParameterServer::Stub;

// What every request has, whatever its messages: the ps task, the gRPC
// call, and for the RPCs that carry tensors, the message bytes.
struct CallBase {
  explicit CallBase(int task) : ps_task(task) {}
  const int ps_task;
  // The current attempt's context: a context serves one attempt only.
  std::unique_ptr<grpc::ClientContext> context;
  // Whether attempts wait for the connection (rather than failing at once
  // while the ps task is unreachable).
  bool wait_for_ready = false;
  grpc::Status status;
  // The RPC, when the calls sent together are of several (PullMany); empty
  // when it is the one RunWire is given.
  absl::string_view rpc;
  // Said in errors after the RPC's name (e.g. " of \"w\""); may be empty.
  std::string about;

  // RPCs that carry tensors go as message bytes (rpc/wire_message.h): the
  // other fields are encoded beside the tensors.
  grpc::ByteBuffer wire_request;
  grpc::ByteBuffer wire_response;
  // Decoding the response, run as it arrives.
  absl::Status decoded;
  // The method's full name when not the one RunWire is given, and which of
  // its ps task's connections it goes through.
  std::string method;
  int stripe = 0;

  // A fresh context for the next attempt, ending at `deadline`.
  grpc::ClientContext* NewAttempt(
      std::chrono::system_clock::time_point deadline) {
    context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(deadline);
    context->set_wait_for_ready(wait_for_ready);
    return context.get();
  }
};

// One request of a batch sent in parallel.
template <typename Request, typename Response>
struct Call : CallBase {
  using ResponseType = Response;
  explicit Call(int task) : CallBase(task) {}
  // For RPCs sent as message bytes, the fields that are not tensors.
  Request request;
  Response response;
  // Where the request's elements go in, or come from, the caller's buffer:
  // a contiguous run (dense) or one position per id (sparse).
  int64_t offset = 0;
  std::vector<size_t> positions;

  // Sparse requests: the ids at `positions`, and the rows pulled for them
  // or the gradients pushed.
  std::vector<int64_t> ids;
  std::vector<float> rows;
};

// Rows of the variable at `variable` in a PullMany / PushMany list.
struct DensePiece {
  size_t variable = 0;
  RowRange rows;
};

// A request of PullMany / PushMany: one piece (PullDense / PushDense), or
// several small ones in one batch (PullDenseBatch / PushDenseBatch).
struct ManyCall : CallBase {
  // A single piece's response, when decoded as PullDense's.
  using ResponseType = ps::PullDenseResponse;
  using CallBase::CallBase;
  bool batch = false;
  std::vector<DensePiece> pieces;  // in the request's order
};

// The bytes of a tensor's elements.
template <typename T>
absl::Span<const char> BytesOf(absl::Span<const T> values) {
  return {reinterpret_cast<const char*>(values.data()),
          values.size() * sizeof(T)};
}

template <typename T>
constexpr ps::DataType WireDType() {
  return std::is_same_v<T, float> ? ps::FLOAT32 : ps::INT64;
}

// "rows [b, e) of "name"", as errors name a piece of a variable.
std::string RowsOf(absl::string_view name, RowRange rows) {
  return absl::StrCat("rows ", RowRangeString(rows), " of \"", name, "\"");
}

// Names the rows of a PullDense / PushDense request (or batch item).
template <typename Request>
void SetRows(const std::string& name, RowRange rows, Request* request) {
  request->set_name(name);
  *request->mutable_rows() = RowRangeToProto(rows);
}

// The bytes of a PushDense request: `request`'s fields and `grad` (rows of
// elements of T), sent from where `grad` lies, which must outlive the call.
template <typename T>
grpc::ByteBuffer EncodeDensePush(const ps::PushDenseRequest& request,
                                 absl::Span<const T> grad) {
  return rpc::EncodeWithTensors(request, {{3,
                                           WireDType<T>(),
                                           {static_cast<int64_t>(grad.size())},
                                           BytesOf(grad),
                                           nullptr}});
}

template <typename Request, typename Response>
using Calls = std::vector<std::unique_ptr<Call<Request, Response>>>;

// One call of `request` to each of `tasks`.
template <typename Response, typename Request>
Calls<Request, Response> CallTasks(const std::vector<int>& tasks,
                                   const Request& request) {
  Calls<Request, Response> calls;
  for (int task : tasks) {
    calls.push_back(std::make_unique<Call<Request, Response>>(task));
    calls.back()->request = request;
  }
  return calls;
}

// Tasks 0..n-1.
std::vector<int> AllTasks(int n) {
  std::vector<int> tasks(n);
  for (int t = 0; t < n; ++t) tasks[t] = t;
  return tasks;
}

absl::Status SizeMismatch(absl::string_view variable, absl::string_view what,
                          size_t given, int64_t expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("variable \"", variable, "\": ", what, " has ", given,
                   " elements, expected ", expected));
}

// Distinct ids grouped by the ps task (and part) that holds them, in
// requests of at most `max_ids` ids; each call's positions are those of its
// ids' first occurrences in `ids`, ascending. `shard_of(id)` is the part
// index, or -1 for an id that is not a row.
template <typename Request, typename Response, typename ShardOf,
          typename TaskOfShard>
absl::StatusOr<Calls<Request, Response>> GroupIds(
    absl::Span<const int64_t> ids, const IdRepeats& repeats, int64_t max_ids,
    ShardOf shard_of, TaskOfShard task_of_shard, absl::string_view name) {
  std::map<int, std::vector<size_t>> positions_by_shard;
  const size_t num_distinct = repeats.any() ? repeats.first.size() : ids.size();
  for (size_t d = 0; d < num_distinct; ++d) {
    const size_t i = repeats.any() ? repeats.first[d] : d;
    const int shard = shard_of(ids[i]);
    if (shard < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable \"", name, "\": id ", ids[i], " is not one of its rows"));
    }
    positions_by_shard[shard].push_back(i);
  }
  Calls<Request, Response> calls;
  for (auto& [shard, positions] : positions_by_shard) {
    for (size_t begin = 0; begin < positions.size(); begin += max_ids) {
      const size_t end = std::min<size_t>(positions.size(), begin + max_ids);
      auto call =
          std::make_unique<Call<Request, Response>>(task_of_shard(shard));
      call->positions.assign(positions.begin() + begin,
                             positions.begin() + end);
      call->ids.reserve(call->positions.size());
      for (size_t p : call->positions) call->ids.push_back(ids[p]);
      calls.push_back(std::move(call));
    }
  }
  return calls;
}

}  // namespace

class PsClient::Impl {
 public:
  Impl(Options options, std::vector<std::string> addresses,
       VariablePlacer placer)
      : options_(std::move(options)),
        addresses_(std::move(addresses)),
        placer_(std::move(placer)) {
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

  // The deadline of one attempt of a request: rpc_timeout, and never more
  // than ps_failure_timeout, so that a ps task that stopped answering is
  // given up on in time.
  absl::Duration AttemptTimeout() const {
    return std::min(options_.rpc_timeout, options_.ps_failure_timeout);
  }

  // Whether a failed call may be sent again: the ps task could not be
  // reached, or did not answer in time. Pushes may be too: the ps task
  // applies each request id once (NewRequestId).
  static bool Retryable(const grpc::Status& status) {
    return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
           status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  }

  // Sends `send` (the calls of one operation) until none fails in a way
  // worth retrying, or until ps_failure_timeout from now. `send_round(round)`
  // sends the calls given and returns when all have ended. Between rounds it
  // waits an exponential backoff with full jitter, so that workers that lost
  // the same ps task do not come back at the same moment. UNAVAILABLE naming
  // the ps task and the last error when time runs out.
  template <typename CallType, typename SendRound>
  absl::Status SendWithRetries(absl::string_view rpc,
                               std::vector<CallType*> send, bool retry,
                               SendRound send_round) {
    const absl::Time give_up = absl::Now() + options_.ps_failure_timeout;
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
            absl::FormatDuration(options_.ps_failure_timeout),
            " (--ps_failure_timeout); last error: ", Describe(first.status)));
      }
      LogRetry(first, rpc, give_up - now);
      absl::SleepFor(std::min(give_up - now, Jittered(backoff)));
      backoff = std::min(options_.max_retry_backoff, backoff * 2);
      for (CallType* call : failed) call->status = grpc::Status();
      send = std::move(failed);
    }
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
                     " (--ps_failure_timeout)"));
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
          const auto deadline = std::chrono::system_clock::now() +
                                absl::ToChronoMilliseconds(timeout);
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
    if (!gave_up.ok()) return gave_up;
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
    if (calls.empty()) return absl::OkStatus();
    const auto method_of = [](absl::string_view name) {
      return absl::StrCat("/", ps::ParameterServer::service_full_name(), "/",
                          name);
    };
    const std::string method = method_of(rpc);
    std::vector<int> calls_per_task(num_tasks(), 0);
    std::vector<CallType*> all;
    for (auto& call : calls) {
      CallType& c = *call;
      if (!c.rpc.empty() && c.rpc != rpc) c.method = method_of(c.rpc);
      // Round-robin over the task's connections.
      c.stripe = calls_per_task[c.ps_task]++ % options_.connections_per_task;
      all.push_back(call.get());
    }
    absl::Status gave_up =
        SendWithRetries(rpc, std::move(all), /*retry=*/true,
                        [&](const std::vector<CallType*>& round) {
                          SendWireRound(method, round, decode);
                        });
    if (!gave_up.ok()) return gave_up;
    RETURN_IF_ERROR(FirstError(rpc, calls));
    for (const auto& call : calls) {
      if (!call->decoded.ok()) return call->decoded;
    }
    return absl::OkStatus();
  }

  // Sends `round` through RunWire's connections, at most
  // max_requests_in_flight at a time (each answer starts the next one), and
  // returns when every call has ended.
  template <typename CallType, typename Decode>
  void SendWireRound(const std::string& method,
                     const std::vector<CallType*>& round, Decode& decode) {
    absl::BlockingCounter pending(round.size());
    const auto deadline = std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(AttemptTimeout());
    std::atomic<size_t> next_to_start{0};
    std::function<void()> start_next = [&] {
      const size_t index = next_to_start.fetch_add(1);
      if (index >= round.size()) return;
      CallType* c = round[index];
      c->decoded = absl::OkStatus();
      c->wire_response.Clear();
      wire_stubs_[c->ps_task][c->stripe]->UnaryCall(
          c->NewAttempt(deadline), c->method.empty() ? method : c->method,
          grpc::StubOptions(), &c->wire_request, &c->wire_response,
          [c, &pending, &decode, &start_next](grpc::Status status) {
            c->status = std::move(status);
            if (c->status.ok()) c->decoded = decode(*c);
            start_next();
            pending.DecrementCount();
          });
    };
    const size_t window = std::min<size_t>(
        round.size(), std::max(1, options_.max_requests_in_flight));
    for (size_t i = 0; i < window; ++i) start_next();
    pending.Wait();
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
      if (call->status.ok()) continue;
      if (ignore_not_found &&
          call->status.error_code() == grpc::StatusCode::NOT_FOUND) {
        continue;
      }
      return rpc::FromGrpcStatus(
          call->status,
          absl::StrCat(call->rpc.empty() ? rpc : call->rpc, call->about, " to ",
                       TaskName(call->ps_task)));
    }
    return absl::OkStatus();
  }

  // Pieces of `rows` of `variable`: one per part it overlaps, each cut into
  // requests of at most max_request_bytes.
  template <typename Request, typename Response>
  Calls<Request, Response> SplitRows(const VariablePlacement& variable,
                                     RowRange rows) const {
    const int64_t width = RowWidth(variable.spec);
    Calls<Request, Response> calls;
    ForEachPiece(variable, rows, [&](int ps_task, RowRange piece) {
      auto call = std::make_unique<Call<Request, Response>>(ps_task);
      SetRows(variable.spec.name, piece, &call->request);
      call->offset = (piece.begin - rows.begin) * width;
      calls.push_back(std::move(call));
    });
    return calls;
  }

  // Calls `piece(ps_task, rows)` for each piece of SplitRows, in order.
  template <typename Piece>
  void ForEachPiece(const VariablePlacement& variable, RowRange rows,
                    Piece piece) const {
    const int64_t row_bytes = std::max<int64_t>(
        1, RowWidth(variable.spec) * DTypeSize(variable.spec.dtype));
    const int64_t max_rows =
        std::max<int64_t>(1, options_.max_request_bytes / row_bytes);
    for (const VariablePart& part : variable.parts) {
      const int64_t begin = std::max(rows.begin, part.rows.begin);
      const int64_t end = std::min(rows.end, part.rows.end);
      for (int64_t b = begin; b < end; b += max_rows) {
        piece(part.ps_task, RowRange{b, std::min(end, b + max_rows)});
      }
    }
  }

  absl::Status CheckRows(const VariablePlacement& variable, RowRange rows,
                         size_t buffer, absl::string_view what) const {
    const int64_t num_rows = NumRows(variable.spec);
    if (rows.begin < 0 || rows.begin > rows.end || rows.end > num_rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable \"", variable.spec.name, "\": rows ", RowRangeString(rows),
          " are not within its ", num_rows, " rows"));
    }
    const int64_t expected = rows.size() * RowWidth(variable.spec);
    if (static_cast<int64_t>(buffer) != expected) {
      return SizeMismatch(variable.spec.name, what, buffer, expected);
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::Status PullDense(const VariablePlacement& variable, RowRange rows,
                         absl::Span<T> out) {
    RETURN_IF_ERROR(CheckRows(variable, rows, out.size(), "the buffer"));
    auto calls =
        SplitRows<ps::PullDenseRequest, ps::PullDenseResponse>(variable, rows);
    const int64_t width = RowWidth(variable.spec);
    for (auto& call : calls) {
      call->wire_request = rpc::EncodeWithTensors(call->request, {});
    }
    return RunWire("PullDense", calls, [&](auto& call) {
      const RowRange piece = RowRangeFromProto(call.request.rows());
      return DecodePulled(call, RowsOf(variable.spec.name, piece),
                          out.data() + call.offset, piece.size() * width);
    });
  }

  template <typename T>
  absl::Status PushDense(const VariablePlacement& variable, RowRange rows,
                         absl::Span<const T> values,
                         ps::DenseWrite write = ps::APPLY_GRADIENT) {
    RETURN_IF_ERROR(
        CheckRows(variable, rows, values.size(), "the pushed tensor"));
    auto calls =
        SplitRows<ps::PushDenseRequest, ps::PushDenseResponse>(variable, rows);
    const int64_t width = RowWidth(variable.spec);
    for (auto& call : calls) {
      const RowRange piece = RowRangeFromProto(call->request.rows());
      call->request.set_request_id(NewRequestId());
      call->request.set_write(write);
      // Sent from `values` itself: the call ends before this returns.
      call->wire_request = EncodeDensePush(
          call->request, values.subspan(call->offset, piece.size() * width));
    }
    return RunWire("PushDense", calls, [](auto&) { return absl::OkStatus(); });
  }

  // Checks an item of PullMany / PushMany: a float32 variable, and a buffer
  // of all its elements (as Pull and Push check it).
  absl::Status CheckManyItem(const VariablePlacement* variable, size_t index,
                             size_t buffer, absl::string_view what) const {
    if (variable == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("item ", index, " of the list has no variable"));
    }
    if (variable->spec.dtype != DType::kFloat32) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable \"", variable->spec.name, "\" is ",
                       DTypeName(variable->spec.dtype),
                       "; PullMany and PushMany take float32 variables only"));
    }
    return CheckRows(*variable, {0, NumRows(variable->spec)}, buffer, what);
  }

  // The requests of PullMany / PushMany over whole `variables`. Per ps task:
  // its parts of at most batch_below_bytes (and max_request_bytes) in
  // batches of at most max_request_bytes, sent as `batch_rpc` (a batch of
  // one as `single_rpc`), then the other parts in SplitRows's pieces, sent
  // as `single_rpc`. The tasks' requests are interleaved, so that the first
  // ones in flight go to every task.
  std::vector<std::unique_ptr<ManyCall>> PlanMany(
      const std::vector<const VariablePlacement*>& variables,
      absl::string_view single_rpc, absl::string_view batch_rpc) const {
    const int n = num_tasks();
    const auto bytes_of = [&](const DensePiece& piece) {
      return piece.rows.size() * RowWidth(variables[piece.variable]->spec) *
             int64_t{sizeof(float)};
    };
    // What an item of a batch costs beside its elements: its name, row
    // range, dtype and shape, with their tags and lengths (generously), so
    // that thousands of scalars still make requests within the limit.
    const auto item_bytes = [&](const DensePiece& piece) {
      return bytes_of(piece) + 64 +
             static_cast<int64_t>(variables[piece.variable]->spec.name.size()) +
             static_cast<int64_t>(10 *
                                  variables[piece.variable]->spec.shape.size());
    };
    const int64_t batch_limit =
        std::min(options_.batch_below_bytes, options_.max_request_bytes);
    std::vector<std::vector<DensePiece>> small(n);
    std::vector<std::vector<DensePiece>> large(n);
    for (size_t v = 0; v < variables.size(); ++v) {
      for (const VariablePart& part : variables[v]->parts) {
        const int64_t bytes = bytes_of({v, part.rows});
        if (bytes > 0 && bytes <= batch_limit) {
          small[part.ps_task].push_back({v, part.rows});
        } else {
          ForEachPiece(*variables[v], part.rows, [&](int task, RowRange rows) {
            large[task].push_back({v, rows});
          });
        }
      }
    }
    std::vector<std::vector<std::unique_ptr<ManyCall>>> by_task(n);
    for (int task = 0; task < n; ++task) {
      const std::vector<DensePiece>& pieces = small[task];
      for (size_t begin = 0; begin < pieces.size();) {
        size_t end = begin + 1;
        int64_t bytes = item_bytes(pieces[begin]);
        while (end < pieces.size() &&
               bytes + item_bytes(pieces[end]) <= options_.max_request_bytes) {
          bytes += item_bytes(pieces[end++]);
        }
        auto call = std::make_unique<ManyCall>(task);
        call->batch = end - begin > 1;
        call->pieces.assign(pieces.begin() + begin, pieces.begin() + end);
        by_task[task].push_back(std::move(call));
        begin = end;
      }
      for (const DensePiece& piece : large[task]) {
        by_task[task].push_back(std::make_unique<ManyCall>(task));
        by_task[task].back()->pieces.push_back(piece);
      }
    }
    std::vector<std::unique_ptr<ManyCall>> calls;
    for (size_t round = 0;; ++round) {
      const size_t before = calls.size();
      for (auto& task_calls : by_task) {
        if (round < task_calls.size()) {
          calls.push_back(std::move(task_calls[round]));
        }
      }
      if (calls.size() == before) break;
    }
    for (auto& call : calls) {
      call->rpc = call->batch ? batch_rpc : single_rpc;
      const auto name = [&](size_t i) -> const std::string& {
        return variables[call->pieces[i].variable]->spec.name;
      };
      if (!call->batch) {
        call->about =
            absl::StrCat(" of ", RowsOf(name(0), call->pieces[0].rows));
        continue;
      }
      // Errors name the batch's variables, the first few of many.
      constexpr size_t kNamed = 4;
      std::vector<absl::string_view> names;
      for (size_t i = 0; i < call->pieces.size() && i < kNamed; ++i) {
        names.push_back(name(i));
      }
      call->about =
          absl::StrCat(" of \"", absl::StrJoin(names, "\", \""), "\"");
      if (call->pieces.size() > kNamed) {
        absl::StrAppend(&call->about, " and ", call->pieces.size() - kNamed,
                        " more");
      }
    }
    return calls;
  }

  absl::Status PullMany(absl::Span<const DenseVariablePull> pulls) {
    std::vector<const VariablePlacement*> variables;
    for (size_t i = 0; i < pulls.size(); ++i) {
      RETURN_IF_ERROR(CheckManyItem(pulls[i].variable, i, pulls[i].out.size(),
                                    "the buffer"));
      variables.push_back(pulls[i].variable);
    }
    std::vector<std::unique_ptr<ManyCall>> calls =
        PlanMany(variables, "PullDense", "PullDenseBatch");
    for (auto& call : calls) {
      if (call->batch) {
        ps::PullDenseBatchRequest request;
        for (const DensePiece& piece : call->pieces) {
          SetRows(variables[piece.variable]->spec.name, piece.rows,
                  request.add_pulls());
        }
        call->wire_request = rpc::EncodeWithTensors(request, {});
      } else {
        ps::PullDenseRequest request;
        const DensePiece& piece = call->pieces[0];
        SetRows(variables[piece.variable]->spec.name, piece.rows, &request);
        call->wire_request = rpc::EncodeWithTensors(request, {});
      }
    }
    return RunWire("PullDense", calls, [&](ManyCall& call) -> absl::Status {
      if (call.batch) return DecodeBatchPulled(call, pulls);
      const DensePiece& piece = call.pieces[0];
      const VariableSpec& spec = variables[piece.variable]->spec;
      const int64_t width = RowWidth(spec);
      return DecodePulled(
          call, RowsOf(spec.name, piece.rows),
          pulls[piece.variable].out.data() + piece.rows.begin * width,
          piece.rows.size() * width);
    });
  }

  // Decodes a PullDenseBatch response (a protobuf message: its tensors are
  // small) into the buffers of `pulls`. INTERNAL naming the ps task and the
  // variable when it sent another number of items, or an item of another
  // dtype, shape or size.
  absl::Status DecodeBatchPulled(ManyCall& call,
                                 absl::Span<const DenseVariablePull> pulls) {
    ps::PullDenseBatchResponse response;
    RETURN_IF_ERROR(rpc::DecodeWithTensors(
        &call.wire_response,
        absl::StrCat("PullDenseBatch response from ", TaskName(call.ps_task)),
        &response, {}));
    const auto what = [&](size_t i) {
      const DensePiece& piece = call.pieces[i];
      return RowsOf(pulls[piece.variable].variable->spec.name, piece.rows);
    };
    if (static_cast<size_t>(response.pulls_size()) != call.pieces.size()) {
      return absl::InternalError(absl::StrCat(
          TaskName(call.ps_task), " sent ", response.pulls_size(),
          " tensors for a batch of ", call.pieces.size(), " pulls, from ",
          what(0), " to ", what(call.pieces.size() - 1)));
    }
    for (size_t i = 0; i < call.pieces.size(); ++i) {
      const DensePiece& piece = call.pieces[i];
      const DenseVariablePull& pull = pulls[piece.variable];
      const VariableSpec& spec = pull.variable->spec;
      const ps::Tensor& values = response.pulls(i).values();
      const auto wrong = [&](absl::string_view detail) {
        return absl::InternalError(absl::StrCat(
            TaskName(call.ps_task), " sent ", what(i), " ", detail));
      };
      if (values.dtype() != ps::FLOAT32) {
        return wrong(absl::StrCat("of dtype ",
                                  rpc::DataTypeName(values.dtype()),
                                  ", expected float32"));
      }
      const std::vector<int64_t> expected_shape =
          ShapeOfRows(spec, piece.rows.size());
      if (!std::equal(values.shape().begin(), values.shape().end(),
                      expected_shape.begin(), expected_shape.end())) {
        return wrong(absl::StrCat("of shape ", ShapeString(values.shape()),
                                  ", expected ", ShapeString(expected_shape)));
      }
      const int64_t width = RowWidth(spec);
      const int64_t expected =
          piece.rows.size() * width * int64_t{sizeof(float)};
      if (static_cast<int64_t>(values.data().size()) != expected) {
        return wrong(absl::StrCat("of ", values.data().size(),
                                  " bytes, expected ", expected));
      }
      std::memcpy(pull.out.data() + piece.rows.begin * width,
                  values.data().data(), expected);
    }
    return absl::OkStatus();
  }

  absl::Status PushMany(absl::Span<const DenseVariablePush> pushes) {
    std::vector<const VariablePlacement*> variables;
    for (size_t i = 0; i < pushes.size(); ++i) {
      RETURN_IF_ERROR(CheckManyItem(
          pushes[i].variable, i, pushes[i].grad.size(), "the pushed tensor"));
      variables.push_back(pushes[i].variable);
    }
    std::vector<std::unique_ptr<ManyCall>> calls =
        PlanMany(variables, "PushDense", "PushDenseBatch");
    // The gradient of a piece, in the caller's buffer.
    const auto grad_of = [&](const DensePiece& piece) {
      const int64_t width = RowWidth(variables[piece.variable]->spec);
      return pushes[piece.variable].grad.subspan(piece.rows.begin * width,
                                                 piece.rows.size() * width);
    };
    for (auto& call : calls) {
      if (call->batch) {  // copied into the message: the pieces are small
        ps::PushDenseBatchRequest request;
        request.set_request_id(NewRequestId());
        for (const DensePiece& piece : call->pieces) {
          ps::PushDenseRequest* item = request.add_pushes();
          SetRows(variables[piece.variable]->spec.name, piece.rows, item);
          const absl::Span<const float> grad = grad_of(piece);
          rpc::EncodeFloat32(grad, {static_cast<int64_t>(grad.size())},
                             item->mutable_values());
        }
        call->wire_request = rpc::EncodeWithTensors(request, {});
        continue;
      }
      const DensePiece& piece = call->pieces[0];
      ps::PushDenseRequest request;
      SetRows(variables[piece.variable]->spec.name, piece.rows, &request);
      request.set_request_id(NewRequestId());
      // Sent from the caller's buffer: the call ends before this returns.
      call->wire_request = EncodeDensePush(request, grad_of(piece));
    }
    return RunWire("PushDense", calls, [](auto&) { return absl::OkStatus(); });
  }

  int64_t MaxIdsPerRequest(int64_t width) const {
    return std::max<int64_t>(
        1, options_.max_request_bytes /
               std::max<int64_t>(1, width * int64_t{sizeof(float)}));
  }

  // Pulls the rows of every call's ids through `rpc` and puts each where
  // its id was in the caller's list, in `out`, and where it repeats.
  template <typename Calls>
  absl::Status PullRowsById(absl::string_view rpc, Calls& calls, int64_t width,
                            absl::string_view name, const IdRepeats& repeats,
                            absl::Span<float> out) {
    for (auto& call : calls) {
      call->wire_request = rpc::EncodeWithTensors(
          call->request, {{2,
                           ps::INT64,
                           {static_cast<int64_t>(call->ids.size())},
                           BytesOf(absl::MakeConstSpan(call->ids)),
                           nullptr}});
    }
    const absl::Status pulled = RunWire(rpc, calls, [&](auto& call) {
      const std::string what =
          absl::StrCat(call.ids.size(), " rows of \"", name, "\"");
      const int64_t elements = call.ids.size() * width;
      if (IsContiguous(call.positions)) {  // straight into place
        return DecodePulled(
            call, what, out.data() + call.positions.front() * width, elements);
      }
      call.rows.resize(elements);
      absl::Status s = DecodePulled(call, what, call.rows.data(), elements);
      if (!s.ok()) return s;
      for (size_t i = 0; i < call.positions.size(); ++i) {
        std::copy_n(call.rows.begin() + i * width, width,
                    out.begin() + call.positions[i] * width);
      }
      return absl::OkStatus();
    });
    if (!pulled.ok()) return pulled;
    if (repeats.any()) {  // rows were pulled for first occurrences only
      for (size_t i = 0; i < repeats.distinct_of.size(); ++i) {
        const size_t first = repeats.first[repeats.distinct_of[i]];
        if (first != i) {
          std::copy_n(out.begin() + first * width, width,
                      out.begin() + i * width);
        }
      }
    }
    return absl::OkStatus();
  }

  // Pushes `grads` (one row per id of the caller's list) through `rpc`,
  // each call with the rows at its positions, or, where ids repeat, each
  // distinct id's gradients summed in the order they appear.
  template <typename Calls>
  absl::Status PushRowsById(absl::string_view rpc, Calls& calls, int64_t width,
                            const IdRepeats& repeats,
                            absl::Span<const float> grads) {
    if (repeats.any()) {
      // Each distinct id's row in its call, then every gradient added to it.
      std::vector<float*> row_of(repeats.first.size());
      for (auto& call : calls) {
        call->rows.resize(call->positions.size() * width);
        for (size_t k = 0; k < call->positions.size(); ++k) {
          row_of[repeats.distinct_of[call->positions[k]]] =
              call->rows.data() + k * width;
        }
      }
      for (size_t i = 0; i < repeats.distinct_of.size(); ++i) {
        const uint32_t d = repeats.distinct_of[i];
        float* row = row_of[d];
        const float* grad = grads.data() + i * width;
        if (repeats.first[d] == i) {
          std::copy_n(grad, width, row);
        } else {
          for (int64_t k = 0; k < width; ++k) row[k] += grad[k];
        }
      }
    }
    for (auto& call : calls) {
      const size_t n = call->positions.size();
      absl::Span<const float> rows;
      if (repeats.any()) {
        rows = call->rows;                         // summed above
      } else if (IsContiguous(call->positions)) {  // sent from `grads` itself
        rows = grads.subspan(call->positions.front() * width, n * width);
      } else {
        call->rows.resize(n * width);
        for (size_t i = 0; i < n; ++i) {
          std::copy_n(grads.begin() + call->positions[i] * width, width,
                      call->rows.begin() + i * width);
        }
        rows = call->rows;
      }
      call->request.set_request_id(NewRequestId());
      call->wire_request = rpc::EncodeWithTensors(
          call->request, {{2,
                           ps::INT64,
                           {static_cast<int64_t>(n)},
                           BytesOf(absl::MakeConstSpan(call->ids)),
                           nullptr},
                          {3,
                           ps::FLOAT32,
                           {static_cast<int64_t>(n), width},
                           BytesOf(rows),
                           nullptr}});
    }
    return RunWire(rpc, calls, [](auto&) { return absl::OkStatus(); });
  }

  // Whether `positions` (ascending) are one run, e.g. every id on one task.
  static bool IsContiguous(const std::vector<size_t>& positions) {
    return !positions.empty() &&
           positions.back() - positions.front() + 1 == positions.size();
  }

  template <typename Request, typename Response>
  absl::StatusOr<Calls<Request, Response>> GroupVariableIds(
      const VariablePlacement& variable, absl::Span<const int64_t> ids,
      const IdRepeats& repeats) const {
    auto calls = GroupIds<Request, Response>(
        ids, repeats, MaxIdsPerRequest(RowWidth(variable.spec)),
        [&variable](int64_t id) { return PartContainingRow(variable, id); },
        [&variable](int part) { return variable.parts[part].ps_task; },
        variable.spec.name);
    if (calls.ok()) {
      for (auto& call : *calls) call->request.set_name(variable.spec.name);
    }
    return calls;
  }

  template <typename Request, typename Response>
  absl::StatusOr<Calls<Request, Response>> GroupHashIds(
      const HashEmbeddingSpec& table, absl::Span<const int64_t> ids,
      const IdRepeats& repeats) const {
    const int n = num_tasks();
    auto calls = GroupIds<Request, Response>(
        ids, repeats, MaxIdsPerRequest(table.dim),
        [n](int64_t id) { return HashShardOf(id, n); },
        [](int shard) { return shard; }, table.name);
    if (calls.ok()) {
      for (auto& call : *calls) call->request.set_name(table.name);
    }
    return calls;
  }

  Options options_;
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

  absl::Mutex placer_mu_;
  VariablePlacer placer_ ABSL_GUARDED_BY(placer_mu_);
  // What this client placed, so creating a variable again gives the same
  // placement instead of the placer's next one.
  absl::flat_hash_map<std::string, VariablePlacement> placed_
      ABSL_GUARDED_BY(placer_mu_);
};

absl::StatusOr<std::unique_ptr<PsClient>> PsClient::Create(
    const ClusterSpec& cluster, Options options) {
  const JobSpec* ps_job = cluster.FindJob(kPsJob);
  if (ps_job == nullptr || ps_job->tasks.empty()) {
    return absl::InvalidArgumentError(
        "the cluster has no \"ps\" job, so there are no parameter servers "
        "to talk to");
  }
  std::vector<std::string> addresses;
  for (const auto& [index, address] : ps_job->tasks) {
    if (index != static_cast<int>(addresses.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the \"ps\" job must have tasks 0 to ", ps_job->tasks.size() - 1,
          " (variables are placed by task index), but task ", addresses.size(),
          " is missing"));
    }
    addresses.push_back(address);
  }
  return Create(std::move(addresses), std::move(options));
}

absl::StatusOr<std::unique_ptr<PsClient>> PsClient::Create(
    std::vector<std::string> addresses, Options options) {
  ASSIGN_OR_RETURN(VariablePlacer placer,
                   VariablePlacer::Create(addresses.size(), options.placement));
  if (options.max_request_bytes < 1) {
    return absl::InvalidArgumentError("max_request_bytes must be positive");
  }
  if (options.max_requests_in_flight < 1) {
    return absl::InvalidArgumentError(
        "max_requests_in_flight must be positive");
  }
  if (options.connections_per_task < 1) {
    return absl::InvalidArgumentError("connections_per_task must be positive");
  }
  if (options.batch_below_bytes < 0) {
    return absl::InvalidArgumentError("batch_below_bytes must not be negative");
  }
  if (options.ps_failure_timeout <= absl::ZeroDuration() ||
      options.rpc_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "rpc_timeout and ps_failure_timeout must be positive");
  }
  if (options.initial_retry_backoff <= absl::ZeroDuration() ||
      options.max_retry_backoff < options.initial_retry_backoff) {
    return absl::InvalidArgumentError(
        "initial_retry_backoff must be positive and at most "
        "max_retry_backoff");
  }
  return std::unique_ptr<PsClient>(new PsClient(std::make_unique<Impl>(
      std::move(options), std::move(addresses), std::move(placer))));
}

PsClient::PsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PsClient::~PsClient() = default;

int PsClient::num_ps_tasks() const { return impl_->num_tasks(); }

const std::string& PsClient::address(int ps_task) const {
  return impl_->address(ps_task);
}

absl::Status PsClient::WaitForServers(absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  const absl::Time start = absl::Now();
  std::vector<int> waiting = AllTasks(impl_->num_tasks());
  while (true) {
    auto calls =
        CallTasks<ps::GetStatusResponse>(waiting, ps::GetStatusRequest());
    for (auto& call : calls) call->wait_for_ready = true;
    const absl::Duration round =
        std::max(absl::Milliseconds(1),
                 std::min(absl::Seconds(5), give_up - absl::Now()));
    (void)impl_->RunAll(
        "GetStatus", calls, round,
        [](auto* async, auto... args) { async->GetStatus(args...); },
        /*retry=*/false);
    waiting.clear();
    for (const auto& call : calls) {
      if (!call->status.ok()) waiting.push_back(call->ps_task);
    }
    if (waiting.empty()) return absl::OkStatus();
    std::vector<std::string> names;
    for (int t : waiting) names.push_back(impl_->TaskName(t));
    const std::string list = absl::StrJoin(names, ", ");
    if (absl::Now() >= give_up) {
      return absl::UnavailableError(absl::StrCat(
          "no answer from ", list, " within ", absl::FormatDuration(timeout)));
    }
    impl_->options_.log(absl::StrCat(
        "waiting for ", list, " (",
        absl::FormatDuration(
            absl::Trunc(absl::Now() - start, absl::Seconds(1))),
        " so far, giving up after ", absl::FormatDuration(timeout), ")"));
  }
}

absl::StatusOr<VariablePlacement> PsClient::CreateVariable(
    const VariableSpec& spec, const PartitionPolicy& partition) {
  RETURN_IF_ERROR(ValidateVariableSpec(spec));
  VariablePlacement placement;
  {
    absl::MutexLock lock(&impl_->placer_mu_);
    if (auto it = impl_->placed_.find(spec.name); it != impl_->placed_.end()) {
      placement = it->second;
      placement.spec = spec;  // the servers compare specs
    } else {
      ASSIGN_OR_RETURN(VariablePlacement placed,
                       impl_->placer_.Place(spec, partition));
      placement = placed;
      impl_->placed_[spec.name] = placement;
    }
  }
  return CreatePlaced(std::move(placement));
}

absl::StatusOr<VariablePlacement> PsClient::CreateVariableColocated(
    const VariableSpec& spec, absl::string_view colocate_with) {
  RETURN_IF_ERROR(ValidateVariableSpec(spec));
  ASSIGN_OR_RETURN(VariablePlacement other, LookupVariable(colocate_with));
  VariablePlacement placement;
  placement.spec = spec;
  placement.parts.push_back({other.parts[0].ps_task, {0, NumRows(spec)}});
  {
    absl::MutexLock lock(&impl_->placer_mu_);
    impl_->placed_[spec.name] = placement;
  }
  return CreatePlaced(std::move(placement));
}

absl::StatusOr<VariablePlacement> PsClient::CreatePlaced(
    VariablePlacement placement) {
  const VariableSpec& spec = placement.spec;
  // Another client may have created it already; where it is must agree, or
  // the variable would exist twice.
  absl::StatusOr<VariablePlacement> existing = LookupVariable(spec.name);
  if (existing.ok()) {
    std::string diff = DescribeSpecDifference(existing->spec, spec);
    if (!diff.empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("variable \"", spec.name,
                       "\" already exists with a different spec: ", diff));
    }
    bool same_parts = existing->parts.size() == placement.parts.size();
    for (size_t i = 0; same_parts && i < placement.parts.size(); ++i) {
      same_parts = existing->parts[i].ps_task == placement.parts[i].ps_task &&
                   existing->parts[i].rows == placement.parts[i].rows;
    }
    if (!same_parts) {
      return absl::FailedPreconditionError(absl::StrCat(
          "variable \"", spec.name,
          "\" already exists, placed differently "
          "from where this client would place it; every worker must create "
          "the same variables in the same order with the same partitioning "
          "and placement strategy"));
    }
    return *existing;
  }
  if (existing.status().code() != absl::StatusCode::kNotFound) {
    return existing.status();
  }
  Calls<ps::CreateVariableRequest, ps::VariableInfo> calls;
  for (const VariablePart& part : placement.parts) {
    auto call =
        std::make_unique<Call<ps::CreateVariableRequest, ps::VariableInfo>>(
            part.ps_task);
    VariableSpecToProto(spec, call->request.mutable_spec());
    *call->request.mutable_rows() = RowRangeToProto(part.rows);
    calls.push_back(std::move(call));
  }
  RETURN_IF_ERROR(impl_->RunAll(
      "CreateVariable", calls, impl_->AttemptTimeout(),
      [](auto* async, auto... args) { async->CreateVariable(args...); }));
  return placement;
}

absl::StatusOr<VariablePlacement> PsClient::LookupVariable(
    absl::string_view name) {
  ps::LookupVariableRequest request;
  request.set_name(std::string(name));
  auto calls =
      CallTasks<ps::VariableInfo>(AllTasks(impl_->num_tasks()), request);
  (void)impl_->RunAll(
      "LookupVariable", calls, impl_->AttemptTimeout(),
      [](auto* async, auto... args) { async->LookupVariable(args...); });
  RETURN_IF_ERROR(impl_->FirstError("LookupVariable", calls,
                                    /*ignore_not_found=*/true));
  VariablePlacement placement;
  bool found = false;
  for (const auto& call : calls) {
    if (!call->status.ok()) continue;
    ASSIGN_OR_RETURN(VariableInfo info, VariableInfoFromProto(call->response));
    if (!found) {
      placement.spec = info.spec;
      found = true;
    } else if (std::string diff =
                   DescribeSpecDifference(placement.spec, info.spec);
               !diff.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("variable \"", name,
                       "\" has different specs on "
                       "different ps tasks: ",
                       diff));
    }
    placement.parts.push_back({call->ps_task, info.rows_held});
  }
  if (!found) {
    return absl::NotFoundError(absl::StrCat("variable \"", name,
                                            "\" is on none of the ",
                                            impl_->num_tasks(), " ps tasks"));
  }
  std::sort(placement.parts.begin(), placement.parts.end(),
            [](const VariablePart& a, const VariablePart& b) {
              return a.rows.begin < b.rows.begin;
            });
  RETURN_IF_ERROR(ValidatePlacement(placement));
  return placement;
}

absl::Status PsClient::List(
    std::vector<DistributedVariableInfo>* variables,
    std::vector<DistributedHashTableInfo>* hash_tables) {
  auto calls = CallTasks<ps::ListVariablesResponse>(
      AllTasks(impl_->num_tasks()), ps::ListVariablesRequest());
  RETURN_IF_ERROR(impl_->RunAll(
      "ListVariables", calls, impl_->AttemptTimeout(),
      [](auto* async, auto... args) { async->ListVariables(args...); }));
  // Each variable's parts with the task holding them, in row order.
  std::map<std::string, std::multimap<int64_t, std::pair<int, VariableInfo>>>
      parts_by_name;
  std::map<std::string, DistributedHashTableInfo> tables;
  const int n = impl_->num_tasks();
  for (const auto& call : calls) {
    for (const ps::VariableInfo& proto : call->response.variables()) {
      ASSIGN_OR_RETURN(VariableInfo info, VariableInfoFromProto(proto));
      parts_by_name[info.spec.name].emplace(info.rows_held.begin,
                                            std::pair(call->ps_task, info));
    }
    for (const ps::HashTableInfo& proto : call->response.hash_tables()) {
      ASSIGN_OR_RETURN(HashEmbeddingSpec spec, HashSpecFromProto(proto.spec()));
      DistributedHashTableInfo& t = tables[spec.name];
      t.spec = spec;
      t.rows_per_task.resize(n);
      t.bytes_per_task.resize(n);
      t.rows_per_task[call->ps_task] = proto.num_rows();
      t.bytes_per_task[call->ps_task] = proto.bytes();
    }
  }
  if (variables != nullptr) {
    variables->clear();
    for (const auto& [name, parts] : parts_by_name) {
      DistributedVariableInfo& v = variables->emplace_back();
      for (const auto& [begin, task_and_info] : parts) {
        const auto& [task, info] = task_and_info;
        v.placement.spec = info.spec;
        v.placement.parts.push_back({task, info.rows_held});
        v.part_bytes.push_back(info.bytes);
        v.part_steps.push_back(info.step);
      }
    }
  }
  if (hash_tables != nullptr) {
    hash_tables->clear();
    for (auto& [name, t] : tables) hash_tables->push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::Status PsClient::Pull(const VariablePlacement& variable,
                            absl::Span<float> out) {
  return impl_->PullDense<float>(variable, {0, NumRows(variable.spec)}, out);
}

absl::Status PsClient::PullRows(const VariablePlacement& variable,
                                RowRange rows, absl::Span<float> out) {
  return impl_->PullDense<float>(variable, rows, out);
}

absl::Status PsClient::Push(const VariablePlacement& variable,
                            absl::Span<const float> grad) {
  return impl_->PushDense<float>(variable, {0, NumRows(variable.spec)}, grad);
}

absl::Status PsClient::PushRows(const VariablePlacement& variable,
                                RowRange rows, absl::Span<const float> grad) {
  return impl_->PushDense<float>(variable, rows, grad);
}

absl::Status PsClient::PullMany(absl::Span<const DenseVariablePull> pulls) {
  return impl_->PullMany(pulls);
}

absl::Status PsClient::PushMany(absl::Span<const DenseVariablePush> pushes) {
  return impl_->PushMany(pushes);
}

namespace {

// INVALID_ARGUMENT naming the variable unless it has `dtype`, before
// anything is sent (the ps would refuse it too, after a round trip).
absl::Status CheckDType(const VariablePlacement& variable, DType dtype,
                        absl::string_view operation) {
  if (variable.spec.dtype == dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("variable \"", variable.spec.name, "\" is ",
                   DTypeName(variable.spec.dtype), "; ", operation, " takes ",
                   DTypeName(dtype), " values"));
}

}  // namespace

absl::Status PsClient::Assign(const VariablePlacement& variable,
                              absl::Span<const float> values) {
  RETURN_IF_ERROR(CheckDType(variable, DType::kFloat32, "Assign"));
  return impl_->PushDense<float>(variable, {0, NumRows(variable.spec)}, values,
                                 ps::ASSIGN);
}

absl::Status PsClient::Add(const VariablePlacement& variable,
                           absl::Span<const float> delta) {
  RETURN_IF_ERROR(CheckDType(variable, DType::kFloat32, "Add"));
  return impl_->PushDense<float>(variable, {0, NumRows(variable.spec)}, delta,
                                 ps::ADD);
}

absl::Status PsClient::AssignInt64(const VariablePlacement& variable,
                                   absl::Span<const int64_t> values) {
  RETURN_IF_ERROR(CheckDType(variable, DType::kInt64, "AssignInt64"));
  return impl_->PushDense<int64_t>(variable, {0, NumRows(variable.spec)},
                                   values, ps::ASSIGN);
}

absl::Status PsClient::PullInt64(const VariablePlacement& variable,
                                 absl::Span<int64_t> out) {
  return impl_->PullDense<int64_t>(variable, {0, NumRows(variable.spec)}, out);
}

absl::Status PsClient::AddInt64(const VariablePlacement& variable,
                                absl::Span<const int64_t> delta) {
  return impl_->PushDense<int64_t>(variable, {0, NumRows(variable.spec)},
                                   delta);
}

absl::Status PsClient::PullSparse(const VariablePlacement& variable,
                                  absl::Span<const int64_t> ids,
                                  absl::Span<float> out) {
  const int64_t width = RowWidth(variable.spec);
  if (static_cast<int64_t>(out.size()) !=
      static_cast<int64_t>(ids.size()) * width) {
    return SizeMismatch(variable.spec.name, "the buffer", out.size(),
                        ids.size() * width);
  }
  const IdRepeats repeats = FindRepeats(ids);
  auto calls =
      impl_->GroupVariableIds<ps::PullSparseRequest, ps::PullSparseResponse>(
          variable, ids, repeats);
  if (!calls.ok()) return calls.status();
  return impl_->PullRowsById("PullSparse", *calls, width, variable.spec.name,
                             repeats, out);
}

absl::Status PsClient::PushSparse(const VariablePlacement& variable,
                                  absl::Span<const int64_t> ids,
                                  absl::Span<const float> grads) {
  const int64_t width = RowWidth(variable.spec);
  if (static_cast<int64_t>(grads.size()) !=
      static_cast<int64_t>(ids.size()) * width) {
    return SizeMismatch(variable.spec.name, "the gradients", grads.size(),
                        ids.size() * width);
  }
  const IdRepeats repeats = FindRepeats(ids);
  auto calls =
      impl_->GroupVariableIds<ps::PushSparseRequest, ps::PushSparseResponse>(
          variable, ids, repeats);
  if (!calls.ok()) return calls.status();
  return impl_->PushRowsById("PushSparse", *calls, width, repeats, grads);
}

absl::Status PsClient::CreateHashTable(const HashEmbeddingSpec& spec) {
  ps::CreateHashTableRequest request;
  HashSpecToProto(spec, request.mutable_spec());
  auto calls =
      CallTasks<ps::HashTableInfo>(AllTasks(impl_->num_tasks()), request);
  return impl_->RunAll(
      "CreateHashTable", calls, impl_->AttemptTimeout(),
      [](auto* async, auto... args) { async->CreateHashTable(args...); });
}

absl::Status PsClient::PullHash(const HashEmbeddingSpec& table,
                                absl::Span<const int64_t> ids,
                                absl::Span<float> out) {
  if (static_cast<int64_t>(out.size()) !=
      static_cast<int64_t>(ids.size()) * table.dim) {
    return SizeMismatch(table.name, "the buffer", out.size(),
                        ids.size() * table.dim);
  }
  const IdRepeats repeats = FindRepeats(ids);
  auto calls =
      impl_->GroupHashIds<ps::PullSparseRequest, ps::PullSparseResponse>(
          table, ids, repeats);
  if (!calls.ok()) return calls.status();
  return impl_->PullRowsById("PullHash", *calls, table.dim, table.name, repeats,
                             out);
}

absl::Status PsClient::PushHash(const HashEmbeddingSpec& table,
                                absl::Span<const int64_t> ids,
                                absl::Span<const float> grads) {
  if (static_cast<int64_t>(grads.size()) !=
      static_cast<int64_t>(ids.size()) * table.dim) {
    return SizeMismatch(table.name, "the gradients", grads.size(),
                        ids.size() * table.dim);
  }
  const IdRepeats repeats = FindRepeats(ids);
  auto calls =
      impl_->GroupHashIds<ps::PushSparseRequest, ps::PushSparseResponse>(
          table, ids, repeats);
  if (!calls.ok()) return calls.status();
  return impl_->PushRowsById("PushHash", *calls, table.dim, repeats, grads);
}

absl::StatusOr<std::vector<ps::GetStatusResponse>> PsClient::Stats() {
  auto calls = CallTasks<ps::GetStatusResponse>(AllTasks(impl_->num_tasks()),
                                                ps::GetStatusRequest());
  RETURN_IF_ERROR(impl_->RunAll(
      "GetStatus", calls, impl_->AttemptTimeout(),
      [](auto* async, auto... args) { async->GetStatus(args...); }));
  std::vector<ps::GetStatusResponse> stats;
  for (auto& call : calls) stats.push_back(std::move(call->response));
  return stats;
}

absl::StatusOr<CheckpointSaved> PsClient::Save(const std::string& directory,
                                               int64_t step, int keep_last) {
  const int n = impl_->num_tasks();
  ps::SaveRequest save;
  save.set_directory(directory);
  save.set_step(step);
  save.set_num_shards(n);
  auto saves = CallTasks<ps::SaveResponse>(AllTasks(n), save);
  RETURN_IF_ERROR(
      impl_->RunAll("Save", saves, impl_->options_.checkpoint_timeout,
                    [](auto* async, auto... args) { async->Save(args...); }));
  CheckpointSaved saved;
  for (const auto& call : saves) saved.bytes += call->response.bytes();
  ps::CommitCheckpointRequest commit_request;
  commit_request.set_directory(directory);
  commit_request.set_step(step);
  commit_request.set_num_shards(n);
  commit_request.set_keep_last(keep_last);
  auto commit = CallTasks<ps::CommitCheckpointResponse>({0}, commit_request);
  RETURN_IF_ERROR(impl_->RunAll(
      "CommitCheckpoint", commit, impl_->options_.checkpoint_timeout,
      [](auto* async, auto... args) { async->CommitCheckpoint(args...); }));
  saved.checkpoint = commit[0]->response.checkpoint();
  saved.deleted.assign(commit[0]->response.deleted().begin(),
                       commit[0]->response.deleted().end());
  return saved;
}

absl::StatusOr<CheckpointRestored> PsClient::Restore(
    const std::string& directory) {
  const int n = impl_->num_tasks();
  CheckpointRestored restored;
  for (bool verify_only : {true, false}) {
    ps::RestoreRequest request;
    request.set_directory(directory);
    request.set_num_shards(n);
    request.set_verify_only(verify_only);
    auto calls = CallTasks<ps::RestoreResponse>(AllTasks(n), request);
    RETURN_IF_ERROR(impl_->RunAll(
        "Restore", calls, impl_->options_.checkpoint_timeout,
        [](auto* async, auto... args) { async->Restore(args...); }));
    restored = CheckpointRestored{calls[0]->response.checkpoint(),
                                  calls[0]->response.step(), 0, 0};
    for (const auto& call : calls) {
      restored.variables_restored += call->response.variables_restored();
      restored.hash_table_rows_restored +=
          call->response.hash_table_rows_restored();
    }
  }
  return restored;
}

absl::Status PsClient::Shutdown(const std::string& reason) {
  ps::ShutdownRequest request;
  request.set_reason(reason);
  auto calls =
      CallTasks<ps::ShutdownResponse>(AllTasks(impl_->num_tasks()), request);
  return impl_->RunAll(
      "Shutdown", calls, impl_->AttemptTimeout(),
      [](auto* async, auto... args) { async->Shutdown(args...); });
}

}  // namespace distrt
