#ifndef DISTRT_RUNTIME_DISTRIBUTE_VARIABLE_AGGREGATION_H_
#define DISTRT_RUNTIME_DISTRIBUTE_VARIABLE_AGGREGATION_H_

// TF's tf.VariableSynchronization and tf.VariableAggregation: when a
// distributed variable's copies agree (on every write, or combined when
// read) and how the replicas' updates to it combine. DistributedVariable
// (variable.h) says what each means under each strategy.

#include "absl/strings/string_view.h"

namespace distrt {

enum class VariableSynchronization { kOnWrite, kOnRead };
enum class VariableAggregation { kNone, kSum, kMean, kOnlyFirstReplica };

// "ON_WRITE", "ON_READ"; "NONE", "SUM", "MEAN", "ONLY_FIRST_REPLICA".
absl::string_view VariableSynchronizationName(VariableSynchronization s);
absl::string_view VariableAggregationName(VariableAggregation a);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_VARIABLE_AGGREGATION_H_
