#include "rpc/tensor_codec.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {

absl::string_view DataTypeName(int dtype) {
  switch (dtype) {
    case ps::FLOAT32:
      return "float32";
    case ps::INT64:
      return "int64";
    case ps::DATA_TYPE_UNSPECIFIED:
      return "unspecified";
  }
  return "unknown";
}

namespace {

template <typename T>
absl::Span<T> Allocate(ps::DataType dtype, int64_t num_elements,
                       std::vector<int64_t> shape, ps::Tensor* tensor) {
  tensor->set_dtype(dtype);
  tensor->mutable_shape()->Assign(shape.begin(), shape.end());
  std::string* data = tensor->mutable_data();
  data->resize(num_elements * sizeof(T));
  // std::string storage comes from operator new: aligned for any scalar.
  return absl::MakeSpan(reinterpret_cast<T*>(data->data()), num_elements);
}

// The number of elements of `tensor`, after checking its dtype and that its
// bytes are whole elements matching its shape.
absl::StatusOr<int64_t> CheckedElements(const TensorView& tensor,
                                        ps::DataType dtype, size_t element_size,
                                        absl::string_view what) {
  if (tensor.dtype != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", DataTypeName(tensor.dtype), ", expected ",
                     DataTypeName(dtype)));
  }
  const int64_t bytes = tensor.bytes();
  if (bytes % element_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", bytes, " bytes, not a whole number ", "of ",
                     element_size, "-byte elements"));
  }
  const int64_t num_elements = bytes / element_size;
  if (!tensor.shape.empty()) {
    absl::StatusOr<int64_t> shape_elements = CountElements(tensor.shape);
    if (!shape_elements.ok() || *shape_elements != num_elements) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has shape ", ShapeString(tensor.shape), " but ",
                       num_elements, " elements"));
    }
  }
  return num_elements;
}

template <typename T>
absl::StatusOr<absl::Span<const T>> Elements(const TensorView& tensor,
                                             ps::DataType dtype,
                                             absl::string_view what,
                                             std::vector<T>* scratch) {
  ASSIGN_OR_RETURN(int64_t num_elements,
                   CheckedElements(tensor, dtype, sizeof(T), what));
  const absl::Span<const char> data = tensor.data;
  if (tensor.pieces.empty() &&
      reinterpret_cast<uintptr_t>(data.data()) % alignof(T) == 0) {
    return absl::MakeConstSpan(reinterpret_cast<const T*>(data.data()),
                               num_elements);
  }
  scratch->resize(num_elements);
  char* to = reinterpret_cast<char*>(scratch->data());
  if (tensor.pieces.empty()) {
    std::memcpy(to, data.data(), data.size());
  } else {
    for (absl::Span<const char> piece : tensor.pieces) {
      std::memcpy(to, piece.data(), piece.size());
      to += piece.size();
    }
  }
  return absl::MakeConstSpan(*scratch);
}

}  // namespace

int64_t TensorView::bytes() const {
  int64_t total = static_cast<int64_t>(data.size());
  for (absl::Span<const char> piece : pieces) total += piece.size();
  return total;
}

TensorView ViewOf(const ps::Tensor& tensor) {
  TensorView view;
  view.dtype = tensor.dtype();
  view.shape.assign(tensor.shape().begin(), tensor.shape().end());
  view.data = tensor.data();
  return view;
}

void EncodeFloat32(absl::Span<const float> values, std::vector<int64_t> shape,
                   ps::Tensor* tensor) {
  absl::Span<float> out =
      Allocate<float>(ps::FLOAT32, values.size(), std::move(shape), tensor);
  std::copy(values.begin(), values.end(), out.begin());
}

void EncodeInt64(absl::Span<const int64_t> values, std::vector<int64_t> shape,
                 ps::Tensor* tensor) {
  absl::Span<int64_t> out =
      Allocate<int64_t>(ps::INT64, values.size(), std::move(shape), tensor);
  std::copy(values.begin(), values.end(), out.begin());
}

absl::StatusOr<absl::Span<const float>> Float32Elements(
    const TensorView& tensor, absl::string_view what,
    std::vector<float>* scratch) {
  return Elements<float>(tensor, ps::FLOAT32, what, scratch);
}

absl::StatusOr<absl::Span<const int64_t>> Int64Elements(
    const TensorView& tensor, absl::string_view what,
    std::vector<int64_t>* scratch) {
  return Elements<int64_t>(tensor, ps::INT64, what, scratch);
}

absl::StatusOr<std::vector<absl::Span<const char>>> Float32Pieces(
    const TensorView& tensor, absl::string_view what) {
  RETURN_IF_ERROR(
      CheckedElements(tensor, ps::FLOAT32, sizeof(float), what).status());
  if (!tensor.pieces.empty()) return tensor.pieces;
  std::vector<absl::Span<const char>> pieces;
  if (!tensor.data.empty()) pieces.push_back(tensor.data);
  return pieces;
}

}  // namespace distrt::rpc
