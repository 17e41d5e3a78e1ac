#include "runtime/kernels/cpu_math.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/kernels/random_vector.h"

namespace distrt {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// |actual - expected| <= tolerance, relative to |expected| where that is
// above 1.
void ExpectAllNear(const std::vector<float>& actual,
                   const std::vector<double>& expected,
                   double tolerance = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i],
                tolerance * std::max(1.0, std::fabs(expected[i])))
        << "at " << i;
  }
}

std::vector<double> ToDouble(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// C = alpha op(A) op(B) + beta C, in double; beta == 0 ignores C.
std::vector<double> ReferenceGemm(bool transpose_a, bool transpose_b, int64_t m,
                                  int64_t n, int64_t k, float alpha,
                                  const std::vector<float>& a,
                                  const std::vector<float>& b, float beta,
                                  const std::vector<float>& c) {
  std::vector<double> out(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double a_ip = transpose_a ? a[p * m + i] : a[i * k + p];
        const double b_pj = transpose_b ? b[j * k + p] : b[p * n + j];
        sum += a_ip * b_pj;
      }
      out[i * n + j] =
          alpha * sum + (beta == 0 ? 0.0 : double{beta} * c[i * n + j]);
    }
  }
  return out;
}

struct GemmShape {
  int64_t m, n, k;
};

// Small shapes take Eigen's coefficient-wise product, larger ones its
// blocked GEMM; both must follow the contract.
const GemmShape kGemmShapes[] = {{5, 7, 3}, {1, 1, 1}, {33, 17, 40}};

TEST(CpuMathTest, GemmMatchesReferenceForAllTransposes) {
  std::mt19937 rng(1);
  CpuMath math;
  for (const GemmShape& s : kGemmShapes) {
    for (bool transpose_a : {false, true}) {
      for (bool transpose_b : {false, true}) {
        for (float beta : {0.0f, 1.0f, -0.5f}) {
          SCOPED_TRACE(testing::Message()
                       << s.m << "x" << s.n << "x" << s.k
                       << " transpose_a=" << transpose_a
                       << " transpose_b=" << transpose_b << " beta=" << beta);
          const std::vector<float> a = RandomVector(s.m * s.k, rng);
          const std::vector<float> b = RandomVector(s.k * s.n, rng);
          std::vector<float> c = RandomVector(s.m * s.n, rng);
          const std::vector<double> expected = ReferenceGemm(
              transpose_a, transpose_b, s.m, s.n, s.k, 1.5f, a, b, beta, c);
          ASSERT_TRUE(math.Gemm(transpose_a, transpose_b, s.m, s.n, s.k, 1.5f,
                                a.data(), b.data(), beta, c.data())
                          .ok());
          ExpectAllNear(c, expected);
        }
      }
    }
  }
}

TEST(CpuMathTest, GemmWithBetaZeroOverwritesNan) {
  std::mt19937 rng(2);
  CpuMath math;
  for (const GemmShape& s : kGemmShapes) {
    SCOPED_TRACE(testing::Message() << s.m << "x" << s.n << "x" << s.k);
    const std::vector<float> a = RandomVector(s.m * s.k, rng);
    const std::vector<float> b = RandomVector(s.k * s.n, rng);
    std::vector<float> c(s.m * s.n, kNan);
    const std::vector<double> expected =
        ReferenceGemm(false, false, s.m, s.n, s.k, 1.0f, a, b, 0.0f, c);
    ASSERT_TRUE(math.Gemm(false, false, s.m, s.n, s.k, 1.0f, a.data(), b.data(),
                          0.0f, c.data())
                    .ok());
    ExpectAllNear(c, expected);
  }
}

