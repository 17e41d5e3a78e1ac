#ifndef DISTRT_RUNTIME_MODELS_MODEL_TEST_UTIL_H_
#define DISTRT_RUNTIME_MODELS_MODEL_TEST_UTIL_H_

// For the models' tests: batches built directly, random values for a
// model's variables, and the check of analytic gradients against central
// differences of the loss.

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "runtime/input/batch.h"
#include "runtime/models/model.h"

namespace distrt {

// One example's sparse features: (id, value) pairs.
using SparseFeatures = std::vector<std::pair<int64_t, float>>;

// A batch of dense features, one row per label.
Batch DenseBatch(std::vector<float> labels,
                 const std::vector<std::vector<float>>& rows);
// A batch of sparse features, one list per label.
Batch SparseBatch(std::vector<float> labels,
                  const std::vector<SparseFeatures>& features);

// n values uniform in [minval, maxval), a function of the seed only.
std::vector<float> RandomUniform(int64_t n, float minval, float maxval,
                                 uint64_t seed);
// One example per label, each of `num_dense` features in [-1, 1).
Batch RandomDenseBatch(std::vector<float> labels, int64_t num_dense,
                       uint64_t seed);
// One example per label, each of 0 to max_features sparse features (ids in
// [0, num_features), repeats allowed, values in [-1, 1)).
Batch RandomSparseBatch(std::vector<float> labels, int64_t num_features,
                        int max_features, uint64_t seed);

// Values for every variable of `model` as Compute takes them for `batch`
// (sparse variables with the rows SparseIds names), uniform in [-scale,
// scale).
absl::StatusOr<std::vector<VariableSlice>> RandomValues(const Model& model,
                                                        const Batch& batch,
                                                        uint64_t seed,
                                                        float scale);

// d loss / d every value by central differences of Compute's loss_sum,
// stepping each value by +-eps in turn.
std::vector<VariableSlice> NumericalGradients(
    const Model& model, const Batch& batch,
    const std::vector<VariableSlice>& values, float eps);

// Success when the two agree in layout and every element within
// atol + rtol * |numerical|; otherwise the first mismatches.
testing::AssertionResult GradientsNear(
    const std::vector<VariableSlice>& analytic,
    const std::vector<VariableSlice>& numerical, float atol, float rtol);

// The whole check: the model's gradients for (batch, values) match the
// numerical ones, and the comparison is tight enough to notice any one
// variable's gradient halved or of the wrong sign.
void ExpectGradientsMatchNumerical(const Model& model, const Batch& batch,
                                   const std::vector<VariableSlice>& values,
                                   float eps, float atol, float rtol);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_MODEL_TEST_UTIL_H_
