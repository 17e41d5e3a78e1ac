#include "runtime/tensor/dtype.h"

namespace distrt {

absl::string_view DTypeName(DType dtype) {
  return dtype == DType::kFloat32 ? "float32" : "int64";
}

int DTypeSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 8; }

}  // namespace distrt
