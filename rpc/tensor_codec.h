#ifndef DISTRT_RPC_TENSOR_CODEC_H_
#define DISTRT_RPC_TENSOR_CODEC_H_

// The one place where tensors are put into and taken out of the wire format
// (ps::Tensor in proto/variable.proto): elements as raw little-endian bytes
// in a `bytes` field. Keeping every encode and decode here lets the
// transport change (e.g. to zero-copy byte buffers) without touching
// callers.
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
// borrowed from whatever holds them (a decoded message, a pooled buffer).
struct TensorView {
  ps::DataType dtype = ps::DATA_TYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  absl::Span<const char> data;
};

TensorView ViewOf(const ps::Tensor& tensor);

// Sizes `tensor` for `num_elements` elements of the type and returns where
// to write them, so a pull writes straight into the message.
absl::Span<float> AllocateFloat32(int64_t num_elements,
                                  std::vector<int64_t> shape,
                                  ps::Tensor* tensor);
absl::Span<int64_t> AllocateInt64(int64_t num_elements,
                                  std::vector<int64_t> shape,
                                  ps::Tensor* tensor);

void EncodeFloat32(absl::Span<const float> values, std::vector<int64_t> shape,
                   ps::Tensor* tensor);
void EncodeInt64(absl::Span<const int64_t> values, std::vector<int64_t> shape,
                 ps::Tensor* tensor);

// The elements of `tensor`. They are read in place when the bytes are
// suitably aligned (the usual case) and copied into `scratch` otherwise;
// either way the span lives as long as `tensor` and `scratch`.
// INVALID_ARGUMENT when the dtype differs or the byte length does not match.
absl::StatusOr<absl::Span<const float>> Float32Elements(
    const TensorView& tensor, absl::string_view what,
    std::vector<float>* scratch);
absl::StatusOr<absl::Span<const int64_t>> Int64Elements(
    const TensorView& tensor, absl::string_view what,
    std::vector<int64_t>* scratch);
absl::StatusOr<absl::Span<const float>> Float32Elements(
    const ps::Tensor& tensor, absl::string_view what,
    std::vector<float>* scratch);
absl::StatusOr<absl::Span<const int64_t>> Int64Elements(
    const ps::Tensor& tensor, absl::string_view what,
    std::vector<int64_t>* scratch);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_TENSOR_CODEC_H_
