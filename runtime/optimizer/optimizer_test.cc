#include "runtime/optimizer/optimizer.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace distrt {
namespace {

// Gradients for three steps of a three-element variable.
const std::vector<std::vector<double>> kGrads = {
    {0.5, -1.0, 2.0}, {0.25, 0.5, -3.0}, {-1.0, 0.0, 1.5}};
const std::vector<double> kInitial = {1.0, -2.0, 0.5};

// Runs ApplyOptimizer over kGrads from kInitial; returns the parameters after
// each step.
std::vector<std::vector<float>> RunThreeSteps(const OptimizerConfig& config) {
  std::vector<float> w(kInitial.begin(), kInitial.end());
  const int num_slots = SlotNames(config.kind).size();
  std::vector<std::vector<float>> slot_data;
  for (int s = 0; s < num_slots; ++s) {
    slot_data.emplace_back(w.size(), SlotInitialValue(config, s));
  }
  std::vector<absl::Span<float>> slots;
  for (auto& d : slot_data) slots.push_back(absl::MakeSpan(d));
  std::vector<std::vector<float>> history;
  for (size_t step = 0; step < kGrads.size(); ++step) {
    std::vector<float> g(kGrads[step].begin(), kGrads[step].end());
    ApplyOptimizer(config, step + 1, g, absl::MakeSpan(w), slots);
    history.push_back(w);
  }
  return history;
}

void ExpectNear(const std::vector<std::vector<float>>& actual,
                const std::vector<std::vector<double>>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t s = 0; s < actual.size(); ++s) {
    for (size_t i = 0; i < actual[s].size(); ++i) {
      EXPECT_NEAR(actual[s][i], expected[s][i],
                  1e-5 * std::max(1.0, std::fabs(expected[s][i])))
          << "step " << s + 1 << " element " << i;
    }
  }
}

TEST(OptimizerTest, SgdKnownNumbers) {
  OptimizerConfig config;
  config.learning_rate = 0.1f;
  std::vector<std::vector<float>> out = RunThreeSteps(config);
  ExpectNear({out[0]}, {{0.95, -1.9, 0.3}});
}

// TF1's MomentumOptimizer formulation (accum = mu*accum + g; w -= lr*accum,
// Nesterov: w -= lr*(g + mu*accum)), equivalent to Keras' for constant lr.
std::vector<std::vector<double>> MomentumReference(double lr, double mu,
                                                   bool nesterov) {
  std::vector<double> w = kInitial, accum(w.size(), 0.0);
  std::vector<std::vector<double>> history;
  for (const auto& g : kGrads) {
    for (size_t i = 0; i < w.size(); ++i) {
      accum[i] = mu * accum[i] + g[i];
      w[i] -= nesterov ? lr * (g[i] + mu * accum[i]) : lr * accum[i];
    }
    history.push_back(w);
  }
  return history;
}

TEST(OptimizerTest, MomentumMatchesReference) {
  for (bool nesterov : {false, true}) {
    OptimizerConfig config;
    config.kind = OptimizerKind::kMomentum;
    config.learning_rate = 0.1f;
    config.momentum = 0.9f;
    config.nesterov = nesterov;
    ExpectNear(RunThreeSteps(config), MomentumReference(0.1, 0.9, nesterov));
  }
}

TEST(OptimizerTest, AdagradMatchesReference) {
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdagrad;
  config.learning_rate = 0.5f;
  std::vector<double> w = kInitial, acc(w.size(), 0.1);
  std::vector<std::vector<double>> expected;
  for (const auto& g : kGrads) {
    for (size_t i = 0; i < w.size(); ++i) {
      acc[i] += g[i] * g[i];
      w[i] -= 0.5 * g[i] / (std::sqrt(acc[i]) + 1e-7);
    }
    expected.push_back(w);
  }
  ExpectNear(RunThreeSteps(config), expected);
}

TEST(OptimizerTest, AdamMatchesReference) {
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdam;
  config.learning_rate = 0.01f;
  std::vector<double> w = kInitial, m(w.size(), 0), v(w.size(), 0);
  std::vector<std::vector<double>> expected;
  for (size_t t = 1; t <= kGrads.size(); ++t) {
    const auto& g = kGrads[t - 1];
    for (size_t i = 0; i < w.size(); ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
      const double m_hat = m[i] / (1 - std::pow(0.9, t));
      const double v_hat = v[i] / (1 - std::pow(0.999, t));
      // Keras puts epsilon on sqrt(v), not on sqrt(v_hat): in terms of the
      // paper's bias-corrected moments it is epsilon / sqrt(1 - beta2^t).
      const double eps_hat = 1e-7 / std::sqrt(1 - std::pow(0.999, t));
      w[i] -= 0.01 * m_hat / (std::sqrt(v_hat) + eps_hat);
    }
    expected.push_back(w);
  }
  ExpectNear(RunThreeSteps(config), expected);
}

TEST(OptimizerTest, AdamFirstStepMovesByTheLearningRate) {
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdam;
  config.learning_rate = 0.01f;
  std::vector<std::vector<float>> out = RunThreeSteps(config);
  for (size_t i = 0; i < kInitial.size(); ++i) {
    EXPECT_NEAR(out[0][i], kInitial[i] - 0.01 * (kGrads[0][i] > 0 ? 1 : -1),
                1e-6);
  }
}

