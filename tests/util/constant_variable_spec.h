#ifndef DISTRT_TESTS_UTIL_CONSTANT_VARIABLE_SPEC_H_
#define DISTRT_TESTS_UTIL_CONSTANT_VARIABLE_SPEC_H_

// The variable integration tests make most: every element starts at
// `initial_value` and SGD applies pushes with `learning_rate`, so what a
// pull returns after some pushes is easy to write down.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ps/variable_spec.h"

namespace distrt::testing {

inline VariableSpec ConstantVariableSpec(std::string name,
                                         std::vector<int64_t> shape,
                                         float initial_value,
                                         float learning_rate = 1.0f) {
  VariableSpec spec;
  spec.name = std::move(name);
  spec.shape = std::move(shape);
  spec.initializer.kind = InitializerSpec::Kind::kConstant;
  spec.initializer.value = initial_value;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = learning_rate;
  return spec;
}

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_CONSTANT_VARIABLE_SPEC_H_