TEST(CpuMathTest, GemmWithKZeroScalesC) {
  CpuMath math;
  std::vector<float> c = {1, -2, 3, 4, 5, 6};
  ASSERT_TRUE(
      math.Gemm(false, false, 2, 3, 0, 1.0f, nullptr, nullptr, 2.0f, c.data())
          .ok());
  EXPECT_EQ(c, (std::vector<float>{2, -4, 6, 8, 10, 12}));

  std::vector<float> garbage(6, kNan);
  ASSERT_TRUE(math.Gemm(true, true, 2, 3, 0, 1.0f, nullptr, nullptr, 0.0f,
                        garbage.data())
                  .ok());
  EXPECT_EQ(garbage, std::vector<float>(6, 0.0f));
}

TEST(CpuMathTest, GemmWithAlphaZeroDoesNotReadAOrB) {
  CpuMath math;
  const std::vector<float> a(4, kNan), b(4, kNan);
  std::vector<float> c = {1, 2, 3, 4};
  ASSERT_TRUE(
      math.Gemm(false, false, 2, 2, 2, 0.0f, a.data(), b.data(), 3.0f, c.data())
          .ok());
  EXPECT_EQ(c, (std::vector<float>{3, 6, 9, 12}));
}

TEST(CpuMathTest, GemmWithEmptyOutputTouchesNothing) {
  CpuMath math;
  EXPECT_TRUE(
      math.Gemm(false, false, 0, 3, 4, 1.0f, nullptr, nullptr, 0.0f, nullptr)
          .ok());
  EXPECT_TRUE(
      math.Gemm(true, false, 3, 0, 4, 1.0f, nullptr, nullptr, 0.0f, nullptr)
          .ok());
}

TEST(CpuMathTest, GemmRefusesNegativeSizes) {
  CpuMath math;
  const absl::Status status =
      math.Gemm(false, false, 2, -1, 3, 1.0f, nullptr, nullptr, 0.0f, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "Gemm: negative size (m=2, n=-1, k=3)");
}

TEST(CpuMathTest, AddBiasAndColumnSumsMatchReference) {
  std::mt19937 rng(3);
  CpuMath math;
  const int64_t rows = 13, cols = 9;
  const std::vector<float> bias = RandomVector(cols, rng);
  std::vector<float> x = RandomVector(rows * cols, rng);
  std::vector<double> expected = ToDouble(x);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) expected[i * cols + j] += bias[j];
  }
  ASSERT_TRUE(math.AddBias(rows, cols, bias.data(), x.data()).ok());
  ExpectAllNear(x, expected);

  std::vector<double> expected_sums(cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) expected_sums[j] += x[i * cols + j];
  }
  std::vector<float> sums(cols, kNan);
  ASSERT_TRUE(math.ColumnSums(rows, cols, x.data(), sums.data()).ok());
  ExpectAllNear(sums, expected_sums);
}

TEST(CpuMathTest, ColumnSumsOfNoRowsAreZero) {
  CpuMath math;
  std::vector<float> sums(3, kNan);
  ASSERT_TRUE(math.ColumnSums(0, 3, nullptr, sums.data()).ok());
  EXPECT_EQ(sums, std::vector<float>(3, 0.0f));
}

TEST(CpuMathTest, ReluAndReluGrad) {
  CpuMath math;
  std::vector<float> x = {-2, -0.0f, 0, 0.5f, 3, kNan};
  ASSERT_TRUE(math.Relu(x.size(), x.data()).ok());
  EXPECT_EQ(x[0], 0);
  EXPECT_EQ(x[1], 0);
  EXPECT_EQ(x[2], 0);
  EXPECT_EQ(x[3], 0.5f);
  EXPECT_EQ(x[4], 3);
  EXPECT_TRUE(std::isnan(x[5]));

  const std::vector<float> activation = {-1, 0, 0.25f, 2, kNan};
  std::vector<float> grad = {5, 6, 7, 8, 9};
  ASSERT_TRUE(math.ReluGrad(grad.size(), activation.data(), grad.data()).ok());
  EXPECT_EQ(grad, (std::vector<float>{0, 0, 7, 8, 9}));
}

