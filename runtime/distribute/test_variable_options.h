#ifndef DISTRT_RUNTIME_DISTRIBUTE_TEST_VARIABLE_OPTIONS_H_
#define DISTRT_RUNTIME_DISTRIBUTE_TEST_VARIABLE_OPTIONS_H_

// Variables that strategy tests create (testonly).

#include <string>
#include <utility>
#include <vector>

#include "runtime/distribute/variable.h"

namespace distrt {

// A float32 variable of `shape`, zeros, SGD at 0.01, summed over replicas.
inline VariableOptions SumVariable(std::string name,
                                   std::vector<int64_t> shape) {
  VariableOptions options;
  options.spec.name = std::move(name);
  options.spec.shape = std::move(shape);
  options.aggregation = VariableAggregation::kSum;
  return options;
}

// "global_step": an int64 scalar that only the first replica updates.
inline VariableOptions GlobalStepVariable() {
  VariableOptions options;
  options.spec.name = "global_step";
  options.spec.dtype = DType::kInt64;
  options.aggregation = VariableAggregation::kOnlyFirstReplica;
  return options;
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_TEST_VARIABLE_OPTIONS_H_
