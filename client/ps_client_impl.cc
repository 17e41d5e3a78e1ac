#include "client/ps_client_impl.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using ps_client_internal::CallBase;
using ps_client_internal::DensePiece;
using ps_client_internal::ManyCall;
using ps_client_internal::PsChannels;
using ps_client_internal::PsRequestPlanner;
using ps_client_internal::PsTransport;
using ps_client_internal::RowsOf;
using ps_client_internal::SetRows;

PsClient::Options WithLog(PsClient::Options options) {
  if (!options.log) {
    options.log = [](absl::string_view message) {
      std::fprintf(stderr, "%s\n", std::string(message).c_str());
    };
  }
  return options;
}

PsChannels::Options ChannelOptions(const PsClient::Options& options) {
  PsChannels::Options channels;
  channels.rpc_timeout = options.rpc_timeout;
  channels.ps_failure_timeout = options.ps_failure_timeout;
  channels.deadline = options.deadline;
  channels.timeout_flag = options.timeout_flag;
  channels.initial_retry_backoff = options.initial_retry_backoff;
  channels.max_retry_backoff = options.max_retry_backoff;
  channels.connections_per_task = options.connections_per_task;
  channels.log = options.log;
  channels.security = options.security;
  return channels;
}

PsRequestPlanner::Options PlannerOptions(const PsClient::Options& options,
                                         int num_tasks) {
  PsRequestPlanner::Options planner;
  planner.num_tasks = num_tasks;
  planner.max_request_bytes = options.max_request_bytes;
  planner.batch_below_bytes = options.batch_below_bytes;
  planner.bundle_below_bytes = options.bundle_below_bytes;
  return planner;
}

PsTransport::Options TransportOptions(
    const PsClient::Options& options,
    std::shared_ptr<const rpc::DataPlaneTls> data_plane_tls) {
  PsTransport::Options transport;
  transport.data_plane = options.data_plane;
  transport.max_requests_in_flight = options.max_requests_in_flight;
  transport.max_requests_in_flight_per_task =
      options.max_requests_in_flight_per_task;
  transport.data_plane_tls = std::move(data_plane_tls);
  return transport;
}

}  // namespace

PsClient::Impl::Impl(Options options, std::vector<std::string> addresses,
                     VariablePlacer placer,
                     std::shared_ptr<const rpc::DataPlaneTls> data_plane_tls)
    : placer_(std::move(placer)),
      options_(WithLog(std::move(options))),
      channels_(ChannelOptions(options_), std::move(addresses)),
      planner_(PlannerOptions(options_, channels_.num_tasks())),
      transport_(TransportOptions(options_, std::move(data_plane_tls)),
                 &channels_, &planner_) {}

template <typename T>
absl::Status PsClient::Impl::PullDense(const VariablePlacement& variable,
                                       RowRange rows, absl::Span<T> out) {
  RETURN_IF_ERROR(planner_.CheckRows(variable, rows, out.size(), "the buffer"));
  auto calls =
      planner_.SplitRowsIntoCalls<ps::PullDenseRequest, ps::PullDenseResponse>(
          variable, rows);
  const int64_t width = RowWidth(variable.spec);
  for (auto& call : calls) {
    call->wire_request = ps_client_internal::EncodeFields(call->request);
  }
  return transport_.RunWire(rpc::kPullDense, calls, [&](auto& call) {
    const RowRange piece = RowRangeFromProto(call.request.rows());
    return ps_client_internal::DecodeDensePull(
        &call.wire_response, channels_.TaskName(call.ps_task),
        RowsOf(variable.spec.name, piece), out.data() + call.offset,
        piece.size() * width);
  });
}

template absl::Status PsClient::Impl::PullDense<float>(const VariablePlacement&,
                                                       RowRange,
                                                       absl::Span<float>);
template absl::Status PsClient::Impl::PullDense<int64_t>(
    const VariablePlacement&, RowRange, absl::Span<int64_t>);

template <typename T>
absl::Status PsClient::Impl::PushDense(const VariablePlacement& variable,
                                       RowRange rows,
                                       absl::Span<const T> values,
                                       ps::DenseWrite write,
                                       absl::Span<int64_t> after) {
  ASSIGN_OR_RETURN(auto calls,
                   PlanDensePush(variable, rows, values, write, after));
  ValuesAfter values_after{&variable, rows, after};
  RETURN_IF_ERROR(
      transport_.RunWire(rpc::kPushDense, calls, [&](DensePushCall& call) {
        return DecodeValuesAfter(call, values_after);
      }));
  return ReadValuesAfterIfMissing(values_after);
}

