#include "client/ps_client.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/grpc_status.h"
#include "rpc/tensor_codec.h"
#include "rpc/wire_message.h"
#include "runtime/ps/spec_proto.h"

namespace distrt {
namespace {

using Stub = ps::ParameterServer::Stub;

// One request of a batch sent in parallel.
template <typename Request, typename Response>
struct Call {
  explicit Call(int task) : ps_task(task) {}
  const int ps_task;
  Request request;
  Response response;
  grpc::ClientContext context;
  grpc::Status status;
  // Where the request's elements go in, or come from, the caller's buffer:
  // a contiguous run (dense) or one position per id (sparse).
  int64_t offset = 0;
  std::vector<size_t> positions;

  // RPCs that carry tensors go as message bytes (rpc/wire_message.h):
  // `request` holds the other fields, the tensors travel beside it.
  grpc::ByteBuffer wire_request;
  grpc::ByteBuffer wire_response;
  // Decoding the response, run as it arrives.
  absl::Status decoded;
  // Sparse requests: the ids at `positions`, and the rows pulled for them
  // or the gradients pushed.
  std::vector<int64_t> ids;
  std::vector<float> rows;
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

// Ids grouped by the ps task (and part) that holds them, in requests of at
// most `max_ids` ids. `shard_of(id)` is the part index, or -1 for an id
// that is not a row.
template <typename Request, typename Response, typename ShardOf,
          typename TaskOfShard>
absl::StatusOr<Calls<Request, Response>> GroupIds(absl::Span<const int64_t> ids,
                                                  int64_t max_ids,
                                                  ShardOf shard_of,
                                                  TaskOfShard task_of_shard,
                                                  absl::string_view name) {
  std::map<int, std::vector<size_t>> positions_by_shard;
  for (size_t i = 0; i < ids.size(); ++i) {
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
    grpc::ChannelArguments args;
    // Responses are bounded by the servers' own limit.
    args.SetMaxReceiveMessageSize(-1);
    for (const std::string& address : addresses_) {
      std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
          address, grpc::InsecureChannelCredentials(), args);
      stubs_.push_back(ps::ParameterServer::NewStub(channel));
      wire_stubs_.push_back(std::make_unique<grpc::GenericStub>(channel));
    }
  }

  int num_tasks() const { return addresses_.size(); }
  const std::string& address(int task) const { return addresses_[task]; }

  std::string TaskName(int task) const {
    return absl::StrCat("ps task ", task, " (", addresses_[task], ")");
  }

  // Sends every call at once and waits for all of them (each is bounded by
  // `timeout`). `issue(async_stub, context, request, response, done)` starts
  // one. Returns the first error, naming the RPC and the ps task.
  template <typename Request, typename Response, typename Issue>
  absl::Status RunAll(absl::string_view rpc, Calls<Request, Response>& calls,
                      absl::Duration timeout, Issue issue) {
    if (calls.empty()) return absl::OkStatus();
    absl::BlockingCounter pending(calls.size());
    const auto deadline =
        std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
    for (auto& call : calls) {
      Call<Request, Response>* c = call.get();
      c->context.set_deadline(deadline);
      issue(stubs_[c->ps_task]->async(), &c->context, &c->request, &c->response,
            [c, &pending](grpc::Status status) {
              c->status = std::move(status);
              pending.DecrementCount();
            });
    }
    pending.Wait();
    return FirstError(rpc, calls);
  }

