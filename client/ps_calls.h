#ifndef DISTRT_CLIENT_PS_CALLS_H_
#define DISTRT_CLIENT_PS_CALLS_H_

// The requests PsClient sends, as records (internal to client/): one call
// to one ps task with its gRPC context, status and message bytes, and the
// small helpers that encode them. PsTransport sends them; PsRequestPlanner
// decides which to send.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/id_repeats.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/wire_message.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/util/default_init_allocator.h"

namespace distrt::ps_client_internal {

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
  // The last failure of an earlier attempt that said more than that time
  // ran out: when a retry only times out (inside the channel's reconnect
  // backoff, say), errors quote it, so that a refusal ("Socket closed" by
  // a TLS server) is not reported as a mere deadline.
  grpc::Status earlier_failure;
  // The RPC, when the calls sent together are of several (PullMany, and
  // every call of RunWireCalls' PullStep / PushStep rounds); empty when it
  // is the one RunWire is given.
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
  // The bytes the response will carry, where a pull knows them (0 for the
  // short answers of pushes): with the request's, they decide whether the
  // call is small enough to go in a Bundle.
  int64_t response_bytes = 0;

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
  // or the gradients pushed (written whole after each resize, so not
  // zeroed first).
  std::vector<int64_t> ids;
  UninitializedVector<float> rows;
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
inline std::string RowsOf(absl::string_view name, RowRange rows) {
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
inline std::vector<int> AllTasks(int n) {
  std::vector<int> tasks(n);
  for (int t = 0; t < n; ++t) tasks[t] = t;
  return tasks;
}

inline absl::Status SizeMismatch(absl::string_view variable,
                                 absl::string_view what, size_t given,
                                 int64_t expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("variable \"", variable, "\": ", what, " has ", given,
                   " elements, expected ", expected));
}

// Appends to `calls` the calls of one shard, to `task`: its `positions`
// (moved from) cut into calls of at most `max_ids` ids, and their ids.
template <typename Request, typename Response>
void AppendShardCalls(const int64_t* ids, std::vector<size_t>& positions,
                      int64_t max_ids, int task,
                      Calls<Request, Response>& calls) {
  const size_t n = positions.size();
  for (size_t begin = 0; begin < n; begin += max_ids) {
    const size_t end = std::min<size_t>(n, begin + max_ids);
    auto call = std::make_unique<Call<Request, Response>>(task);
    if (begin == 0 && end == n) {
      call->positions = std::move(positions);  // the whole shard: no copy
    } else {
      call->positions.assign(positions.begin() + begin,
                             positions.begin() + end);
    }
    call->ids.resize(call->positions.size());
    int64_t* call_ids = call->ids.data();
    const size_t* call_positions = call->positions.data();
    for (size_t k = 0; k < call->positions.size(); ++k) {
      call_ids[k] = ids[call_positions[k]];
    }
    calls.push_back(std::move(call));
  }
}

// Distinct ids grouped by the ps task (and part) that holds them, in
// requests of at most `max_ids` ids; each call's positions are those of its
// ids' first occurrences in `ids`, ascending. `shard_of(id)` is the part
// index in [0, num_shards), or -1 for an id that is not a row.
//
// This runs for every id a worker pulls and pushes, so: raw pointers in
// locals (the compiler keeps them in registers across the loops' stores,
// and Debian's hardened Abseil bound-checks every Span::operator[]), and
// positions reserved per shard up front.
template <typename Request, typename Response, typename ShardOf,
          typename TaskOfShard>
absl::StatusOr<Calls<Request, Response>> GroupIds(
    absl::Span<const int64_t> ids, const IdRepeats& repeats, int64_t max_ids,
    int num_shards, ShardOf shard_of, TaskOfShard task_of_shard,
    absl::string_view name) {
  const int64_t* id = ids.data();
  const bool any_repeats = repeats.any();
  const size_t* first = repeats.first.data();
  const size_t num_distinct = any_repeats ? repeats.first.size() : ids.size();
  Calls<Request, Response> calls;
  if (num_shards == 1) {
    // Every id to the one shard (a variable in one part, or one ps task's
    // hash shard): checked without a branch per id, then gathered. An id
    // not held is named by the loop below.
    bool all_held = true;
    for (size_t d = 0; d < num_distinct; ++d) {
      all_held &= shard_of(id[any_repeats ? first[d] : d]) == 0;
    }
    if (all_held) {
      std::vector<size_t> positions(num_distinct);
      for (size_t d = 0; d < num_distinct; ++d) {
        positions[d] = any_repeats ? first[d] : d;
      }
      AppendShardCalls(id, positions, max_ids, task_of_shard(0), calls);
      return calls;
    }
  }
  // Indexed by shard (a part's index or a task's: small numbers), which
  // spares a map lookup per id; each reserved for an even share and a
  // margin, so that a step's ids grow no vector more than once or twice.
  std::vector<std::vector<size_t>> positions_by_shard(std::max(num_shards, 1));
  const size_t share = num_distinct / positions_by_shard.size();
  for (std::vector<size_t>& positions : positions_by_shard) {
    positions.reserve(std::min(num_distinct, share + share / 8 + 16));
  }
  for (size_t d = 0; d < num_distinct; ++d) {
    const size_t i = any_repeats ? first[d] : d;
    const int shard = shard_of(id[i]);
    if (shard < 0 || shard >= num_shards) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable \"", name, "\": id ", id[i], " is not one of its rows"));
    }
    positions_by_shard[shard].push_back(i);
  }
  for (int shard = 0; shard < num_shards; ++shard) {
    AppendShardCalls(id, positions_by_shard[shard], max_ids,
                     task_of_shard(shard), calls);
  }
  return calls;
}

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_CALLS_H_
