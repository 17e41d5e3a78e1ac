#include "runtime/optimizer/optimizer.h"

#include <algorithm>
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

// The update loops index raw pointers, not absl::Span: Debian's Abseil is
// built hardened (ABSL_OPTION_HARDENED in absl/base/options.h), so
// Span::operator[] checks its bound on every element even with NDEBUG, and
// the check keeps GCC from vectorising the loop (with VECTORIZE_COPTS from
// tools/build_defs/copts.bzl, SGD over 5k scattered 64-float rows went from
// 924 to 144 us in a micro-benchmark).

// The length of the row `params` that an update goes over: kFixedWidth
// where the caller knows it at compile time (a constant the loop unrolls
// into, and the update small enough to inline into the caller's loop over
// rows; for 1-wide rows, a linear model's weights, a call per row cost
// more than the update), else the span's own.
template <int64_t kFixedWidth>
size_t RowLength(absl::Span<float> params) {
  if constexpr (kFixedWidth > 0) {
    assert(params.size() == static_cast<size_t>(kFixedWidth));
    return kFixedWidth;
  } else {
    return params.size();
  }
}
template <int64_t kFixedWidth = 0>
void ApplySgd(const OptimizerConfig& c, absl::Span<const float> grad,
              absl::Span<float> params) {
  const float lr = c.learning_rate;
  const float* g = grad.data();
  float* w = params.data();
  const size_t n = RowLength<kFixedWidth>(params);
  for (size_t i = 0; i < n; ++i) w[i] -= lr * g[i];
}

// Keras SGD with momentum: v = momentum * v - lr * g; w += v, or with
// Nesterov w += momentum * v - lr * g.
template <int64_t kFixedWidth = 0>
void ApplyMomentum(const OptimizerConfig& c, absl::Span<const float> grad,
                   absl::Span<float> params, absl::Span<float> velocity) {
  const float lr = c.learning_rate, mu = c.momentum;
  const float* g = grad.data();
  float* w = params.data();
  float* v = velocity.data();
  const size_t n = RowLength<kFixedWidth>(params);
  if (c.nesterov) {
    for (size_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] - lr * g[i];
      w[i] += mu * v[i] - lr * g[i];
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] - lr * g[i];
      w[i] += v[i];
    }
  }
}

// Keras Adagrad: a += g^2; w -= lr * g / (sqrt(a) + epsilon).
template <int64_t kFixedWidth = 0>
void ApplyAdagrad(const OptimizerConfig& c, absl::Span<const float> grad,
                  absl::Span<float> params, absl::Span<float> accumulator) {
  const float lr = c.learning_rate, epsilon = c.epsilon;
  const float* g = grad.data();
  float* w = params.data();
  float* a = accumulator.data();
  const size_t n = RowLength<kFixedWidth>(params);
  for (size_t i = 0; i < n; ++i) {
    a[i] += g[i] * g[i];
    w[i] -= lr * g[i] / (std::sqrt(a[i]) + epsilon);
  }
}

// Keras Adam's step size at `step`, the bias correction folded in (once
// per update, not per row: two pow calls).
float AdamStepSize(const OptimizerConfig& c, int64_t step) {
  const double t = static_cast<double>(step);
  return static_cast<float>(c.learning_rate *
                            std::sqrt(1.0 - std::pow(c.beta2, t)) /
                            (1.0 - std::pow(c.beta1, t)));
}

// Keras Adam with step size `alpha` (AdamStepSize).
template <int64_t kFixedWidth = 0>
void ApplyAdam(const OptimizerConfig& c, float alpha,
               absl::Span<const float> grad, absl::Span<float> params,
               absl::Span<float> first_moment,
               absl::Span<float> second_moment) {
  const float decay1 = 1.0f - c.beta1, decay2 = 1.0f - c.beta2;
  const float epsilon = c.epsilon;
  const float* g = grad.data();
  float* w = params.data();
  float* m = first_moment.data();
  float* v = second_moment.data();
  const size_t n = RowLength<kFixedWidth>(params);
  for (size_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * decay1;
    v[i] += (g[i] * g[i] - v[i]) * decay2;
    w[i] -= alpha * m[i] / (std::sqrt(v[i]) + epsilon);
  }
}

