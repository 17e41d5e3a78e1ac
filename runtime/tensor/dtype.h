#ifndef DISTRT_RUNTIME_TENSOR_DTYPE_H_
#define DISTRT_RUNTIME_TENSOR_DTYPE_H_

// Element types of tensors and variables.

#include <cstdint>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace distrt {

enum class DType { kFloat32, kInt64 };

// "float32", "int64".
absl::string_view DTypeName(DType dtype);
// Bytes per element.
int DTypeSize(DType dtype);

// The DType of C++ element type T (float or int64_t).
template <typename T>
constexpr DType DTypeOf() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, int64_t>,
                "tensors hold float or int64_t elements");
  return std::is_same_v<T, float> ? DType::kFloat32 : DType::kInt64;
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TENSOR_DTYPE_H_
