#ifndef DISTRT_RUNTIME_TENSOR_DTYPE_H_
#define DISTRT_RUNTIME_TENSOR_DTYPE_H_

// Element types of tensors and variables. float64 is for values (reduced,
// all-reduced, broadcast: metrics and sums that need the precision), not
// for variables, which are float32 or int64 (ValidateVariableSpec).

#include <cstdint>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace distrt {

enum class DType { kFloat32, kInt64, kFloat64 };

// "float32", "int64", "float64".
absl::string_view DTypeName(DType dtype);
// Bytes per element.
int DTypeSize(DType dtype);

// The DType of C++ element type T (float, int64_t or double).
template <typename T>
constexpr DType DTypeOf() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, double>,
                "tensors hold float, int64_t or double elements");
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  return DType::kFloat64;
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TENSOR_DTYPE_H_
