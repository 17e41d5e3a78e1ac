#ifndef DISTRT_CLIENT_PS_CLIENT_IMPL_H_
#define DISTRT_CLIENT_PS_CLIENT_IMPL_H_

// PsClient's inside, private to ps_client.cc: the client's operations as
// requests planned by PsRequestPlanner and sent by PsTransport, and the
// variables this client placed. The front class (ps_client.cc) checks its
// arguments and calls these.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "client/id_repeats.h"
#include "client/ps_calls.h"
#include "client/ps_client.h"
#include "client/ps_request_planner.h"
#include "client/ps_transport.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/tensor_codec.h"
#include "rpc/wire_message.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/status_macros.h"

namespace distrt {

// Only ps_client.cc includes this header (a private source of its target),
// so the internals' names are brought in as that file did.
using namespace ps_client_internal;  // NOLINT

class PsClient::Impl : public PsTransport, public PsRequestPlanner {
 public:
  Impl(Options options, std::vector<std::string> addresses,
       VariablePlacer placer,
       std::shared_ptr<const rpc::DataPlaneTls> data_plane_tls)
      : PsTransport(options, std::move(addresses), std::move(data_plane_tls)),
        PsRequestPlanner(num_tasks(), options.max_request_bytes,
                         options.batch_below_bytes),
        placer_(std::move(placer)) {}

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

  using DensePushCall = Call<ps::PushDenseRequest, ps::PushDenseResponse>;

  // Pushes `values` to `rows` as `write` says. `after`, for an int64 add,
  // when not empty (as many elements as `values`), receives the values the
  // add left, which the ps sends back in the same round trip.
  template <typename T>
  absl::Status PushDense(const VariablePlacement& variable, RowRange rows,
                         absl::Span<const T> values,
                         ps::DenseWrite write = ps::APPLY_GRADIENT,
                         absl::Span<int64_t> after = {}) {
    ASSIGN_OR_RETURN(auto calls,
                     PlanDensePush(variable, rows, values, write, after));
    ValuesAfter values_after{&variable, rows, after};
    RETURN_IF_ERROR(RunWire("PushDense", calls, [&](DensePushCall& call) {
      return DecodeValuesAfter(call, values_after);
    }));
    return ReadValuesAfterIfMissing(values_after);
  }

  // PushDense's requests, checked, planned and encoded (sent from `values`
  // itself: the calls must end before it goes).
  template <typename T>
  absl::StatusOr<std::vector<std::unique_ptr<DensePushCall>>> PlanDensePush(
      const VariablePlacement& variable, RowRange rows,
      absl::Span<const T> values, ps::DenseWrite write,
      absl::Span<int64_t> after) {
    RETURN_IF_ERROR(
        CheckRows(variable, rows, values.size(), "the pushed tensor"));
    if (!after.empty()) {
      RETURN_IF_ERROR(CheckRows(variable, rows, after.size(),
                                "the buffer for the values after the add"));
    }
    auto calls =
        SplitRows<ps::PushDenseRequest, ps::PushDenseResponse>(variable, rows);
    const int64_t width = RowWidth(variable.spec);
    for (auto& call : calls) {
      const RowRange piece = RowRangeFromProto(call->request.rows());
      call->request.set_request_id(NewRequestId());
      call->request.set_write(write);
      call->request.set_return_values(!after.empty());
      call->wire_request = EncodeDensePush(
          call->request, values.subspan(call->offset, piece.size() * width));
    }
    return calls;
  }

  // Where an int64 add's values after go, and whether a ps task answered
  // without them (a ps_server older than return_values): they are then
  // read after the add.
  struct ValuesAfter {
    const VariablePlacement* variable = nullptr;
    RowRange rows;
    absl::Span<int64_t> after;  // empty: not asked for
    std::atomic<bool> missing{false};
  };