template absl::Status PsClient::Impl::PushDense<float>(const VariablePlacement&,
                                                       RowRange,
                                                       absl::Span<const float>,
                                                       ps::DenseWrite,
                                                       absl::Span<int64_t>);
template absl::Status PsClient::Impl::PushDense<int64_t>(
    const VariablePlacement&, RowRange, absl::Span<const int64_t>,
    ps::DenseWrite, absl::Span<int64_t>);

template <typename T>
absl::StatusOr<std::vector<std::unique_ptr<PsClient::Impl::DensePushCall>>>
PsClient::Impl::PlanDensePush(const VariablePlacement& variable, RowRange rows,
                              absl::Span<const T> values, ps::DenseWrite write,
                              absl::Span<int64_t> after) {
  RETURN_IF_ERROR(
      planner_.CheckRows(variable, rows, values.size(), "the pushed tensor"));
  if (!after.empty()) {
    RETURN_IF_ERROR(
        planner_.CheckRows(variable, rows, after.size(),
                           "the buffer for the values after the add"));
  }
  auto calls =
      planner_.SplitRowsIntoCalls<ps::PushDenseRequest, ps::PushDenseResponse>(
          variable, rows);
  const int64_t width = RowWidth(variable.spec);
  for (auto& call : calls) {
    const RowRange piece = RowRangeFromProto(call->request.rows());
    call->request.set_request_id(channels_.NewRequestId());
    call->request.set_write(write);
    call->request.set_return_values(!after.empty());
    call->wire_request = ps_client_internal::EncodeDensePush(
        call->request, values.subspan(call->offset, piece.size() * width));
  }
  return calls;
}

absl::Status PsClient::Impl::DecodeValuesAfter(DensePushCall& call,
                                               ValuesAfter& values) {
  if (values.after.empty()) return absl::OkStatus();
  const RowRange piece = RowRangeFromProto(call.request.rows());
  const int64_t elements = piece.size() * RowWidth(values.variable->spec);
  ASSIGN_OR_RETURN(const bool carried,
                   ps_client_internal::DecodeValuesAfter(
                       &call.wire_response, channels_.TaskName(call.ps_task),
                       RowsOf(values.variable->spec.name, piece),
                       values.after.subspan(call.offset, elements)));
  if (!carried) values.missing = true;
  return absl::OkStatus();
}

absl::Status PsClient::Impl::ReadValuesAfterIfMissing(ValuesAfter& values) {
  if (!values.missing) return absl::OkStatus();
  return PullDense<int64_t>(*values.variable, values.rows, values.after);
}

absl::Status PsClient::Impl::Read(const ReadRequest& request) {
  if (!request.sparse.empty()) {
    RETURN_IF_ERROR(PushPullStep({}, {}, {}, request.dense, request.sparse));
  } else if (request.dense.size() == 1) {
    const DenseVariablePull& pull = request.dense[0];
    RETURN_IF_ERROR(PullDense<float>(
        *pull.variable, {0, NumRows(pull.variable->spec)}, pull.out));
  } else if (!request.dense.empty()) {
    RETURN_IF_ERROR(PullMany(request.dense));
  }
  for (const Int64VariablePull& pull : request.int64) {
    RETURN_IF_ERROR(PullDense<int64_t>(
        *pull.variable, {0, NumRows(pull.variable->spec)}, pull.out));
  }
  for (const HashTablePull& pull : request.hash) {
    RETURN_IF_ERROR(PullHash(*pull.table, pull.ids, pull.out));
  }
  return absl::OkStatus();
}

