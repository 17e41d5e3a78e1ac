#ifndef DISTRT_RPC_TENSOR_CODEC_H_
#define DISTRT_RPC_TENSOR_CODEC_H_

// Tensors in the wire format (ps::Tensor in proto/variable.proto): elements
// as raw little-endian bytes in a `bytes` field. The services move tensors
// without building these messages (rpc/wire_message.h) and check what they
// receive here, as TensorViews; Encode* build the messages for clients that
// use the generated stubs (tests, tools).
//
// Decoding checks the dtype and that the bytes are a whole number of
// elements matching the shape, and names `what` (e.g. "the gradient of
// variable \"w\"") in errors.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/variable.pb.h"

namespace distrt::rpc {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the wire format is little-endian; this host is not");

// A tensor as read off the wire: dtype, shape and the elements' bytes,
// borrowed from whatever holds them (a decoded message, a pooled buffer, or
// the received message's own slices).
struct TensorView {
  ps::DataType dtype = ps::DATA_TYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  // The elements: contiguous in `data`, or, when `pieces` is not empty, in
  // `pieces` one after the other (a message's slices: any length, any
  // alignment, an element possibly split between two).
  absl::Span<const char> data;
  std::vector<absl::Span<const char>> pieces;

  int64_t bytes() const;
};

// "float32", "int64", "unspecified", or "unknown" for a value this build
// does not know (a newer peer's).
absl::string_view DataTypeName(int dtype);

// A view of a message's tensor; valid while `tensor` is.
TensorView ViewOf(const ps::Tensor& tensor);

void EncodeFloat32(absl::Span<const float> values, std::vector<int64_t> shape,
                   ps::Tensor* tensor);
void EncodeInt64(absl::Span<const int64_t> values, std::vector<int64_t> shape,
                 ps::Tensor* tensor);

// The elements of `tensor`. They are read in place when the bytes are
// contiguous and suitably aligned and copied into `scratch` otherwise;
// either way the span lives as long as the viewed bytes and `scratch`.
// INVALID_ARGUMENT when the dtype differs or the byte length does not match.
absl::StatusOr<absl::Span<const float>> Float32Elements(
    const TensorView& tensor, absl::string_view what,
    std::vector<float>* scratch);
absl::StatusOr<absl::Span<const int64_t>> Int64Elements(
    const TensorView& tensor, absl::string_view what,
    std::vector<int64_t>* scratch);

// The bytes of a float32 tensor's elements where they lie, in pieces (one
// when contiguous), for consumers that stream through them instead of
// needing one aligned array. Checks as Float32Elements does.
absl::StatusOr<std::vector<absl::Span<const char>>> Float32Pieces(
    const TensorView& tensor, absl::string_view what);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_TENSOR_CODEC_H_
