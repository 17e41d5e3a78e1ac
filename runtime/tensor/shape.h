#ifndef DISTRT_RUNTIME_TENSOR_SHAPE_H_
#define DISTRT_RUNTIME_TENSOR_SHAPE_H_

// Shapes of tensors and variables: their element count, checked, and how
// they print.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace distrt {

// Largest number of elements a tensor or variable may have (2^40, 4 TiB of
// floats): anything larger is refused before arithmetic on it can overflow.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// "[2, 3]"; "[]" for a scalar.
std::string ShapeString(absl::Span<const int64_t> shape);

// The number of elements of `shape`. INVALID_ARGUMENT "shape [..] has a
// negative dimension" or "shape [..] has more than 2^40 elements".
absl::StatusOr<int64_t> CountElements(absl::Span<const int64_t> shape);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TENSOR_SHAPE_H_