TEST(CpuMathTest, AxpyScaleAndFill) {
  std::mt19937 rng(4);
  CpuMath math;
  const int64_t n = 37;
  const std::vector<float> x = RandomVector(n, rng);
  std::vector<float> y = RandomVector(n, rng);
  std::vector<double> expected(n);
  for (int64_t i = 0; i < n; ++i) expected[i] = y[i] + 0.75 * x[i];
  ASSERT_TRUE(math.Axpy(n, 0.75f, x.data(), y.data()).ok());
  ExpectAllNear(y, expected);

  for (int64_t i = 0; i < n; ++i) expected[i] = -3.0 * y[i];
  ASSERT_TRUE(math.Scale(n, -3.0f, y.data()).ok());
  ExpectAllNear(y, expected);

  ASSERT_TRUE(math.Fill(n, 2.5f, y.data()).ok());
  EXPECT_EQ(y, std::vector<float>(n, 2.5f));
}

// Every operation with nothing to do: sizes 0 and null pointers.
TEST(CpuMathTest, EmptySizesDoNothing) {
  CpuMath math;
  EXPECT_TRUE(math.AddBias(0, 4, nullptr, nullptr).ok());
  EXPECT_TRUE(math.AddBias(4, 0, nullptr, nullptr).ok());
  EXPECT_TRUE(math.ColumnSums(0, 0, nullptr, nullptr).ok());
  EXPECT_TRUE(math.ColumnSums(4, 0, nullptr, nullptr).ok());
  EXPECT_TRUE(math.Relu(0, nullptr).ok());
  EXPECT_TRUE(math.ReluGrad(0, nullptr, nullptr).ok());
  EXPECT_TRUE(math.Axpy(0, 1.0f, nullptr, nullptr).ok());
  EXPECT_TRUE(math.Scale(0, 1.0f, nullptr).ok());
  EXPECT_TRUE(math.Fill(0, 1.0f, nullptr).ok());
  EXPECT_TRUE(math.SoftmaxCrossEntropy(0, 3, nullptr, nullptr, nullptr, nullptr,
                                       nullptr)
                  .ok());
  EXPECT_TRUE(math.SoftmaxCrossEntropy(3, 0, nullptr, nullptr, nullptr, nullptr,
                                       nullptr)
                  .ok());
  EXPECT_TRUE(
      math.SigmoidCrossEntropy(0, nullptr, nullptr, nullptr, nullptr, nullptr)
          .ok());
  const int64_t offsets[] = {0};
  EXPECT_TRUE(
      math.SparseGatherSum(0, 4, offsets, nullptr, nullptr, nullptr, nullptr)
          .ok());
  EXPECT_TRUE(
      math.SparseScatterAdd(0, 4, offsets, nullptr, nullptr, nullptr, nullptr)
          .ok());
}

struct SoftmaxReference {
  std::vector<double> probabilities, losses, d_logits;
};