  // Like RunAll, for RPCs whose calls carry `wire_request` and get
  // `wire_response`: `decode(call)` runs as each response arrives (on a
  // gRPC thread, so responses are decoded in parallel) and its error counts
  // as the call's.
  template <typename Request, typename Response, typename Decode>
  absl::Status RunWire(absl::string_view rpc, Calls<Request, Response>& calls,
                       Decode decode) {
    if (calls.empty()) return absl::OkStatus();
    const std::string method =
        absl::StrCat("/", ps::ParameterServer::service_full_name(), "/", rpc);
    absl::BlockingCounter pending(calls.size());
    const auto deadline = std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(options_.rpc_timeout);
    // Calls are started in order, at most max_requests_in_flight at a time:
    // each answer starts the next one not started yet.
    std::atomic<size_t> next_to_start{0};
    std::function<void()> start_next = [&] {
      const size_t index = next_to_start.fetch_add(1);
      if (index >= calls.size()) return;
      Call<Request, Response>* c = calls[index].get();
      c->context.set_deadline(deadline);
      wire_stubs_[c->ps_task]->UnaryCall(
          &c->context, method, grpc::StubOptions(), &c->wire_request,
          &c->wire_response,
          [c, &pending, &decode, &start_next](grpc::Status status) {
            c->status = std::move(status);
            if (c->status.ok()) c->decoded = decode(*c);
            start_next();
            pending.DecrementCount();
          });
    };
    const size_t window = std::min<size_t>(
        calls.size(), std::max(1, options_.max_requests_in_flight));
    for (size_t i = 0; i < window; ++i) start_next();
    pending.Wait();
    if (absl::Status s = FirstError(rpc, calls); !s.ok()) return s;
    for (const auto& call : calls) {
      if (!call->decoded.ok()) return call->decoded;
    }
    return absl::OkStatus();
  }