absl::Status PsClient::Impl::Update(const UpdateRequest& request) {
  for (const DenseVariableWrite& write : request.writes) {
    RETURN_IF_ERROR(PushDense<float>(
        *write.variable, {0, NumRows(write.variable->spec)}, write.values,
        write.write == VariableWrite::kAssign ? ps::ASSIGN : ps::ADD));
  }
  for (const Int64VariableAssign& assign : request.int64_assigns) {
    RETURN_IF_ERROR(PushDense<int64_t>(*assign.variable,
                                       {0, NumRows(assign.variable->spec)},
                                       assign.values, ps::ASSIGN));
  }
  for (const HashTablePush& push : request.hash) {
    RETURN_IF_ERROR(
        PushHash(*push.table, push.ids, push.grads, request.global_step));
  }
  if (request.then_read != nullptr) {
    const ReadRequest& read = *request.then_read;
    RETURN_IF_ERROR(PushPullStep(request.dense, request.sparse,
                                 request.int64_adds, read.dense, read.sparse));
    ReadRequest rest;
    rest.int64 = read.int64;
    rest.hash = read.hash;
    return Read(rest);
  }
  if (!request.sparse.empty() || !request.int64_adds.empty()) {
    return PushPullStep(request.dense, request.sparse, request.int64_adds, {},
                        {});
  }
  if (request.dense.size() == 1) {
    const DenseVariablePush& push = request.dense[0];
    return PushDense<float>(*push.variable, {0, NumRows(push.variable->spec)},
                            push.grad);
  }
  if (!request.dense.empty()) return PushMany(request.dense);
  return absl::OkStatus();
}

absl::Status PsClient::Impl::PullMany(
    absl::Span<const DenseVariablePull> pulls) {
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ManyCall>> calls,
                   PlanPullMany(pulls));
  return transport_.RunWire(rpc::kPullDense, calls, [&](ManyCall& call) {
    return DecodeManyPulled(call, pulls);
  });
}

absl::StatusOr<std::vector<std::unique_ptr<ManyCall>>>
PsClient::Impl::PlanPullMany(absl::Span<const DenseVariablePull> pulls) {
  std::vector<const VariablePlacement*> variables;
  for (size_t i = 0; i < pulls.size(); ++i) {
    variables.push_back(pulls[i].variable);
  }
  std::vector<std::unique_ptr<ManyCall>> calls =
      planner_.PlanMany(variables, rpc::kPullDense, rpc::kPullDenseBatch);
  for (auto& call : calls) {
    for (const DensePiece& piece : call->pieces) {
      call->response_bytes += piece.rows.size() *
                              RowWidth(variables[piece.variable]->spec) *
                              int64_t{sizeof(float)};
    }
    if (call->batch) {
      ps::PullDenseBatchRequest request;
      for (const DensePiece& piece : call->pieces) {
        SetRows(variables[piece.variable]->spec.name, piece.rows,
                request.add_pulls());
      }
      call->wire_request = ps_client_internal::EncodeFields(request);
    } else {
      ps::PullDenseRequest request;
      const DensePiece& piece = call->pieces[0];
      SetRows(variables[piece.variable]->spec.name, piece.rows, &request);
      call->wire_request = ps_client_internal::EncodeFields(request);
    }
  }
  return calls;
}

absl::Status PsClient::Impl::DecodeManyPulled(
    ManyCall& call, absl::Span<const DenseVariablePull> pulls) {
  const std::string sender = channels_.TaskName(call.ps_task);
  if (call.batch) {
    return ps_client_internal::DecodeBatchPull(call, sender, pulls);
  }
  const DensePiece& piece = call.pieces[0];
  const VariableSpec& spec = pulls[piece.variable].variable->spec;
  const int64_t width = RowWidth(spec);
  return ps_client_internal::DecodeDensePull(
      &call.wire_response, sender, RowsOf(spec.name, piece.rows),
      pulls[piece.variable].out.data() + piece.rows.begin * width,
      piece.rows.size() * width);
}

absl::Status PsClient::Impl::PlanPullStep(
    absl::Span<const DenseVariablePull> dense,
    absl::Span<const SparseVariablePull> sparse, PullPlan& plan,
    std::vector<CallBase*>& all, Decoders& decoders) {
  if (!dense.empty()) {
    ASSIGN_OR_RETURN(plan.dense_calls, PlanPullMany(dense));
  }
  plan.repeats.resize(sparse.size());
  plan.sparse_calls.resize(sparse.size());
  for (size_t v = 0; v < sparse.size(); ++v) {
    const SparseVariablePull& pull = sparse[v];
    plan.repeats[v] = FindRepeats(pull.ids);
    ASSIGN_OR_RETURN(
        plan.sparse_calls[v],
        (planner_
             .GroupVariableIds<ps::PullSparseRequest, ps::PullSparseResponse>(
                 *pull.variable, pull.ids, plan.repeats[v])));
    ps_client_internal::EncodeIdRequests(plan.sparse_calls[v]);
  }
  for (auto& call : plan.dense_calls) {
    ManyCall* c = call.get();
    all.push_back(c);
    decoders[c] = [this, c, dense] { return DecodeManyPulled(*c, dense); };
  }
  for (size_t v = 0; v < sparse.size(); ++v) {
    const SparseVariablePull& pull = sparse[v];
    for (auto& call : plan.sparse_calls[v]) {
      SparsePullCall* c = call.get();
      c->method = rpc::kPullSparse;
      c->response_bytes = static_cast<int64_t>(c->ids.size()) *
                          RowWidth(pull.variable->spec) *
                          int64_t{sizeof(float)};
      all.push_back(c);
      decoders[c] = [this, c, &pull] {
        return ps_client_internal::DecodeRowsById(
            *c, channels_.TaskName(c->ps_task), RowWidth(pull.variable->spec),
            pull.variable->spec.name, pull.out);
      };
    }
  }
  return absl::OkStatus();
}

