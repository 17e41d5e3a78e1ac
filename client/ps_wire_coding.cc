#include "client/ps_wire_coding.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "rpc/tensor_codec.h"
#include "rpc/wire_message.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/status_macros.h"

namespace distrt::ps_client_internal {
namespace {

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

template <typename Request>
void SetRowsOf(const std::string& name, RowRange rows, Request* request) {
  request->set_name(name);
  *request->mutable_rows() = RowRangeToProto(rows);
}

template <typename T>
grpc::ByteBuffer EncodeDensePushOf(const ps::PushDenseRequest& request,
                                   absl::Span<const T> values) {
  return rpc::EncodeWithTensors(request,
                                {{3,
                                  WireDType<T>(),
                                  {static_cast<int64_t>(values.size())},
                                  BytesOf(values),
                                  nullptr}});
}

// Decodes a pull's response, whose field 1 is `elements` elements of type
// T, into `destination`; the other fields go to `fields`.
template <typename T>
absl::Status DecodePulled(grpc::ByteBuffer* response,
                          google::protobuf::MessageLite* fields,
                          absl::string_view sender, absl::string_view what,
                          T* destination, int64_t elements) {
  rpc::IncomingTensor values(1);
  const int64_t expected = elements * int64_t{sizeof(T)};
  const auto wrong = [&](absl::string_view detail) {
    return absl::InternalError(
        absl::StrCat(sender, " sent ", what, " ", detail));
  };
  values.destination = [&](int64_t bytes) -> absl::StatusOr<char*> {
    if (bytes != expected) {
      return wrong(absl::StrCat("of ", bytes, " bytes, expected ", expected));
    }
    return reinterpret_cast<char*>(destination);
  };
  RETURN_IF_ERROR(rpc::DecodeWithTensors(
      response, absl::StrCat(what, " from ", sender), fields, {&values}));
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
    return absl::InternalError(
        absl::StrCat(sender, ": ", checked.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RowsOf(absl::string_view name, RowRange rows) {
  return absl::StrCat("rows ", RowRangeString(rows), " of \"", name, "\"");
}

void SetRows(const std::string& name, RowRange rows,
             ps::PullDenseRequest* request) {
  SetRowsOf(name, rows, request);
}

void SetRows(const std::string& name, RowRange rows,
             ps::PushDenseRequest* request) {
  SetRowsOf(name, rows, request);
}

grpc::ByteBuffer EncodeFields(const ps::PullDenseRequest& request) {
  return rpc::EncodeWithTensors(request, {});
}

grpc::ByteBuffer EncodeFields(const ps::PullDenseBatchRequest& request) {
  return rpc::EncodeWithTensors(request, {});
}

grpc::ByteBuffer EncodeFields(const ps::PushDenseBatchRequest& request) {
  return rpc::EncodeWithTensors(request, {});
}

grpc::ByteBuffer EncodeDensePush(const ps::PushDenseRequest& request,
                                 absl::Span<const float> values) {
  return EncodeDensePushOf(request, values);
}

grpc::ByteBuffer EncodeDensePush(const ps::PushDenseRequest& request,
                                 absl::Span<const int64_t> values) {
  return EncodeDensePushOf(request, values);
}

void AddBatchPush(const std::string& name, RowRange rows,
                  absl::Span<const float> grad,
                  ps::PushDenseBatchRequest* batch) {
  ps::PushDenseRequest* item = batch->add_pushes();
  SetRows(name, rows, item);
  rpc::EncodeFloat32(grad, {static_cast<int64_t>(grad.size())},
                     item->mutable_values());
}

absl::Status DecodeDensePull(grpc::ByteBuffer* response,
                             absl::string_view sender, absl::string_view what,
                             float* destination, int64_t elements) {
  ps::PullDenseResponse fields;
  return DecodePulled(response, &fields, sender, what, destination, elements);
}

absl::Status DecodeDensePull(grpc::ByteBuffer* response,
                             absl::string_view sender, absl::string_view what,
                             int64_t* destination, int64_t elements) {
  ps::PullDenseResponse fields;
  return DecodePulled(response, &fields, sender, what, destination, elements);
}

absl::Status DecodeBatchPull(ManyCall& call, absl::string_view sender,
                             absl::Span<const DenseVariablePull> pulls) {
  ps::PullDenseBatchResponse response;
  RETURN_IF_ERROR(rpc::DecodeWithTensors(
      &call.wire_response,
      absl::StrCat("PullDenseBatch response from ", sender), &response, {}));
  const auto what = [&](size_t i) {
    const DensePiece& piece = call.pieces[i];
    return RowsOf(pulls[piece.variable].variable->spec.name, piece.rows);
  };
  if (static_cast<size_t>(response.pulls_size()) != call.pieces.size()) {
    return absl::InternalError(absl::StrCat(
        sender, " sent ", response.pulls_size(), " tensors for a batch of ",
        call.pieces.size(), " pulls, from ", what(0), " to ",
        what(call.pieces.size() - 1)));
  }
  for (size_t i = 0; i < call.pieces.size(); ++i) {
    const DensePiece& piece = call.pieces[i];
    const DenseVariablePull& pull = pulls[piece.variable];
    const VariableSpec& spec = pull.variable->spec;
    const ps::Tensor& values = response.pulls(i).values();
    const auto wrong = [&](absl::string_view detail) {
      return absl::InternalError(
          absl::StrCat(sender, " sent ", what(i), " ", detail));
    };
    if (values.dtype() != ps::FLOAT32) {
      return wrong(absl::StrCat("of dtype ", rpc::DataTypeName(values.dtype()),
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
    const int64_t expected = piece.rows.size() * width * int64_t{sizeof(float)};
    if (static_cast<int64_t>(values.data().size()) != expected) {
      return wrong(absl::StrCat("of ", values.data().size(),
                                " bytes, expected ", expected));
    }
    std::memcpy(pull.out.data() + piece.rows.begin * width,
                values.data().data(), expected);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> DecodeValuesAfter(grpc::ByteBuffer* response,
                                       absl::string_view sender,
                                       absl::string_view what,
                                       absl::Span<int64_t> after) {
  ps::PushDenseResponse fields;
  RETURN_IF_ERROR(rpc::DecodeWithTensors(
      response, absl::StrCat("PushDense response for ", what, " from ", sender),
      &fields, {}));
  const int64_t elements = after.size();
  if (fields.values_after_size() == 0 && elements > 0) return false;
  if (fields.values_after_size() != elements) {
    return absl::InternalError(
        absl::StrCat(sender, " sent ", fields.values_after_size(),
                     " values after the add to ", what, ", not ", elements));
  }
  std::copy(fields.values_after().begin(), fields.values_after().end(),
            after.begin());
  return true;
}

void EncodeIdRequests(std::vector<std::unique_ptr<SparsePullCall>>& calls) {
  for (auto& call : calls) {
    call->wire_request = rpc::EncodeWithTensors(
        call->request, {{2,
                         ps::INT64,
                         {static_cast<int64_t>(call->ids.size())},
                         BytesOf(absl::MakeConstSpan(call->ids)),
                         nullptr}});
  }
}

absl::Status DecodeRowsById(SparsePullCall& call, absl::string_view sender,
                            int64_t width, absl::string_view name,
                            absl::Span<float> out) {
  const std::string what =
      absl::StrCat(call.ids.size(), " rows of \"", name, "\"");
  const int64_t elements = call.ids.size() * width;
  ps::PullSparseResponse fields;
  if (IsContiguous(call.positions)) {  // straight into place
    return DecodePulled(&call.wire_response, &fields, sender, what,
                        out.data() + call.positions.front() * width, elements);
  }
  call.rows.resize(elements);
  RETURN_IF_ERROR(DecodePulled(&call.wire_response, &fields, sender, what,
                               call.rows.data(), elements));
  for (size_t i = 0; i < call.positions.size(); ++i) {
    std::copy_n(call.rows.begin() + i * width, width,
                out.begin() + call.positions[i] * width);
  }
  return absl::OkStatus();
}

void CopyRepeatedRows(const IdRepeats& repeats, int64_t width,
                      absl::Span<float> out) {
  if (!repeats.any()) return;
  for (size_t i = 0; i < repeats.distinct_of.size(); ++i) {
    const size_t first = repeats.first[repeats.distinct_of[i]];
    if (first != i) {
      std::copy_n(out.begin() + first * width, width, out.begin() + i * width);
    }
  }
}

void EncodeRowPushes(std::vector<std::unique_ptr<SparsePushCall>>& calls,
                     int64_t width, const IdRepeats& repeats,
                     absl::Span<const float> grads,
                     absl::FunctionRef<uint64_t()> new_request_id) {
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
    call->request.set_request_id(new_request_id());
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

bool IsContiguous(const std::vector<size_t>& positions) {
  return !positions.empty() &&
         positions.back() - positions.front() + 1 == positions.size();
}

}  // namespace distrt::ps_client_internal