  // Copies the values after the add that `call`'s response carries into
  // `values.after` (nothing when they were not asked for).
  absl::Status DecodeValuesAfter(DensePushCall& call, ValuesAfter& values) {
    if (values.after.empty()) return absl::OkStatus();
    const RowRange piece = RowRangeFromProto(call.request.rows());
    const std::string what = RowsOf(values.variable->spec.name, piece);
    ps::PushDenseResponse response;
    RETURN_IF_ERROR(
        rpc::DecodeWithTensors(&call.wire_response,
                               absl::StrCat("PushDense response for ", what,
                                            " from ", TaskName(call.ps_task)),
                               &response, {}));
    const int64_t elements = piece.size() * RowWidth(values.variable->spec);
    if (response.values_after_size() == 0 && elements > 0) {
      values.missing = true;
      return absl::OkStatus();
    }
    if (response.values_after_size() != elements) {
      return absl::InternalError(absl::StrCat(
          TaskName(call.ps_task), " sent ", response.values_after_size(),
          " values after the add to ", what, ", not ", elements));
    }
    std::copy(response.values_after().begin(), response.values_after().end(),
              values.after.begin() + call.offset);
    return absl::OkStatus();
  }

  absl::Status ReadValuesAfterIfMissing(ValuesAfter& values) {
    if (!values.missing) return absl::OkStatus();
    return PullDense<int64_t>(*values.variable, values.rows, values.after);
  }

  absl::Status PullMany(absl::Span<const DenseVariablePull> pulls) {
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ManyCall>> calls,
                     PlanPullMany(pulls));
    return RunWire("PullDense", calls, [&](ManyCall& call) {
      return DecodeManyPulled(call, pulls);
    });
  }