// FTRL-Proximal (McMahan et al. 2013) as TensorFlow's ApplyFtrl computes it.
template <int64_t kFixedWidth = 0>
void ApplyFtrl(const OptimizerConfig& c, absl::Span<const float> grad,
               absl::Span<float> params, absl::Span<float> accumulator,
               absl::Span<float> linear_term) {
  const float lr = c.learning_rate, power = c.learning_rate_power;
  const float l1 = c.l1_regularization, l2 = c.l2_regularization;
  const float* g = grad.data();
  float* w = params.data();
  float* accum = accumulator.data();
  float* linear = linear_term.data();
  const size_t n = RowLength<kFixedWidth>(params);
  for (size_t i = 0; i < n; ++i) {
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

// Calls update(row's gradient, row's offset) for each row, with the row
// kPrefetchAhead rows later (values and each slot, up to its first
// kPrefetchLines cache lines) requested meanwhile: scattered rows of a large
// variable are cache misses, and requesting every line of a short row, not
// only its first, took a quarter off SGD over 64-float rows here; the
// hardware prefetcher follows a long row by itself. kPrefetchAhead: far
// enough ahead to cover a miss (~100 ns) with the rows' work between, near
// enough that the lines are still in cache when their row comes.
template <size_t kPrefetchAhead, typename Update>
void ForEachRow(int64_t width, absl::Span<const float> grads,
                absl::Span<const int64_t> offsets, float* params,
                absl::Span<float* const> slots, Update update) {
  constexpr int64_t kFloatsPerLine = 16;
  constexpr int64_t kPrefetchLines = 4;
  const int64_t prefetch_floats =
      std::min(width, kFloatsPerLine * kPrefetchLines);
  const int64_t* offset = offsets.data();
  const size_t n = offsets.size();
  for (size_t r = 0; r < n; ++r) {
    if (r + kPrefetchAhead < n) {
      const int64_t ahead = offset[r + kPrefetchAhead];
      for (int64_t k = 0; k < prefetch_floats; k += kFloatsPerLine) {
        __builtin_prefetch(params + ahead + k, /*rw=*/1);
        for (float* slot : slots)
          __builtin_prefetch(slot + ahead + k, /*rw=*/1);
      }
    }
    update(absl::MakeConstSpan(grads.data() + r * width, width), offset[r]);
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
      ApplyAdam(config, AdamStepSize(config, step), grad, params, slots[0],
                slots[1]);
      return;
    case OptimizerKind::kFtrl:
      ApplyFtrl(config, grad, params, slots[0], slots[1]);
      return;
  }
}

namespace {

// ApplyOptimizerToRows for rows of kFixedWidth floats (0: of `width`).
template <int64_t kFixedWidth>
void ApplyToRows(const OptimizerConfig& config, int64_t step, int64_t width,
                 absl::Span<const float> grads,
                 absl::Span<const int64_t> offsets, float* params,
                 absl::Span<float* const> slots) {
  const auto row = [width](float* base, int64_t offset) {
    return absl::MakeSpan(base + offset, width);
  };
  // 1-wide rows' updates are a few instructions each: twice as many rows
  // ahead (Adagrad over 7.6k scattered rows of 1M: 57 -> 46 us here).
  constexpr size_t kPrefetchAhead = kFixedWidth == 1 ? 16 : 8;
  const auto each = [&](auto update) {
    ForEachRow<kPrefetchAhead>(width, grads, offsets, params, slots, update);
  };
  switch (config.kind) {
    case OptimizerKind::kSgd:
      each([&](absl::Span<const float> g, int64_t at) {
        ApplySgd<kFixedWidth>(config, g, row(params, at));
      });
      return;
    case OptimizerKind::kMomentum:
      each([&](absl::Span<const float> g, int64_t at) {
        ApplyMomentum<kFixedWidth>(config, g, row(params, at),
                                   row(slots[0], at));
      });
      return;
    case OptimizerKind::kAdagrad:
      each([&](absl::Span<const float> g, int64_t at) {
        ApplyAdagrad<kFixedWidth>(config, g, row(params, at),
                                  row(slots[0], at));
      });
      return;
    case OptimizerKind::kAdam: {
      const float alpha = AdamStepSize(config, step);
      each([&](absl::Span<const float> g, int64_t at) {
        ApplyAdam<kFixedWidth>(config, alpha, g, row(params, at),
                               row(slots[0], at), row(slots[1], at));
      });
      return;
    }
    case OptimizerKind::kFtrl:
      each([&](absl::Span<const float> g, int64_t at) {
        ApplyFtrl<kFixedWidth>(config, g, row(params, at), row(slots[0], at),
                               row(slots[1], at));
      });
      return;
  }
}

}  // namespace

void ApplyOptimizerToRows(const OptimizerConfig& config, int64_t step,
                          int64_t width, absl::Span<const float> grads,
                          absl::Span<const int64_t> offsets, float* params,
                          absl::Span<float* const> slots) {
  assert(grads.size() == offsets.size() * width);
  assert(slots.size() == SlotNames(config.kind).size());
  // Rows of a width known at compile time: 1 (a linear model's weights)
  // and the short embedding rows, 8 and 16 floats, whose loop setup weighed
  // as much as their arithmetic (SGD over 10k scattered rows of 1M, 16
  // floats: 140 -> 100 us here; Adagrad 510 -> 280 us). Rows of 32 and
  // more ran no faster so: their time is the memory's.
  if (width == 1) {
    ApplyToRows<1>(config, step, width, grads, offsets, params, slots);
  } else if (width == 8) {
    ApplyToRows<8>(config, step, width, grads, offsets, params, slots);
  } else if (width == 16) {
    ApplyToRows<16>(config, step, width, grads, offsets, params, slots);
  } else {
    ApplyToRows<0>(config, step, width, grads, offsets, params, slots);
  }
}

}  // namespace distrt
