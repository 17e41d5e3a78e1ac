#include "runtime/collective/reduce_op.h"

namespace distrt {

absl::string_view ReduceOpName(ReduceOp op) {
  return op == ReduceOp::kSum ? "SUM" : "MEAN";
}

}  // namespace distrt
