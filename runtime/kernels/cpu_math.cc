#include "runtime/kernels/cpu_math.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

using RowMajorMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMajorMatrix>;
using MatrixMap = Eigen::Map<RowMajorMatrix>;

// C = alpha * op_a * op_b + beta * C. Assigning (rather than scaling by 0)
// when beta == 0 is what makes C's old contents, NaN included, irrelevant.
template <typename OpA, typename OpB>
void MultiplyInto(const OpA& op_a, const OpB& op_b, float alpha, float beta,
                  MatrixMap& c) {
  if (beta == 0) {
    c.noalias() = alpha * op_a * op_b;
    return;
  }
  if (beta != 1) c *= beta;
  c.noalias() += alpha * op_a * op_b;
}

}  // namespace

absl::Status CpuMath::Gemm(bool transpose_a, bool transpose_b, int64_t m,
                           int64_t n, int64_t k, float alpha, const float* a,
                           const float* b, float beta, float* c) {
  if (m < 0 || n < 0 || k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemm: negative size (m=", m, ", n=", n, ", k=", k, ")"));
  }
  if (m == 0 || n == 0) return absl::OkStatus();
  MatrixMap c_matrix(c, m, n);
  if (k == 0 || alpha == 0) {
    // op(A) op(B) contributes nothing; as in BLAS, A and B are not read.
    if (beta == 0) {
      c_matrix.setZero();
    } else if (beta != 1) {
      c_matrix *= beta;
    }
    return absl::OkStatus();
  }
  // A is stored [m, k], or [k, m] when transposed; likewise B.
  const ConstMatrixMap a_stored(a, transpose_a ? k : m, transpose_a ? m : k);
  const ConstMatrixMap b_stored(b, transpose_b ? n : k, transpose_b ? k : n);
  if (transpose_a && transpose_b) {
    MultiplyInto(a_stored.transpose(), b_stored.transpose(), alpha, beta,
                 c_matrix);
  } else if (transpose_a) {
    MultiplyInto(a_stored.transpose(), b_stored, alpha, beta, c_matrix);
  } else if (transpose_b) {
    MultiplyInto(a_stored, b_stored.transpose(), alpha, beta, c_matrix);
  } else {
    MultiplyInto(a_stored, b_stored, alpha, beta, c_matrix);
  }
  return absl::OkStatus();
}

absl::Status CpuMath::AddBias(int64_t rows, int64_t cols, const float* bias,
                              float* out) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = out + i * cols;
    for (int64_t j = 0; j < cols; ++j) row[j] += bias[j];
  }
  return absl::OkStatus();
}

absl::Status CpuMath::ColumnSums(int64_t rows, int64_t cols, const float* x,
                                 float* sums) {
  // Row by row, so that the inner loop runs along memory.
  std::fill(sums, sums + std::max<int64_t>(cols, 0), 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = x + i * cols;
    for (int64_t j = 0; j < cols; ++j) sums[j] += row[j];
  }
  return absl::OkStatus();
}

absl::Status CpuMath::Relu(int64_t n, float* x) {
  // Not std::max(x, 0): written this way NaN stays NaN, as on GPUs.
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] < 0 ? 0.0f : x[i];
  return absl::OkStatus();
}

absl::Status CpuMath::ReluGrad(int64_t n, const float* activation,
                               float* grad) {
  for (int64_t i = 0; i < n; ++i) {
    if (activation[i] <= 0) grad[i] = 0;
  }
  return absl::OkStatus();
}

absl::Status CpuMath::Axpy(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
  return absl::OkStatus();
}

absl::Status CpuMath::Scale(int64_t n, float alpha, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
  return absl::OkStatus();
}

absl::Status CpuMath::Fill(int64_t n, float value, float* x) {
  std::fill(x, x + std::max<int64_t>(n, 0), value);
  return absl::OkStatus();
}

