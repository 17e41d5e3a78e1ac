#ifndef DISTRT_CLIENT_PS_WIRE_CODING_H_
#define DISTRT_CLIENT_PS_WIRE_CODING_H_

// The wire coding of PsClient's tensors (internal to client/): how the
// floats and int64s of a pull or push are packed into request messages and
// read out of responses (rpc/wire_message.h, rpc/tensor_codec.h), checked
// against what was asked for. Plain functions over calls and buffers: no
// channel, no retry, nothing sent; the client-side counterpart of
// rpc/ps_request_handler.h.
//
// Large tensors are sent from the caller's buffers and decoded straight
// into them: an encoded request borrows the values it is given, which must
// outlive the call. Errors about a response name its sender (`sender`:
// PsTaskName) and what was pulled.
//
// Thread-safety: stateless; functions touching one call may run on several
// threads at once for different calls (responses are decoded as they
// arrive, on gRPC's threads).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/id_repeats.h"
#include "client/ps_calls.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/ps_service.pb.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/ps_requests.h"

namespace distrt::ps_client_internal {

using SparsePullCall = Call<ps::PullSparseRequest, ps::PullSparseResponse>;
using SparsePushCall = Call<ps::PushSparseRequest, ps::PushSparseResponse>;

// "rows [b, e) of "name"", as errors name a piece of a variable.
std::string RowsOf(absl::string_view name, RowRange rows);

// Names the rows of a PullDense / PushDense request (or batch item).
void SetRows(const std::string& name, RowRange rows,
             ps::PullDenseRequest* request);
void SetRows(const std::string& name, RowRange rows,
             ps::PushDenseRequest* request);

// The bytes of a message without tensors (the tensors' fields unset).
grpc::ByteBuffer EncodeFields(const ps::PullDenseRequest& request);
grpc::ByteBuffer EncodeFields(const ps::PullDenseBatchRequest& request);
grpc::ByteBuffer EncodeFields(const ps::PushDenseBatchRequest& request);

// The bytes of a PushDense request: `request`'s fields and `values` (rows
// of float32 or int64 elements), sent from where `values` lie.
grpc::ByteBuffer EncodeDensePush(const ps::PushDenseRequest& request,
                                 absl::Span<const float> values);
grpc::ByteBuffer EncodeDensePush(const ps::PushDenseRequest& request,
                                 absl::Span<const int64_t> values);

// Appends to `batch` an item pushing `grad` to `rows` of `name`, copied
// into the message (a batch's pieces are small).
void AddBatchPush(const std::string& name, RowRange rows,
                  absl::Span<const float> grad,
                  ps::PushDenseBatchRequest* batch);

// Decodes a PullDense response, whose values are `elements` elements of
// the destination's type, into `destination`. INTERNAL naming `sender` and
// `what` when it sent another size, type or shape.
absl::Status DecodeDensePull(grpc::ByteBuffer* response,
                             absl::string_view sender, absl::string_view what,
                             float* destination, int64_t elements);
absl::Status DecodeDensePull(grpc::ByteBuffer* response,
                             absl::string_view sender, absl::string_view what,
                             int64_t* destination, int64_t elements);

// Decodes a PullDenseBatch response (a protobuf message: its tensors are
// small) into the buffers of `pulls`, piece by piece of `call`. INTERNAL
// naming `sender` and the variable when it sent another number of items,
// or an item of another dtype, shape or size.
absl::Status DecodeBatchPull(ManyCall& call, absl::string_view sender,
                             absl::Span<const DenseVariablePull> pulls);

// Decodes the values after an int64 add that a PushDense response carries
// into `after` (as many elements as the request pushed; `what` names
// them). False when the response carries none though some were asked for
// (a ps_server older than return_values): they must then be read.
absl::StatusOr<bool> DecodeValuesAfter(grpc::ByteBuffer* response,
                                       absl::string_view sender,
                                       absl::string_view what,
                                       absl::Span<int64_t> after);

// Encodes each call's ids (field 2) as its request's tensor.
void EncodeIdRequests(std::vector<std::unique_ptr<SparsePullCall>>& calls);

// Decodes the rows of a call's ids (`width` floats each, of variable or
// table `name`) into their positions in `out`: straight into place when
// the positions are one run, through the call's `rows` otherwise.
absl::Status DecodeRowsById(SparsePullCall& call, absl::string_view sender,
                            int64_t width, absl::string_view name,
                            absl::Span<float> out);

// Rows were pulled for the first occurrence of each id only: copies them
// to the repeats.
void CopyRepeatedRows(const IdRepeats& repeats, int64_t width,
                      absl::Span<float> out);

// Encodes each call's ids and their gradients (from `grads`, one row of
// `width` per id of the caller's list; where ids repeat, each distinct
// id's rows summed in the order they appear), each with a request id from
// `new_request_id`. Gradients of ids that are one run are sent from
// `grads` itself, which must outlive the calls.
void EncodeRowPushes(std::vector<std::unique_ptr<SparsePushCall>>& calls,
                     int64_t width, const IdRepeats& repeats,
                     absl::Span<const float> grads,
                     absl::FunctionRef<uint64_t()> new_request_id);

// Whether `positions` (ascending) are one run, e.g. every id on one task.
bool IsContiguous(const std::vector<size_t>& positions);

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_WIRE_CODING_H_