// McMahan et al. (2013), Algorithm 1, per coordinate, with beta = 0 and
// TensorFlow's convention that the L2 term enters as 2 * l2.
std::vector<std::vector<double>> FtrlReference(double alpha, double l1,
                                               double l2) {
  std::vector<double> w = kInitial, n(w.size(), 0.1), z(w.size(), 0.0);
  std::vector<std::vector<double>> history;
  for (const auto& g : kGrads) {
    for (size_t i = 0; i < w.size(); ++i) {
      const double sigma =
          (std::sqrt(n[i] + g[i] * g[i]) - std::sqrt(n[i])) / alpha;
      z[i] += g[i] - sigma * w[i];
      n[i] += g[i] * g[i];
      w[i] = std::fabs(z[i]) <= l1 ? 0.0
                                   : -(z[i] - (z[i] > 0 ? l1 : -l1)) /
                                         (std::sqrt(n[i]) / alpha + 2 * l2);
    }
    history.push_back(w);
  }
  return history;
}

TEST(OptimizerTest, FtrlMatchesReference) {
  for (double l1 : {0.0, 0.3}) {
    for (double l2 : {0.0, 0.2}) {
      OptimizerConfig config;
      config.kind = OptimizerKind::kFtrl;
      config.learning_rate = 0.1f;
      config.l1_regularization = l1;
      config.l2_regularization = l2;
      SCOPED_TRACE(testing::Message() << "l1=" << l1 << " l2=" << l2);
      ExpectNear(RunThreeSteps(config), FtrlReference(0.1, l1, l2));
    }
  }
}

TEST(OptimizerTest, FtrlFirstStepKnownNumber) {
  OptimizerConfig config;
  config.kind = OptimizerKind::kFtrl;
  config.learning_rate = 0.1f;
  std::vector<float> w = {0.0f}, accum = {0.1f}, linear = {0.0f};
  std::vector<absl::Span<float>> slots = {absl::MakeSpan(accum),
                                          absl::MakeSpan(linear)};
  std::vector<float> g = {1.0f};
  ApplyOptimizer(config, 1, g, absl::MakeSpan(w), slots);
  EXPECT_NEAR(w[0], -0.1 / std::sqrt(1.1), 1e-6);
  EXPECT_NEAR(accum[0], 1.1, 1e-6);
  EXPECT_NEAR(linear[0], 1.0, 1e-6);
}

TEST(OptimizerTest, NamesAndValidation) {
  EXPECT_EQ(*ParseOptimizerName("adam"), OptimizerKind::kAdam);
  EXPECT_EQ(ParseOptimizerName("rmsprop").status().message(),
            "unknown optimizer \"rmsprop\" (known: sgd, momentum, adagrad, "
            "adam, ftrl)");
  OptimizerConfig config;
  config.learning_rate = -1;
  EXPECT_EQ(ValidateOptimizerConfig(config).message(),
            "optimizer hyper-parameter learning_rate = -1 is out of range: it "
            "must be positive");
  config = OptimizerConfig{};
  config.kind = OptimizerKind::kAdam;
  config.beta1 = 1.0f;
  EXPECT_EQ(ValidateOptimizerConfig(config).code(),
            absl::StatusCode::kInvalidArgument);
  config = OptimizerConfig{};
  config.kind = OptimizerKind::kFtrl;
  config.initial_accumulator_value = 0;
  EXPECT_EQ(ValidateOptimizerConfig(config).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateOptimizerConfig(OptimizerConfig{}).ok());
}

// The block form gives exactly what one ApplyOptimizer per row gives, for
// every optimizer, with rows in any order and more of them than are
// prefetched ahead.
void ExpectRowsMatchOneCallPerRow(int64_t width) {
  constexpr int64_t kRows = 40;
  // Every other row, from the end backwards.
  std::vector<int64_t> offsets;
  for (int64_t r = kRows - 1; r >= 0; r -= 2) offsets.push_back(r * width);
  std::vector<float> grads(offsets.size() * width);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.1f * (i % 7) - 0.3f;
  for (OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdagrad,
        OptimizerKind::kAdam, OptimizerKind::kFtrl}) {
    OptimizerConfig config;
    config.kind = kind;
    config.learning_rate = 0.05f;
    config.l1_regularization = 0.01f;
    const int num_slots = SlotNames(kind).size();
    // Two copies of the same state: one updated per row, one per block.
    std::vector<float> w_rows(kRows * width), w_block;
    for (size_t i = 0; i < w_rows.size(); ++i) w_rows[i] = 0.01f * i - 0.2f;
    w_block = w_rows;
    std::vector<std::vector<float>> s_rows, s_block;
    for (int s = 0; s < num_slots; ++s) {
      s_rows.emplace_back(w_rows.size(), SlotInitialValue(config, s));
    }
    s_block = s_rows;
    for (int64_t step = 1; step <= 3; ++step) {
      for (size_t r = 0; r < offsets.size(); ++r) {
        std::vector<absl::Span<float>> slots;
        for (auto& d : s_rows) {
          slots.push_back(absl::MakeSpan(d).subspan(offsets[r], width));
        }
        ApplyOptimizer(
            config, step, absl::MakeConstSpan(grads).subspan(r * width, width),
            absl::MakeSpan(w_rows).subspan(offsets[r], width), slots);
      }
      std::vector<float*> slots;
      for (auto& d : s_block) slots.push_back(d.data());
      ApplyOptimizerToRows(config, step, width, grads, offsets, w_block.data(),
                           slots);
    }
    EXPECT_EQ(w_block, w_rows) << OptimizerName(kind) << ", width " << width;
    EXPECT_EQ(s_block, s_rows) << OptimizerName(kind) << ", width " << width;
    EXPECT_NE(w_block[offsets[0]], 0.01f * offsets[0] - 0.2f)
        << OptimizerName(kind) << ", width " << width << ": changed nothing";
  }
}

TEST(OptimizerTest, ApplyOptimizerToRowsMatchesOneCallPerRow) {
  // The widths with loops of their own, and others.
  for (int64_t width : {1, 3, 8, 16, 20}) ExpectRowsMatchOneCallPerRow(width);
}

}  // namespace
}  // namespace distrt