  // PullMany's requests for `pulls`, checked, planned and encoded.
  absl::StatusOr<std::vector<std::unique_ptr<ManyCall>>> PlanPullMany(
      absl::Span<const DenseVariablePull> pulls) {
    std::vector<const VariablePlacement*> variables;
    for (size_t i = 0; i < pulls.size(); ++i) {
      RETURN_IF_ERROR(CheckManyItem(pulls[i].variable, i, pulls[i].out.size(),
                                    "the buffer"));
      variables.push_back(pulls[i].variable);
    }
    std::vector<std::unique_ptr<ManyCall>> calls =
        PlanMany(variables, "PullDense", "PullDenseBatch");
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
        call->wire_request = rpc::EncodeWithTensors(request, {});
      } else {
        ps::PullDenseRequest request;
        const DensePiece& piece = call->pieces[0];
        SetRows(variables[piece.variable]->spec.name, piece.rows, &request);
        call->wire_request = rpc::EncodeWithTensors(request, {});
      }
    }
    return calls;
  }

  // Decodes the response of one of PlanPullMany's calls into the buffers of
  // `pulls`.
  absl::Status DecodeManyPulled(ManyCall& call,
                                absl::Span<const DenseVariablePull> pulls) {
    if (call.batch) return DecodeBatchPulled(call, pulls);
    const DensePiece& piece = call.pieces[0];
    const VariableSpec& spec = pulls[piece.variable].variable->spec;
    const int64_t width = RowWidth(spec);
    return DecodePulled(
        call, RowsOf(spec.name, piece.rows),
        pulls[piece.variable].out.data() + piece.rows.begin * width,
        piece.rows.size() * width);
  }

  // How each call of a round's response is decoded (none: nothing to
  // decode beyond the status).
  using Decoders =
      absl::flat_hash_map<const CallBase*, std::function<absl::Status()>>;

  // The calls of a PullStep, planned and encoded; they must outlive the
  // round they go in.
  struct PullPlan {
    using SparseCall = Call<ps::PullSparseRequest, ps::PullSparseResponse>;
    std::vector<std::unique_ptr<ManyCall>> dense_calls;
    std::vector<IdRepeats> repeats;
    std::vector<std::vector<std::unique_ptr<SparseCall>>> sparse_calls;
  };

  // Plans PullMany of `dense` and a PullSparse of each of `sparse` (their
  // sizes checked by the caller) into `plan`, appending the calls to `all`
  // and how to decode each response to `decoders`.
  absl::Status PlanPullStep(absl::Span<const DenseVariablePull> dense,
                            absl::Span<const SparseVariablePull> sparse,
                            PullPlan& plan, std::vector<CallBase*>& all,
                            Decoders& decoders) {
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
          (GroupVariableIds<ps::PullSparseRequest, ps::PullSparseResponse>(
              *pull.variable, pull.ids, plan.repeats[v])));
      EncodeIdRequests(plan.sparse_calls[v]);
    }
    for (auto& call : plan.dense_calls) {
      ManyCall* c = call.get();
      all.push_back(c);
      decoders[c] = [this, c, dense] { return DecodeManyPulled(*c, dense); };
    }
    for (size_t v = 0; v < sparse.size(); ++v) {
      const SparseVariablePull& pull = sparse[v];
      for (auto& call : plan.sparse_calls[v]) {
        PullPlan::SparseCall* c = call.get();
        c->rpc = "PullSparse";
        c->response_bytes = static_cast<int64_t>(c->ids.size()) *
                            RowWidth(pull.variable->spec) *
                            int64_t{sizeof(float)};
        all.push_back(c);
        decoders[c] = [this, c, &pull] {
          return DecodeRowsById(*c, RowWidth(pull.variable->spec),
                                pull.variable->spec.name, pull.out);
        };
      }
    }
    return absl::OkStatus();
  }

  // What a PullStep does once its round has answered: rows of repeated ids.
  static void FinishPullStep(const PullPlan& plan,
                             absl::Span<const SparseVariablePull> sparse) {
    for (size_t v = 0; v < sparse.size(); ++v) {
      CopyRepeatedRows(plan.repeats[v], RowWidth(sparse[v].variable->spec),
                       sparse[v].out);
    }
  }

  // Runs a round of `all`, decoding each response with `decoders`.
  absl::Status RunStepRound(absl::string_view rpc, std::vector<CallBase*> all,
                            const Decoders& decoders) {
    return RunWireCalls(
        rpc, std::move(all),
        [&](CallBase& c) {
          const auto decoder = decoders.find(&c);
          return decoder == decoders.end() ? absl::OkStatus()
                                           : decoder->second();
        },
        /*bundle=*/true);
  }

  // PullMany of `dense` and a PullSparse of each of `sparse` (their sizes
  // checked by the caller), all their requests sent in one round and each
  // response decoded as its operation decodes it.
  absl::Status PullStep(absl::Span<const DenseVariablePull> dense,
                        absl::Span<const SparseVariablePull> sparse) {
    PullPlan plan;
    std::vector<CallBase*> all;
    Decoders decoders;
    RETURN_IF_ERROR(PlanPullStep(dense, sparse, plan, all, decoders));
    RETURN_IF_ERROR(RunStepRound("PullStep", std::move(all), decoders));
    FinishPullStep(plan, sparse);
    return absl::OkStatus();
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
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ManyCall>> calls,
                     PlanPushMany(pushes));
    return RunWire("PushDense", calls, [](auto&) { return absl::OkStatus(); });
  }

  // PushMany's requests for `pushes`, checked, planned and encoded (large
  // pieces sent from the caller's buffers).
  absl::StatusOr<std::vector<std::unique_ptr<ManyCall>>> PlanPushMany(
      absl::Span<const DenseVariablePush> pushes) {
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
    return calls;
  }

  // The calls of a PushStep, planned and encoded; they must outlive the
  // round they go in.
  struct PushPlan {
    using SparseCall = Call<ps::PushSparseRequest, ps::PushSparseResponse>;
    std::vector<std::unique_ptr<ManyCall>> dense_calls;
    std::vector<std::vector<std::unique_ptr<SparseCall>>> sparse_calls;
    std::vector<std::vector<std::unique_ptr<DensePushCall>>> add_calls;
    // One per add (as add_calls), made in place (an atomic does not move)
    // and never resized.
    std::unique_ptr<ValuesAfter[]> values_after;
  };

  // Plans PushMany of `dense`, a PushSparse of each of `sparse` (their
  // sizes checked by the caller) and an AddInt64 of each of `adds` (int64,
  // checked by the caller) into `plan`, appending the calls to `all` and
  // how to decode each response to `decoders`.
  absl::Status PlanPushStep(absl::Span<const DenseVariablePush> dense,
                            absl::Span<const SparseVariablePush> sparse,
                            absl::Span<const Int64VariableAdd> adds,
                            PushPlan& plan, std::vector<CallBase*>& all,
                            Decoders& decoders) {
    if (!dense.empty()) {
      ASSIGN_OR_RETURN(plan.dense_calls, PlanPushMany(dense));
    }
    plan.sparse_calls.resize(sparse.size());
    for (size_t v = 0; v < sparse.size(); ++v) {
      const SparseVariablePush& push = sparse[v];
      const IdRepeats repeats = FindRepeats(push.ids);
      ASSIGN_OR_RETURN(
          plan.sparse_calls[v],
          (GroupVariableIds<ps::PushSparseRequest, ps::PushSparseResponse>(
              *push.variable, push.ids, repeats)));
      EncodeRowPushes(plan.sparse_calls[v], RowWidth(push.variable->spec),
                      repeats, push.grads);
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
          call->response_bytes =
              RowRangeFromProto(call->request.rows()).size() *
              RowWidth(add.variable->spec) * 10;
        }
      }
    }
    for (auto& call : plan.dense_calls) all.push_back(call.get());
    for (auto& calls : plan.sparse_calls) {
      for (auto& call : calls) {
        call->rpc = "PushSparse";
        all.push_back(call.get());
      }
    }
    for (size_t a = 0; a < adds.size(); ++a) {
      for (auto& call : plan.add_calls[a]) {
        DensePushCall* c = call.get();
        c->rpc = "PushDense";
        all.push_back(c);
        ValuesAfter* values = &plan.values_after[a];
        decoders[c] = [this, c, values] {
          return DecodeValuesAfter(*c, *values);
        };
      }
    }
    return absl::OkStatus();
  }

  // What a PushStep does once its round has answered: the adds' values
  // after that did not come back.
  absl::Status FinishPushStep(PushPlan& plan) {
    for (size_t a = 0; a < plan.add_calls.size(); ++a) {
      RETURN_IF_ERROR(ReadValuesAfterIfMissing(plan.values_after[a]));
    }
    return absl::OkStatus();
  }

  // PushMany of `dense`, a PushSparse of each of `sparse` (their sizes
  // checked by the caller) and an AddInt64 of each of `adds` (int64, checked
  // by the caller), all their requests sent in one round.
  absl::Status PushStep(absl::Span<const DenseVariablePush> dense,
                        absl::Span<const SparseVariablePush> sparse,
                        absl::Span<const Int64VariableAdd> adds) {
    PushPlan plan;
    std::vector<CallBase*> all;
    Decoders decoders;
    RETURN_IF_ERROR(PlanPushStep(dense, sparse, adds, plan, all, decoders));
    RETURN_IF_ERROR(RunStepRound("PushStep", std::move(all), decoders));
    return FinishPushStep(plan);
  }

  // PushStep's updates, then PullStep's reads, in one round: a ps task's
  // small calls go in bundles, pushes first, each served in order, so reads
  // bundled with updates see them; calls that go apart (see
  // ParameterServers::PushPullStep) may be served in either order.
  absl::Status PushPullStep(absl::Span<const DenseVariablePush> dense_pushes,
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
    RETURN_IF_ERROR(
        PlanPullStep(dense_pulls, sparse_pulls, pull, all, decoders));
    RETURN_IF_ERROR(RunStepRound("PushPullStep", std::move(all), decoders));
    RETURN_IF_ERROR(FinishPushStep(push));
    FinishPullStep(pull, sparse_pulls);
    return absl::OkStatus();
  }

  // Pulls the rows of every call's ids through `rpc` and puts each where
  // its id was in the caller's list, in `out`, and where it repeats.
  template <typename Calls>
  absl::Status PullRowsById(absl::string_view rpc, Calls& calls, int64_t width,
                            absl::string_view name, const IdRepeats& repeats,
                            absl::Span<float> out) {
    EncodeIdRequests(calls);
    RETURN_IF_ERROR(RunWire(rpc, calls, [&](auto& call) {
      return DecodeRowsById(call, width, name, out);
    }));
    CopyRepeatedRows(repeats, width, out);
    return absl::OkStatus();
  }

  // Encodes each call's ids (field 2) as its request's tensor.
  template <typename Calls>
  static void EncodeIdRequests(Calls& calls) {
    for (auto& call : calls) {
      call->wire_request = rpc::EncodeWithTensors(
          call->request, {{2,
                           ps::INT64,
                           {static_cast<int64_t>(call->ids.size())},
                           BytesOf(absl::MakeConstSpan(call->ids)),
                           nullptr}});
    }
  }

  // Decodes the rows of a call's ids into their positions in `out`.
  template <typename CallType>
  absl::Status DecodeRowsById(CallType& call, int64_t width,
                              absl::string_view name, absl::Span<float> out) {
    const std::string what =
        absl::StrCat(call.ids.size(), " rows of \"", name, "\"");
    const int64_t elements = call.ids.size() * width;
    if (IsContiguous(call.positions)) {  // straight into place
      return DecodePulled(
          call, what, out.data() + call.positions.front() * width, elements);
    }
    call.rows.resize(elements);
    RETURN_IF_ERROR(DecodePulled(call, what, call.rows.data(), elements));
    for (size_t i = 0; i < call.positions.size(); ++i) {
      std::copy_n(call.rows.begin() + i * width, width,
                  out.begin() + call.positions[i] * width);
    }
    return absl::OkStatus();
  }

  // Rows were pulled for the first occurrence of each id only: copies them
  // to the repeats.
  static void CopyRepeatedRows(const IdRepeats& repeats, int64_t width,
                               absl::Span<float> out) {
    if (!repeats.any()) return;
    for (size_t i = 0; i < repeats.distinct_of.size(); ++i) {
      const size_t first = repeats.first[repeats.distinct_of[i]];
      if (first != i) {
        std::copy_n(out.begin() + first * width, width,
                    out.begin() + i * width);
      }
    }
  }

  // Pushes `grads` (one row per id of the caller's list) through `rpc`,
  // each call with the rows at its positions, or, where ids repeat, each
  // distinct id's gradients summed in the order they appear.
  template <typename Calls>
  absl::Status PushRowsById(absl::string_view rpc, Calls& calls, int64_t width,
                            const IdRepeats& repeats,
                            absl::Span<const float> grads) {
    EncodeRowPushes(calls, width, repeats, grads);
    return RunWire(rpc, calls, [](auto&) { return absl::OkStatus(); });
  }

  // Encodes each call's ids and their gradients (from `grads`, one row per
  // id of the caller's list; where ids repeat, each distinct id's rows
  // summed in the order they appear), with a new request id.
  template <typename Calls>
  void EncodeRowPushes(Calls& calls, int64_t width, const IdRepeats& repeats,
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
      // GroupIds gave each call the first occurrence of each id only.
      call->request.set_ids_distinct(true);
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
  }

  // Whether `positions` (ascending) are one run, e.g. every id on one task.
  static bool IsContiguous(const std::vector<size_t>& positions) {
    return !positions.empty() &&
           positions.back() - positions.front() + 1 == positions.size();
  }

  absl::Mutex placer_mu_;
  VariablePlacer placer_ ABSL_GUARDED_BY(placer_mu_);
  // What this client placed, so creating a variable again gives the same
  // placement instead of the placer's next one.
  absl::flat_hash_map<std::string, VariablePlacement> placed_
      ABSL_GUARDED_BY(placer_mu_);
};

}  // namespace distrt

#endif  // DISTRT_CLIENT_PS_CLIENT_IMPL_H_