SoftmaxReference ReferenceSoftmax(int64_t rows, int64_t classes,
                                  const std::vector<float>& logits,
                                  const std::vector<float>& labels) {
  SoftmaxReference r;
  for (int64_t i = 0; i < rows; ++i) {
    double max = logits[i * classes];
    for (int64_t j = 0; j < classes; ++j) {
      max = std::max<double>(max, logits[i * classes + j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) {
      sum += std::exp(logits[i * classes + j] - max);
    }
    const int64_t label = static_cast<int64_t>(labels[i]);
    for (int64_t j = 0; j < classes; ++j) {
      const double p = std::exp(logits[i * classes + j] - max) / sum;
      r.probabilities.push_back(p);
      r.d_logits.push_back(p - (j == label ? 1 : 0));
    }
    r.losses.push_back(std::log(sum) + max - logits[i * classes + label]);
  }
  return r;
}

TEST(CpuMathTest, SoftmaxCrossEntropyMatchesReference) {
  std::mt19937 rng(5);
  CpuMath math;
  const int64_t rows = 7, classes = 5;
  const std::vector<float> logits = RandomVector(rows * classes, rng, 5.0f);
  std::vector<float> labels(rows);
  for (int64_t i = 0; i < rows; ++i)
    labels[i] = static_cast<float>(i % classes);
  const SoftmaxReference expected =
      ReferenceSoftmax(rows, classes, logits, labels);

  std::vector<float> probabilities(rows * classes), losses(rows),
      d_logits(rows * classes);
  ASSERT_TRUE(math.SoftmaxCrossEntropy(rows, classes, logits.data(),
                                       labels.data(), probabilities.data(),
                                       losses.data(), d_logits.data())
                  .ok());
  ExpectAllNear(probabilities, expected.probabilities);
  ExpectAllNear(losses, expected.losses);
  ExpectAllNear(d_logits, expected.d_logits);

  // Without d_logits the rest is the same.
  std::vector<float> probabilities2(rows * classes), losses2(rows);
  ASSERT_TRUE(math.SoftmaxCrossEntropy(rows, classes, logits.data(),
                                       labels.data(), probabilities2.data(),
                                       losses2.data(), nullptr)
                  .ok());
  EXPECT_EQ(probabilities2, probabilities);
  EXPECT_EQ(losses2, losses);
}

TEST(CpuMathTest, SoftmaxCrossEntropyOfEqualLogits) {
  CpuMath math;
  const std::vector<float> logits = {0, 0};
  const std::vector<float> labels = {1};
  std::vector<float> probabilities(2), losses(1), d_logits(2);
  ASSERT_TRUE(math.SoftmaxCrossEntropy(1, 2, logits.data(), labels.data(),
                                       probabilities.data(), losses.data(),
                                       d_logits.data())
                  .ok());
  EXPECT_FLOAT_EQ(probabilities[0], 0.5f);
  EXPECT_FLOAT_EQ(probabilities[1], 0.5f);
  EXPECT_FLOAT_EQ(losses[0], std::log(2.0f));
  EXPECT_FLOAT_EQ(d_logits[0], 0.5f);
  EXPECT_FLOAT_EQ(d_logits[1], -0.5f);
}

TEST(CpuMathTest, SoftmaxCrossEntropyOfHugeLogitsIsFinite) {
  CpuMath math;
  const std::vector<float> logits = {1000,  -1000, 0,      // label 1
                                     1000,  1000,  1000,   // label 0
                                     -1000, -1000, -999};  // label 2
  const std::vector<float> labels = {1, 0, 2};
  std::vector<float> probabilities(9), losses(3), d_logits(9);
  ASSERT_TRUE(math.SoftmaxCrossEntropy(3, 3, logits.data(), labels.data(),
                                       probabilities.data(), losses.data(),
                                       d_logits.data())
                  .ok());
  EXPECT_FLOAT_EQ(losses[0], 2000.0f);
  EXPECT_FLOAT_EQ(losses[1], std::log(3.0f));
  EXPECT_NEAR(losses[2], std::log1p(2 * std::exp(-1.0)), 1e-6);
  for (float x : probabilities) EXPECT_TRUE(std::isfinite(x));
  for (float x : d_logits) EXPECT_TRUE(std::isfinite(x));
  EXPECT_FLOAT_EQ(probabilities[0], 1.0f);
  EXPECT_EQ(probabilities[1], 0.0f);
  EXPECT_FLOAT_EQ(d_logits[1], -1.0f);
}

TEST(CpuMathTest, SoftmaxCrossEntropyWithBadLabelGivesNanLoss) {
  CpuMath math;
  const std::vector<float> logits(9, 0.0f);
  const std::vector<float> labels = {-1, 3, kNan};
  std::vector<float> probabilities(9), losses(3), d_logits(9);
  ASSERT_TRUE(math.SoftmaxCrossEntropy(3, 3, logits.data(), labels.data(),
                                       probabilities.data(), losses.data(),
                                       d_logits.data())
                  .ok());
  for (float loss : losses) EXPECT_TRUE(std::isnan(loss));
  EXPECT_EQ(d_logits, probabilities);
}

TEST(CpuMathTest, SigmoidCrossEntropyMatchesReference) {
  std::mt19937 rng(6);
  CpuMath math;
  const int64_t n = 50;
  const std::vector<float> logits = RandomVector(n, rng, 8.0f);
  std::vector<float> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<float>(i % 2);
  std::vector<double> expected_p(n), expected_loss(n), expected_d(n);
  for (int64_t i = 0; i < n; ++i) {
    const double p = 1 / (1 + std::exp(-double{logits[i]}));
    expected_p[i] = p;
    expected_loss[i] =
        -(labels[i] * std::log(p) + (1 - labels[i]) * std::log(1 - p));
    expected_d[i] = p - labels[i];
  }
  std::vector<float> probabilities(n), losses(n), d_logits(n);
  ASSERT_TRUE(math.SigmoidCrossEntropy(n, logits.data(), labels.data(),
                                       probabilities.data(), losses.data(),
                                       d_logits.data())
                  .ok());
  ExpectAllNear(probabilities, expected_p);
  ExpectAllNear(losses, expected_loss);
  ExpectAllNear(d_logits, expected_d);
  EXPECT_TRUE(math.SigmoidCrossEntropy(n, logits.data(), labels.data(),
                                       probabilities.data(), losses.data(),
                                       nullptr)
                  .ok());
}

TEST(CpuMathTest, SquaredErrorMatchesReference) {
  CpuMath math;
  const std::vector<float> predictions = {1.5f, -2.0f, 0.0f, 3.0f};
  const std::vector<float> labels = {1.0f, 1.0f, 0.0f, -1.0f};
  std::vector<float> losses(4), d(4);
  ASSERT_TRUE(math.SquaredError(4, predictions.data(), labels.data(),
                                losses.data(), d.data())
                  .ok());
  ExpectAllNear(losses, std::vector<double>{0.25, 9, 0, 16});
  ExpectAllNear(d, std::vector<double>{1, -6, 0, 8});
  EXPECT_TRUE(math.SquaredError(4, predictions.data(), labels.data(),
                                losses.data(), nullptr)
                  .ok());
}

TEST(CpuMathTest, SigmoidCrossEntropyOfHugeLogitsIsFinite) {
  CpuMath math;
  const std::vector<float> logits = {1000, -1000, 1000, -1000};
  const std::vector<float> labels = {1, 1, 0, 0};
  std::vector<float> probabilities(4), losses(4), d_logits(4);
  ASSERT_TRUE(math.SigmoidCrossEntropy(4, logits.data(), labels.data(),
                                       probabilities.data(), losses.data(),
                                       d_logits.data())
                  .ok());
  EXPECT_EQ(probabilities, (std::vector<float>{1, 0, 1, 0}));
  EXPECT_EQ(losses, (std::vector<float>{0, 1000, 1000, 0}));
  EXPECT_EQ(d_logits, (std::vector<float>{0, -1, 1, 0}));
}

// A CSR batch: example i has features [offsets[i], offsets[i + 1]).
struct SparseBatch {
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> rows;
  std::vector<float> values;
  int64_t num_examples() const { return offsets.size() - 1; }
};

SparseBatch RandomSparseBatch(int64_t num_examples, int max_features,
                              int32_t table_rows, std::mt19937& rng) {
  std::uniform_int_distribution<int> features(0, max_features);
  // Few distinct rows, so that rows repeat within and across examples.
  std::uniform_int_distribution<int32_t> row(0, table_rows - 1);
  std::uniform_real_distribution<float> value(-2, 2);
  SparseBatch batch;
  for (int64_t i = 0; i < num_examples; ++i) {
    const int count = features(rng);
    for (int f = 0; f < count; ++f) {
      batch.rows.push_back(row(rng));
      batch.values.push_back(value(rng));
    }
    batch.offsets.push_back(batch.rows.size());
  }
  return batch;
}

TEST(CpuMathTest, SparseGatherSumOfHandMadeBatch) {
  CpuMath math;
  const std::vector<float> table = {1, 2,   // row 0
                                    3, 4,   // row 1
                                    5, 6,   // row 2
                                    7, 8};  // row 3
  SparseBatch batch;
  batch.offsets = {0, 2, 2, 4};  // the middle example has no features
  batch.rows = {1, 3, 1, 1};
  batch.values = {2, -1, 0.5f, 0.5f};
  std::vector<float> out(6, 1.0f);  // accumulated into
  ASSERT_TRUE(math.SparseGatherSum(3, 2, batch.offsets.data(),
                                   batch.rows.data(), batch.values.data(),
                                   table.data(), out.data())
                  .ok());
  EXPECT_EQ(out,
            (std::vector<float>{1 + 6 - 7, 1 + 8 - 8, 1, 1, 1 + 3, 1 + 4}));
}

TEST(CpuMathTest, SparseGatherSumAndScatterAddMatchReference) {
  std::mt19937 rng(7);
  CpuMath math;
  const int64_t width = 5;
  const int32_t table_rows = 6;
  const SparseBatch batch = RandomSparseBatch(20, 6, table_rows, rng);
  const int64_t examples = batch.num_examples();
  const std::vector<float> table = RandomVector(table_rows * width, rng);
  std::vector<float> out = RandomVector(examples * width, rng);
  std::vector<double> expected_out = ToDouble(out);
  for (int64_t i = 0; i < examples; ++i) {
    for (int64_t f = batch.offsets[i]; f < batch.offsets[i + 1]; ++f) {
      for (int64_t j = 0; j < width; ++j) {
        expected_out[i * width + j] +=
            double{batch.values[f]} * table[batch.rows[f] * width + j];
      }
    }
  }
  ASSERT_TRUE(math.SparseGatherSum(examples, width, batch.offsets.data(),
                                   batch.rows.data(), batch.values.data(),
                                   table.data(), out.data())
                  .ok());
  ExpectAllNear(out, expected_out);

  const std::vector<float> d_out = RandomVector(examples * width, rng);
  std::vector<float> d_table = RandomVector(table_rows * width, rng);
  std::vector<double> expected_d_table = ToDouble(d_table);
  for (int64_t i = 0; i < examples; ++i) {
    for (int64_t f = batch.offsets[i]; f < batch.offsets[i + 1]; ++f) {
      for (int64_t j = 0; j < width; ++j) {
        expected_d_table[batch.rows[f] * width + j] +=
            double{batch.values[f]} * d_out[i * width + j];
      }
    }
  }
  ASSERT_TRUE(math.SparseScatterAdd(examples, width, batch.offsets.data(),
                                    batch.rows.data(), batch.values.data(),
                                    d_out.data(), d_table.data())
                  .ok());
  ExpectAllNear(d_table, expected_d_table);
}

TEST(CpuMathTest, SparseScatterAddAccumulatesDuplicateRows) {
  CpuMath math;
  SparseBatch batch;
  batch.offsets = {0, 2, 3};
  batch.rows = {1, 1, 1};  // twice in example 0, once in example 1
  batch.values = {1, 2, -1};
  const std::vector<float> d_out = {10, 20,     // example 0
                                    100, 200};  // example 1
  std::vector<float> d_table = {0, 0, 1, 1};
  ASSERT_TRUE(math.SparseScatterAdd(2, 2, batch.offsets.data(),
                                    batch.rows.data(), batch.values.data(),
                                    d_out.data(), d_table.data())
                  .ok());
  EXPECT_EQ(d_table, (std::vector<float>{0, 0, 1 + 30 - 100, 1 + 60 - 200}));
}

TEST(CpuMathTest, HostMathIsOneInstance) {
  ASSERT_NE(HostMath(), nullptr);
  EXPECT_EQ(HostMath(), HostMath());
}

}  // namespace
}  // namespace distrt