void PsClient::Impl::FinishPullStep(
    const PullPlan& plan, absl::Span<const SparseVariablePull> sparse) {
  for (size_t v = 0; v < sparse.size(); ++v) {
    ps_client_internal::CopyRepeatedRows(
        plan.repeats[v], RowWidth(sparse[v].variable->spec), sparse[v].out);
  }
}

absl::Status PsClient::Impl::RunStepRound(std::vector<CallBase*> all,
                                          const Decoders& decoders) {
  return transport_.RunWireCalls(
      std::move(all),
      [&](CallBase& c) {
        const auto decoder = decoders.find(&c);
        return decoder == decoders.end() ? absl::OkStatus() : decoder->second();
      },
      /*bundle=*/true);
}

absl::Status PsClient::Impl::PushMany(
    absl::Span<const DenseVariablePush> pushes) {
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ManyCall>> calls,
                   PlanPushMany(pushes));
  return transport_.RunWire(rpc::kPushDense, calls,
                            [](ManyCall&) { return absl::OkStatus(); });
}

absl::StatusOr<std::vector<std::unique_ptr<ManyCall>>>
PsClient::Impl::PlanPushMany(absl::Span<const DenseVariablePush> pushes) {
  std::vector<const VariablePlacement*> variables;
  for (size_t i = 0; i < pushes.size(); ++i) {
    variables.push_back(pushes[i].variable);
  }
  std::vector<std::unique_ptr<ManyCall>> calls =
      planner_.PlanMany(variables, rpc::kPushDense, rpc::kPushDenseBatch);
  // The gradient of a piece, in the caller's buffer.
  const auto grad_of = [&](const DensePiece& piece) {
    const int64_t width = RowWidth(variables[piece.variable]->spec);
    return pushes[piece.variable].grad.subspan(piece.rows.begin * width,
                                               piece.rows.size() * width);
  };
  for (auto& call : calls) {
    if (call->batch) {  // copied into the message: the pieces are small
      ps::PushDenseBatchRequest request;
      request.set_request_id(channels_.NewRequestId());
      for (const DensePiece& piece : call->pieces) {
        ps_client_internal::AddBatchPush(variables[piece.variable]->spec.name,
                                         piece.rows, grad_of(piece), &request);
      }
      call->wire_request = ps_client_internal::EncodeFields(request);
      continue;
    }
    const DensePiece& piece = call->pieces[0];
    ps::PushDenseRequest request;
    SetRows(variables[piece.variable]->spec.name, piece.rows, &request);
    request.set_request_id(channels_.NewRequestId());
    // Sent from the caller's buffer: the call ends before this returns.
    call->wire_request =
        ps_client_internal::EncodeDensePush(request, grad_of(piece));
  }
  return calls;
}

