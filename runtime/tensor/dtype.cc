#include "runtime/tensor/dtype.h"

namespace distrt {

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat64:
      return "float64";
  }
  return "unknown";
}

int DTypeSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 8; }

}  // namespace distrt