  // Decodes a pull's response, whose field 1 is `bytes` bytes of elements
  // of type T, into `destination`. INTERNAL naming the ps task when it sent
  // another size, type or shape.
  template <typename T, typename Request, typename Response>
  absl::Status DecodePulled(Call<Request, Response>& call,
                            absl::string_view what, T* destination,
                            int64_t elements) {
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
    Response fields;
    if (absl::Status s = rpc::DecodeWithTensors(
            &call.wire_response,
            absl::StrCat(what, " from ", TaskName(call.ps_task)), &fields,
            {&values});
        !s.ok()) {
      return s;
    }
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

  template <typename Request, typename Response>
  absl::Status FirstError(absl::string_view rpc,
                          const Calls<Request, Response>& calls,
                          bool ignore_not_found = false) const {
    for (const auto& call : calls) {
      if (call->status.ok()) continue;
      if (ignore_not_found &&
          call->status.error_code() == grpc::StatusCode::NOT_FOUND) {
        continue;
      }
      return rpc::FromGrpcStatus(
          call->status, absl::StrCat(rpc, " to ", TaskName(call->ps_task)));
    }
    return absl::OkStatus();
  }

  // Pieces of `rows` of `variable`: one per part it overlaps, each cut into
  // requests of at most max_request_bytes.
  template <typename Request, typename Response>
  Calls<Request, Response> SplitRows(const VariablePlacement& variable,
                                     RowRange rows) const {
    const int64_t width = RowWidth(variable.spec);
    const int64_t row_bytes =
        std::max<int64_t>(1, width * DTypeSize(variable.spec.dtype));
    const int64_t max_rows =
        std::max<int64_t>(1, options_.max_request_bytes / row_bytes);
    Calls<Request, Response> calls;
    for (const VariablePart& part : variable.parts) {
      const int64_t begin = std::max(rows.begin, part.rows.begin);
      const int64_t end = std::min(rows.end, part.rows.end);
      for (int64_t b = begin; b < end; b += max_rows) {
        auto call = std::make_unique<Call<Request, Response>>(part.ps_task);
        call->request.set_name(variable.spec.name);
        *call->request.mutable_rows() =
            RowRangeToProto({b, std::min(end, b + max_rows)});
        call->offset = (b - rows.begin) * width;
        calls.push_back(std::move(call));
      }
    }
    return calls;
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
    if (absl::Status s = CheckRows(variable, rows, out.size(), "the buffer");
        !s.ok()) {
      return s;
    }
    auto calls =
        SplitRows<ps::PullDenseRequest, ps::PullDenseResponse>(variable, rows);
    const int64_t width = RowWidth(variable.spec);
    for (auto& call : calls) {
      call->wire_request = rpc::EncodeWithTensors(call->request, {});
    }
    return RunWire("PullDense", calls, [&](auto& call) {
      const RowRange piece = RowRangeFromProto(call.request.rows());
      return DecodePulled(call,
                          absl::StrCat("rows ", RowRangeString(piece), " of \"",
                                       variable.spec.name, "\""),
                          out.data() + call.offset, piece.size() * width);
    });
  }

  template <typename T>
  absl::Status PushDense(const VariablePlacement& variable, RowRange rows,
                         absl::Span<const T> values) {
    if (absl::Status s =
            CheckRows(variable, rows, values.size(), "the pushed tensor");
        !s.ok()) {
      return s;
    }
    auto calls =
        SplitRows<ps::PushDenseRequest, ps::PushDenseResponse>(variable, rows);
    const int64_t width = RowWidth(variable.spec);
    for (auto& call : calls) {
      const RowRange piece = RowRangeFromProto(call->request.rows());
      auto part = values.subspan(call->offset, piece.size() * width);
      // Sent from `values` itself: the call ends before this returns.
      call->wire_request = rpc::EncodeWithTensors(
          call->request, {{3,
                           WireDType<T>(),
                           {static_cast<int64_t>(part.size())},
                           BytesOf(part),
                           nullptr}});
    }
    return RunWire("PushDense", calls, [](auto&) { return absl::OkStatus(); });
  }

  int64_t MaxIdsPerRequest(int64_t width) const {
    return std::max<int64_t>(
        1, options_.max_request_bytes /
               std::max<int64_t>(1, width * int64_t{sizeof(float)}));
  }

  // Pulls the rows of every call's ids through `rpc` and puts each where
  // its id was in the caller's list, in `out`.
  template <typename Calls>
  absl::Status PullRowsById(absl::string_view rpc, Calls& calls, int64_t width,
                            absl::string_view name, absl::Span<float> out) {
    for (auto& call : calls) {
      call->wire_request = rpc::EncodeWithTensors(
          call->request, {{2,
                           ps::INT64,
                           {static_cast<int64_t>(call->ids.size())},
                           BytesOf(absl::MakeConstSpan(call->ids)),
                           nullptr}});
    }
    return RunWire(rpc, calls, [&](auto& call) {
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
  }

  // Pushes `grads` (one row per id of the caller's list) through `rpc`,
  // each call with the rows at its positions.
  template <typename Calls>
  absl::Status PushRowsById(absl::string_view rpc, Calls& calls, int64_t width,
                            absl::Span<const float> grads) {
    for (auto& call : calls) {
      const size_t n = call->positions.size();
      absl::Span<const float> rows;
      if (IsContiguous(call->positions)) {  // sent from `grads` itself
        rows = grads.subspan(call->positions.front() * width, n * width);
      } else {
        call->rows.resize(n * width);
        for (size_t i = 0; i < n; ++i) {
          std::copy_n(grads.begin() + call->positions[i] * width, width,
                      call->rows.begin() + i * width);
        }
        rows = call->rows;
      }
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
      const VariablePlacement& variable, absl::Span<const int64_t> ids) const {
    auto calls = GroupIds<Request, Response>(
        ids, MaxIdsPerRequest(RowWidth(variable.spec)),
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
      const HashEmbeddingSpec& table, absl::Span<const int64_t> ids) const {
    const int n = num_tasks();
    auto calls = GroupIds<Request, Response>(
        ids, MaxIdsPerRequest(table.dim),
        [n](int64_t id) { return HashShardOf(id, n); },
        [](int shard) { return shard; }, table.name);
    if (calls.ok()) {
      for (auto& call : *calls) call->request.set_name(table.name);
    }
    return calls;
  }

  Options options_;
  const std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<Stub>> stubs_;
  // The same channels, for the RPCs that carry tensors as message bytes.
  std::vector<std::unique_ptr<grpc::GenericStub>> wire_stubs_;

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
  absl::StatusOr<VariablePlacer> placer =
      VariablePlacer::Create(addresses.size(), options.placement);
  if (!placer.ok()) return placer.status();
  if (options.max_request_bytes < 1) {
    return absl::InvalidArgumentError("max_request_bytes must be positive");
  }
  if (options.max_requests_in_flight < 1) {
    return absl::InvalidArgumentError(
        "max_requests_in_flight must be positive");
  }
  return std::unique_ptr<PsClient>(new PsClient(std::make_unique<Impl>(
      std::move(options), std::move(addresses), *std::move(placer))));
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
    for (auto& call : calls) call->context.set_wait_for_ready(true);
    const absl::Duration round =
        std::max(absl::Milliseconds(1),
                 std::min(absl::Seconds(5), give_up - absl::Now()));
    (void)impl_->RunAll(
        "GetStatus", calls, round,
        [](auto* async, auto... args) { async->GetStatus(args...); });
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
  if (absl::Status s = ValidateVariableSpec(spec); !s.ok()) return s;
  VariablePlacement placement;
  {
    absl::MutexLock lock(&impl_->placer_mu_);
    if (auto it = impl_->placed_.find(spec.name); it != impl_->placed_.end()) {
      placement = it->second;
      placement.spec = spec;  // the servers compare specs
    } else {
      absl::StatusOr<VariablePlacement> placed =
          impl_->placer_.Place(spec, partition);
      if (!placed.ok()) return placed.status();
      placement = *placed;
      impl_->placed_[spec.name] = placement;
    }
  }
  return CreatePlaced(std::move(placement));
}

absl::StatusOr<VariablePlacement> PsClient::CreateVariableColocated(
    const VariableSpec& spec, absl::string_view colocate_with) {
  if (absl::Status s = ValidateVariableSpec(spec); !s.ok()) return s;
  absl::StatusOr<VariablePlacement> other = LookupVariable(colocate_with);
  if (!other.ok()) return other.status();
  VariablePlacement placement;
  placement.spec = spec;
  placement.parts.push_back({other->parts[0].ps_task, {0, NumRows(spec)}});
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
  if (absl::Status s = impl_->RunAll(
          "CreateVariable", calls, impl_->options_.rpc_timeout,
          [](auto* async, auto... args) { async->CreateVariable(args...); });
      !s.ok()) {
    return s;
  }
  return placement;
}

absl::StatusOr<VariablePlacement> PsClient::LookupVariable(
    absl::string_view name) {
  ps::LookupVariableRequest request;
  request.set_name(std::string(name));
  auto calls =
      CallTasks<ps::VariableInfo>(AllTasks(impl_->num_tasks()), request);
  (void)impl_->RunAll(
      "LookupVariable", calls, impl_->options_.rpc_timeout,
      [](auto* async, auto... args) { async->LookupVariable(args...); });
  if (absl::Status s = impl_->FirstError("LookupVariable", calls,
                                         /*ignore_not_found=*/true);
      !s.ok()) {
    return s;
  }
  VariablePlacement placement;
  bool found = false;
  for (const auto& call : calls) {
    if (!call->status.ok()) continue;
    absl::StatusOr<VariableInfo> info = VariableInfoFromProto(call->response);
    if (!info.ok()) return info.status();
    if (!found) {
      placement.spec = info->spec;
      found = true;
    } else if (std::string diff =
                   DescribeSpecDifference(placement.spec, info->spec);
               !diff.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("variable \"", name,
                       "\" has different specs on "
                       "different ps tasks: ",
                       diff));
    }
    placement.parts.push_back({call->ps_task, info->rows_held});
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
  if (absl::Status s = ValidatePlacement(placement); !s.ok()) return s;
  return placement;
}

absl::Status PsClient::List(
    std::vector<DistributedVariableInfo>* variables,
    std::vector<DistributedHashTableInfo>* hash_tables) {
  auto calls = CallTasks<ps::ListVariablesResponse>(
      AllTasks(impl_->num_tasks()), ps::ListVariablesRequest());
  if (absl::Status s = impl_->RunAll(
          "ListVariables", calls, impl_->options_.rpc_timeout,
          [](auto* async, auto... args) { async->ListVariables(args...); });
      !s.ok()) {
    return s;
  }
  // Each variable's parts with the task holding them, in row order.
  std::map<std::string, std::multimap<int64_t, std::pair<int, VariableInfo>>>
      parts_by_name;
  std::map<std::string, DistributedHashTableInfo> tables;
  const int n = impl_->num_tasks();
  for (const auto& call : calls) {
    for (const ps::VariableInfo& proto : call->response.variables()) {
      absl::StatusOr<VariableInfo> info = VariableInfoFromProto(proto);
      if (!info.ok()) return info.status();
      parts_by_name[info->spec.name].emplace(info->rows_held.begin,
                                             std::pair(call->ps_task, *info));
    }
    for (const ps::HashTableInfo& proto : call->response.hash_tables()) {
      absl::StatusOr<HashEmbeddingSpec> spec = HashSpecFromProto(proto.spec());
      if (!spec.ok()) return spec.status();
      DistributedHashTableInfo& t = tables[spec->name];
      t.spec = *spec;
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
  auto calls =
      impl_->GroupVariableIds<ps::PullSparseRequest, ps::PullSparseResponse>(
          variable, ids);
  if (!calls.ok()) return calls.status();
  return impl_->PullRowsById("PullSparse", *calls, width, variable.spec.name,
                             out);
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
  auto calls =
      impl_->GroupVariableIds<ps::PushSparseRequest, ps::PushSparseResponse>(
          variable, ids);
  if (!calls.ok()) return calls.status();
  return impl_->PushRowsById("PushSparse", *calls, width, grads);
}

absl::Status PsClient::CreateHashTable(const HashEmbeddingSpec& spec) {
  ps::CreateHashTableRequest request;
  HashSpecToProto(spec, request.mutable_spec());
  auto calls =
      CallTasks<ps::HashTableInfo>(AllTasks(impl_->num_tasks()), request);
  return impl_->RunAll(
      "CreateHashTable", calls, impl_->options_.rpc_timeout,
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
  auto calls =
      impl_->GroupHashIds<ps::PullSparseRequest, ps::PullSparseResponse>(table,
                                                                         ids);
  if (!calls.ok()) return calls.status();
  return impl_->PullRowsById("PullHash", *calls, table.dim, table.name, out);
}

absl::Status PsClient::PushHash(const HashEmbeddingSpec& table,
                                absl::Span<const int64_t> ids,
                                absl::Span<const float> grads) {
  if (static_cast<int64_t>(grads.size()) !=
      static_cast<int64_t>(ids.size()) * table.dim) {
    return SizeMismatch(table.name, "the gradients", grads.size(),
                        ids.size() * table.dim);
  }
  auto calls =
      impl_->GroupHashIds<ps::PushSparseRequest, ps::PushSparseResponse>(table,
                                                                         ids);
  if (!calls.ok()) return calls.status();
  return impl_->PushRowsById("PushHash", *calls, table.dim, grads);
}

absl::StatusOr<std::vector<ps::GetStatusResponse>> PsClient::Stats() {
  auto calls = CallTasks<ps::GetStatusResponse>(AllTasks(impl_->num_tasks()),
                                                ps::GetStatusRequest());
  if (absl::Status s = impl_->RunAll(
          "GetStatus", calls, impl_->options_.rpc_timeout,
          [](auto* async, auto... args) { async->GetStatus(args...); });
      !s.ok()) {
    return s;
  }
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
  if (absl::Status s = impl_->RunAll(
          "Save", saves, impl_->options_.checkpoint_timeout,
          [](auto* async, auto... args) { async->Save(args...); });
      !s.ok()) {
    return s;
  }
  CheckpointSaved saved;
  for (const auto& call : saves) saved.bytes += call->response.bytes();
  ps::CommitCheckpointRequest commit_request;
  commit_request.set_directory(directory);
  commit_request.set_step(step);
  commit_request.set_num_shards(n);
  commit_request.set_keep_last(keep_last);
  auto commit = CallTasks<ps::CommitCheckpointResponse>({0}, commit_request);
  if (absl::Status s = impl_->RunAll(
          "CommitCheckpoint", commit, impl_->options_.checkpoint_timeout,
          [](auto* async, auto... args) { async->CommitCheckpoint(args...); });
      !s.ok()) {
    return s;
  }
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
    if (absl::Status s = impl_->RunAll(
            "Restore", calls, impl_->options_.checkpoint_timeout,
            [](auto* async, auto... args) { async->Restore(args...); });
        !s.ok()) {
      return s;
    }
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
      "Shutdown", calls, impl_->options_.rpc_timeout,
      [](auto* async, auto... args) { async->Shutdown(args...); });
}

}  // namespace distrt