absl::Status CpuMath::SoftmaxCrossEntropy(int64_t rows, int64_t classes,
                                          const float* logits,
                                          const float* labels,
                                          float* probabilities, float* losses,
                                          float* d_logits) {
  if (classes <= 0) return absl::OkStatus();
  for (int64_t i = 0; i < rows; ++i) {
    const float* z = logits + i * classes;
    float* p = probabilities + i * classes;
    const float max = *std::max_element(z, z + classes);
    // In double: the sum of up to `classes` terms in (0, 1] and its log are
    // where float would lose digits.
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) {
      sum += std::exp(static_cast<double>(z[j]) - max);
    }
    const double log_sum = std::log(sum);
    for (int64_t j = 0; j < classes; ++j) {
      p[j] = static_cast<float>(
          std::exp(static_cast<double>(z[j]) - max - log_sum));
    }
    const double label = labels[i];
    // Compared before the cast: casting NaN or an out-of-range float to an
    // integer is undefined.
    const bool valid = label >= 0 && label < static_cast<double>(classes);
    const int64_t c = valid ? static_cast<int64_t>(label) : -1;
    losses[i] =
        valid ? static_cast<float>(log_sum - (static_cast<double>(z[c]) - max))
              : std::numeric_limits<float>::quiet_NaN();
    if (d_logits != nullptr) {
      float* d = d_logits + i * classes;
      for (int64_t j = 0; j < classes; ++j) d[j] = p[j] - (j == c ? 1 : 0);
    }
  }
  return absl::OkStatus();
}

absl::Status CpuMath::SigmoidCrossEntropy(int64_t n, const float* logits,
                                          const float* labels,
                                          float* probabilities, float* losses,
                                          float* d_logits) {
  for (int64_t i = 0; i < n; ++i) {
    const double z = logits[i];
    const double y = labels[i];
    // exp of a non-positive number only, so nothing overflows.
    const double e = std::exp(-std::fabs(z));
    const double p = z >= 0 ? 1 / (1 + e) : e / (1 + e);
    probabilities[i] = static_cast<float>(p);
    losses[i] = static_cast<float>(std::max(z, 0.0) - z * y + std::log1p(e));
    if (d_logits != nullptr) d_logits[i] = probabilities[i] - labels[i];
  }
  return absl::OkStatus();
}

absl::Status CpuMath::SquaredError(int64_t n, const float* predictions,
                                   const float* labels, float* losses,
                                   float* d_predictions) {
  for (int64_t i = 0; i < n; ++i) {
    const float residual = predictions[i] - labels[i];
    losses[i] = residual * residual;
    if (d_predictions != nullptr) d_predictions[i] = 2.0f * residual;
  }
  return absl::OkStatus();
}

absl::Status CpuMath::SparseGatherSum(int64_t num_examples, int64_t width,
                                      const int64_t* offsets,
                                      const int32_t* rows, const float* values,
                                      const float* table, float* out) {
  if (width <= 0) return absl::OkStatus();
  for (int64_t i = 0; i < num_examples; ++i) {
    float* o = out + i * width;
    for (int64_t f = offsets[i]; f < offsets[i + 1]; ++f) {
      const float v = values[f];
      const float* t = table + static_cast<int64_t>(rows[f]) * width;
      for (int64_t j = 0; j < width; ++j) o[j] += v * t[j];
    }
  }
  return absl::OkStatus();
}

absl::Status CpuMath::SparseScatterAdd(int64_t num_examples, int64_t width,
                                       const int64_t* offsets,
                                       const int32_t* rows, const float* values,
                                       const float* d_out, float* d_table) {
  if (width <= 0) return absl::OkStatus();
  for (int64_t i = 0; i < num_examples; ++i) {
    const float* g = d_out + i * width;
    for (int64_t f = offsets[i]; f < offsets[i + 1]; ++f) {
      const float v = values[f];
      float* t = d_table + static_cast<int64_t>(rows[f]) * width;
      for (int64_t j = 0; j < width; ++j) t[j] += v * g[j];
    }
  }
  return absl::OkStatus();
}

CpuMath* HostMath() {
  static CpuMath* const math = new CpuMath();
  return math;
}

}  // namespace distrt
