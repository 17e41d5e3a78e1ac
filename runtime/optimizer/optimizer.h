#ifndef DISTRT_RUNTIME_OPTIMIZER_OPTIMIZER_H_
#define DISTRT_RUNTIME_OPTIMIZER_OPTIMIZER_H_

// Optimizers that parameter servers apply to the variables they hold: SGD,
// Momentum (optionally Nesterov), Adagrad, Adam and FTRL-Proximal, with the
// update rules of tf.keras.optimizers (FTRL as TensorFlow's ApplyFtrl).
//
// An optimizer keeps per-element state in "slots" stored beside the variable
// (e.g. Adam's first and second moments), each the variable's shape. Apply
// updates a contiguous range of elements: a whole variable, a partition of
// it, or one embedding row, with the matching ranges of its slots. Callers
// serialise updates to the same elements; Apply itself holds no state.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace distrt {

enum class OptimizerKind { kSgd, kMomentum, kAdagrad, kAdam, kFtrl };

// Every hyper-parameter with Keras' default. Only those of `kind` are used.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;
  // Momentum.
  float momentum = 0.0f;
  bool nesterov = false;
  // Adagrad and FTRL: the accumulator's starting value.
  float initial_accumulator_value = 0.1f;
  // Adagrad and Adam.
  float epsilon = 1e-7f;
  // Adam.
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  // FTRL-Proximal.
  float learning_rate_power = -0.5f;
  float l1_regularization = 0.0f;
  float l2_regularization = 0.0f;
};

// "sgd", "momentum", "adagrad", "adam", "ftrl".
absl::string_view OptimizerName(OptimizerKind kind);
// INVALID_ARGUMENT listing the known names when `name` is not one.
absl::StatusOr<OptimizerKind> ParseOptimizerName(absl::string_view name);

// INVALID_ARGUMENT naming the hyper-parameter and its allowed range.
absl::Status ValidateOptimizerConfig(const OptimizerConfig& config);

// The slots `kind` keeps, in the order Apply expects them:
//   sgd: none; momentum: "momentum"; adagrad: "accumulator";
//   adam: "m", "v"; ftrl: "accumulator", "linear".
std::vector<std::string> SlotNames(OptimizerKind kind);
// The value every element of slot `slot` starts with.
float SlotInitialValue(const OptimizerConfig& config, int slot);

// One update of `params` by `grad`. `slots` are the ranges of this
// optimizer's slots matching `params` (SlotNames order). `step` counts the
// updates of this variable including this one (1 for the first); Adam's bias
// correction uses it. Sizes must agree (checked by the caller: a mismatch is
// a programming error here).
void ApplyOptimizer(const OptimizerConfig& config, int64_t step,
                    absl::Span<const float> grad, absl::Span<float> params,
                    absl::Span<const absl::Span<float>> slots);

// ApplyOptimizer over many rows of one variable at once, as a sparse push
// updates them: row r of `grads` (`width` elements) updates the `width`
// elements at offsets[r] of `params` and of each of `slots` (SlotNames
// order, each as long as `params`). Offsets must be distinct. The same
// result as one ApplyOptimizer per row, but the optimizer is chosen once,
// and the rows a few ahead are prefetched: scattered rows of a large
// variable are cache misses, which otherwise dominate a push of short rows.
void ApplyOptimizerToRows(const OptimizerConfig& config, int64_t step,
                          int64_t width, absl::Span<const float> grads,
                          absl::Span<const int64_t> offsets, float* params,
                          absl::Span<float* const> slots);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_OPTIMIZER_OPTIMIZER_H_
