#ifndef DISTRT_RUNTIME_COLLECTIVE_REDUCE_OP_H_
#define DISTRT_RUNTIME_COLLECTIVE_REDUCE_OP_H_

// How the values of replicas combine (tf.distribute.ReduceOp).

#include "absl/strings/string_view.h"

namespace distrt {

enum class ReduceOp { kSum, kMean };

// "SUM", "MEAN".
absl::string_view ReduceOpName(ReduceOp op);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_REDUCE_OP_H_