absl::Status PsClient::Impl::PlanPushStep(
    absl::Span<const DenseVariablePush> dense,
    absl::Span<const SparseVariablePush> sparse,
    absl::Span<const Int64VariableAdd> adds, PushPlan& plan,
    std::vector<CallBase*>& all, Decoders& decoders) {
  if (!dense.empty()) {
    ASSIGN_OR_RETURN(plan.dense_calls, PlanPushMany(dense));
  }
  plan.sparse_calls.resize(sparse.size());
  for (size_t v = 0; v < sparse.size(); ++v) {
    const SparseVariablePush& push = sparse[v];
    const IdRepeats repeats = FindRepeats(push.ids);
    ASSIGN_OR_RETURN(
        plan.sparse_calls[v],
        (planner_
             .GroupVariableIds<ps::PushSparseRequest, ps::PushSparseResponse>(
                 *push.variable, push.ids, repeats)));
    ps_client_internal::EncodeRowPushes(
        plan.sparse_calls[v], RowWidth(push.variable->spec), repeats,
        push.grads, [this] { return channels_.NewRequestId(); });
  }
  plan.add_calls.resize(adds.size());
  plan.values_after = std::make_unique<ValuesAfter[]>(adds.size());
  for (size_t a = 0; a < adds.size(); ++a) {
    const Int64VariableAdd& add = adds[a];
    const RowRange rows = {0, NumRows(add.variable->spec)};
    ASSIGN_OR_RETURN(
        plan.add_calls[a],
        PlanDensePush(*add.variable, rows, add.delta, ps::ADD, add.after));
    ValuesAfter& values = plan.values_after[a];
    values.variable = add.variable;
    values.rows = rows;
    values.after = add.after;
    // The values after come back as varints: at most 10 bytes each.
    if (!add.after.empty()) {
      for (auto& call : plan.add_calls[a]) {
        call->response_bytes = RowRangeFromProto(call->request.rows()).size() *
                               RowWidth(add.variable->spec) * 10;
      }
    }
  }
  for (auto& call : plan.dense_calls) all.push_back(call.get());
  for (auto& calls : plan.sparse_calls) {
    for (auto& call : calls) {
      call->method = rpc::kPushSparse;
      all.push_back(call.get());
    }
  }
  for (size_t a = 0; a < adds.size(); ++a) {
    for (auto& call : plan.add_calls[a]) {
      DensePushCall* c = call.get();
      c->method = rpc::kPushDense;
      all.push_back(c);
      ValuesAfter* values = &plan.values_after[a];
      decoders[c] = [this, c, values] {
        return DecodeValuesAfter(*c, *values);
      };
    }
  }
  return absl::OkStatus();
}

absl::Status PsClient::Impl::FinishPushStep(PushPlan& plan) {
  for (size_t a = 0; a < plan.add_calls.size(); ++a) {
    RETURN_IF_ERROR(ReadValuesAfterIfMissing(plan.values_after[a]));
  }
  return absl::OkStatus();
}

absl::Status PsClient::Impl::PushPullStep(
    absl::Span<const DenseVariablePush> dense_pushes,
    absl::Span<const SparseVariablePush> sparse_pushes,
    absl::Span<const Int64VariableAdd> adds,
    absl::Span<const DenseVariablePull> dense_pulls,
    absl::Span<const SparseVariablePull> sparse_pulls) {
  PushPlan push;
  PullPlan pull;
  std::vector<CallBase*> all;
  Decoders decoders;
  RETURN_IF_ERROR(
      PlanPushStep(dense_pushes, sparse_pushes, adds, push, all, decoders));
  RETURN_IF_ERROR(PlanPullStep(dense_pulls, sparse_pulls, pull, all, decoders));
  RETURN_IF_ERROR(RunStepRound(std::move(all), decoders));
  RETURN_IF_ERROR(FinishPushStep(push));
  FinishPullStep(pull, sparse_pulls);
  return absl::OkStatus();
}

absl::Status PsClient::Impl::PullHash(const HashEmbeddingSpec& table,
                                      absl::Span<const int64_t> ids,
                                      absl::Span<float> out) {
  const IdRepeats repeats = FindRepeats(ids);
  ASSIGN_OR_RETURN(
      auto calls,
      (planner_.GroupHashIds<ps::PullSparseRequest, ps::PullSparseResponse>(
          table, ids, repeats)));
  ps_client_internal::EncodeIdRequests(calls);
  RETURN_IF_ERROR(
      transport_.RunWire(rpc::kPullHash, calls, [&](SparsePullCall& call) {
        return ps_client_internal::DecodeRowsById(
            call, channels_.TaskName(call.ps_task), table.dim, table.name, out);
      }));
  ps_client_internal::CopyRepeatedRows(repeats, table.dim, out);
  return absl::OkStatus();
}

absl::Status PsClient::Impl::PushHash(const HashEmbeddingSpec& table,
                                      absl::Span<const int64_t> ids,
                                      absl::Span<const float> grads,
                                      int64_t global_step) {
  const IdRepeats repeats = FindRepeats(ids);
  ASSIGN_OR_RETURN(auto calls,
                   planner_.GroupHashPushIds(table, ids, repeats, global_step));
  ps_client_internal::EncodeRowPushes(calls, table.dim, repeats, grads, [this] {
    return channels_.NewRequestId();
  });
  return transport_.RunWire(rpc::kPushHash, calls,
                            [](SparsePushCall&) { return absl::OkStatus(); });
}

}  // namespace distrt
