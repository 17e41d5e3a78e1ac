#include "runtime/tensor/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distrt {

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<int64_t> CountElements(absl::Span<const int64_t> shape) {
  int64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", ShapeString(shape), " has a negative dimension"));
    }
    if (dim != 0 && elements > kMaxElements / dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", ShapeString(shape), " has more than 2^40 elements"));
    }
    elements *= dim;
  }
  return elements;
}

}  // namespace distrt
