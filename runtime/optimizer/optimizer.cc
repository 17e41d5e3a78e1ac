#include "runtime/optimizer/optimizer.h"

#include <cassert>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

absl::Status OutOfRange(absl::string_view name, float value,
                        absl::string_view allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer hyper-parameter ", name, " = ", value,
                   " is out of range: it must be ", allowed));
}

void ApplySgd(const OptimizerConfig& c, absl::Span<const float> g,
              absl::Span<float> w) {
  const float lr = c.learning_rate;
  for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];
}

// Keras SGD with momentum: v = momentum * v - lr * g; w += v, or with
// Nesterov w += momentum * v - lr * g.
void ApplyMomentum(const OptimizerConfig& c, absl::Span<const float> g,
                   absl::Span<float> w, absl::Span<float> v) {
  const float lr = c.learning_rate, mu = c.momentum;
  for (size_t i = 0; i < w.size(); ++i) {
    v[i] = mu * v[i] - lr * g[i];
    w[i] += c.nesterov ? mu * v[i] - lr * g[i] : v[i];
  }
}

// Keras Adagrad: a += g^2; w -= lr * g / (sqrt(a) + epsilon).
void ApplyAdagrad(const OptimizerConfig& c, absl::Span<const float> g,
                  absl::Span<float> w, absl::Span<float> a) {
  for (size_t i = 0; i < w.size(); ++i) {
    a[i] += g[i] * g[i];
    w[i] -= c.learning_rate * g[i] / (std::sqrt(a[i]) + c.epsilon);
  }
}

// Keras Adam: bias correction folded into the step size.
void ApplyAdam(const OptimizerConfig& c, int64_t step,
               absl::Span<const float> g, absl::Span<float> w,
               absl::Span<float> m, absl::Span<float> v) {
  const double t = static_cast<double>(step);
  const float alpha = static_cast<float>(c.learning_rate *
                                         std::sqrt(1.0 - std::pow(c.beta2, t)) /
                                         (1.0 - std::pow(c.beta1, t)));
  for (size_t i = 0; i < w.size(); ++i) {
    m[i] += (g[i] - m[i]) * (1.0f - c.beta1);
    v[i] += (g[i] * g[i] - v[i]) * (1.0f - c.beta2);
    w[i] -= alpha * m[i] / (std::sqrt(v[i]) + c.epsilon);
  }
}

// FTRL-Proximal (McMahan et al. 2013) as TensorFlow's ApplyFtrl computes it.
void ApplyFtrl(const OptimizerConfig& c, absl::Span<const float> g,
               absl::Span<float> w, absl::Span<float> accum,
               absl::Span<float> linear) {
  const float lr = c.learning_rate, power = c.learning_rate_power;
  const float l1 = c.l1_regularization, l2 = c.l2_regularization;
  for (size_t i = 0; i < w.size(); ++i) {
    const float new_accum = accum[i] + g[i] * g[i];
    const float sigma =
        (std::pow(new_accum, -power) - std::pow(accum[i], -power)) / lr;
    linear[i] += g[i] - sigma * w[i];
    const float quadratic = std::pow(new_accum, -power) / lr + 2.0f * l2;
    w[i] = std::fabs(linear[i]) > l1
               ? (std::copysign(l1, linear[i]) - linear[i]) / quadratic
               : 0.0f;
    accum[i] = new_accum;
  }
}

}  // namespace

absl::string_view OptimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kMomentum:
      return "momentum";
    case OptimizerKind::kAdagrad:
      return "adagrad";
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kFtrl:
      return "ftrl";
  }
  return "unknown";
}

absl::StatusOr<OptimizerKind> ParseOptimizerName(absl::string_view name) {
  for (OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdagrad,
        OptimizerKind::kAdam, OptimizerKind::kFtrl}) {
    if (name == OptimizerName(kind)) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer \"", name,
                   "\" (known: sgd, momentum, adagrad, adam, ftrl)"));
}

absl::Status ValidateOptimizerConfig(const OptimizerConfig& c) {
  if (!(c.learning_rate > 0) || !std::isfinite(c.learning_rate)) {
    return OutOfRange("learning_rate", c.learning_rate, "positive");
  }
  switch (c.kind) {
    case OptimizerKind::kSgd:
      break;
    case OptimizerKind::kMomentum:
      if (!(c.momentum >= 0 && c.momentum < 1)) {
        return OutOfRange("momentum", c.momentum, "in [0, 1)");
      }
      break;
    case OptimizerKind::kAdagrad:
      if (!(c.initial_accumulator_value >= 0)) {
        return OutOfRange("initial_accumulator_value",
                          c.initial_accumulator_value, "non-negative");
      }
      if (!(c.epsilon > 0)) return OutOfRange("epsilon", c.epsilon, "positive");
      break;
    case OptimizerKind::kAdam:
      if (!(c.beta1 >= 0 && c.beta1 < 1)) {
        return OutOfRange("beta1", c.beta1, "in [0, 1)");
      }
      if (!(c.beta2 >= 0 && c.beta2 < 1)) {
        return OutOfRange("beta2", c.beta2, "in [0, 1)");
      }
      if (!(c.epsilon > 0)) return OutOfRange("epsilon", c.epsilon, "positive");
      break;
    case OptimizerKind::kFtrl:
      // The accumulator is raised to a negative power: it must start > 0.
      if (!(c.initial_accumulator_value > 0)) {
        return OutOfRange("initial_accumulator_value",
                          c.initial_accumulator_value, "positive for ftrl");
      }
      if (!(c.learning_rate_power <= 0)) {
        return OutOfRange("learning_rate_power", c.learning_rate_power,
                          "zero or negative");
      }
      if (!(c.l1_regularization >= 0)) {
        return OutOfRange("l1_regularization", c.l1_regularization,
                          "non-negative");
      }
      if (!(c.l2_regularization >= 0)) {
        return OutOfRange("l2_regularization", c.l2_regularization,
                          "non-negative");
      }
      break;
  }
  return absl::OkStatus();
}

std::vector<std::string> SlotNames(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return {};
    case OptimizerKind::kMomentum:
      return {"momentum"};
    case OptimizerKind::kAdagrad:
      return {"accumulator"};
    case OptimizerKind::kAdam:
      return {"m", "v"};
    case OptimizerKind::kFtrl:
      return {"accumulator", "linear"};
  }
  return {};
}

float SlotInitialValue(const OptimizerConfig& config, int slot) {
  const bool accumulator = (config.kind == OptimizerKind::kAdagrad ||
                            config.kind == OptimizerKind::kFtrl) &&
                           slot == 0;
  return accumulator ? config.initial_accumulator_value : 0.0f;
}

void ApplyOptimizer(const OptimizerConfig& config, int64_t step,
                    absl::Span<const float> grad, absl::Span<float> params,
                    absl::Span<const absl::Span<float>> slots) {
  assert(grad.size() == params.size());
  assert(slots.size() == SlotNames(config.kind).size());
  switch (config.kind) {
    case OptimizerKind::kSgd:
      ApplySgd(config, grad, params);
      return;
    case OptimizerKind::kMomentum:
      ApplyMomentum(config, grad, params, slots[0]);
      return;
    case OptimizerKind::kAdagrad:
      ApplyAdagrad(config, grad, params, slots[0]);
      return;
    case OptimizerKind::kAdam:
      ApplyAdam(config, step, grad, params, slots[0], slots[1]);
      return;
    case OptimizerKind::kFtrl:
      ApplyFtrl(config, grad, params, slots[0], slots[1]);
      return;
  }
}

}  // namespace distrt
