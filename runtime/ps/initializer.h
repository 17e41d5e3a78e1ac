#ifndef DISTRT_RUNTIME_PS_INITIALIZER_H_
#define DISTRT_RUNTIME_PS_INITIALIZER_H_

// Initial values of variables: zeros, a constant, uniform, or truncated
// normal, with a seed.
//
// Every element's value is a function of (seed, its index in the whole
// variable) only, so a variable comes out the same whether one ps task holds
// it or several hold partitions of it, and an embedding row created on first
// use gets the same values on every run.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace distrt {

struct InitializerSpec {
  enum class Kind { kZeros, kConstant, kUniform, kTruncatedNormal };
  Kind kind = Kind::kZeros;
  float value = 0.0f;     // kConstant
  float minval = -0.05f;  // kUniform: [minval, maxval)
  float maxval = 0.05f;
  float mean = 0.0f;  // kTruncatedNormal: within 2 stddev of the mean
  float stddev = 0.05f;
  uint64_t seed = 0;
};

// INVALID_ARGUMENT naming the field (e.g. minval >= maxval, stddev <= 0).
absl::Status ValidateInitializer(const InitializerSpec& spec);

// Fills `out` with the values of elements first_index, first_index + 1, ...
void FillInitialValues(const InitializerSpec& spec, int64_t first_index,
                       absl::Span<float> out);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_INITIALIZER_H_
