#include "runtime/gpu/cuda_math.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/gpu/cuda_kernels.h"
#include "runtime/gpu/cuda_status.h"

namespace distrt {

absl::Status CudaMath::Gemm(bool transpose_a, bool transpose_b, int64_t m,
                            int64_t n, int64_t k, float alpha, const float* a,
                            const float* b, float beta, float* c) {
  if (m < 0 || n < 0 || k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemm: negative size (m=", m, ", n=", n, ", k=", k, ")"));
  }
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemm: sizes (m=", m, ", n=", n, ", k=", k,
                     ") exceed cuBLAS's limit of ", kIntMax));
  }
  if (m == 0 || n == 0) return absl::OkStatus();
  if (k == 0 || alpha == 0) {
    // C = beta * C without reading A or B, as CpuMath does; done here rather
    // than trusting every cuBLAS version with these corner cases.
    if (beta == 0) {
      DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchFill(m * n, 0.0f, c, stream_));
    } else if (beta != 1) {
      DISTRT_RETURN_IF_CUDA_ERROR(
          kernels::LaunchScale(m * n, beta, c, stream_));
    }
    return absl::OkStatus();
  }
  // cuBLAS is column-major, and a row-major matrix read column-major is its
  // transpose. So compute C^T = op(B)^T op(A)^T, an [n, m] column-major
  // product, which leaves C row-major. A is stored [m, k] (ld k), or [k, m]
  // (ld m) when transposed; B [k, n] (ld n) or [n, k] (ld k).
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = static_cast<int>(transpose_a ? m : k);
  const int ldb = static_cast<int>(transpose_b ? k : n);
  DISTRT_RETURN_IF_CUBLAS_ERROR(
      cublasSgemm(cublas_, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                  static_cast<int>(k), &alpha, b, ldb, a, lda, &beta, c,
                  static_cast<int>(n)));
  return absl::OkStatus();
}

absl::Status CudaMath::AddBias(int64_t rows, int64_t cols, const float* bias,
                               float* out) {
  DISTRT_RETURN_IF_CUDA_ERROR(
      kernels::LaunchAddBias(rows, cols, bias, out, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::ColumnSums(int64_t rows, int64_t cols, const float* x,
                                  float* sums) {
  DISTRT_RETURN_IF_CUDA_ERROR(
      kernels::LaunchColumnSums(rows, cols, x, sums, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::Relu(int64_t n, float* x) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchRelu(n, x, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::ReluGrad(int64_t n, const float* activation,
                                float* grad) {
  DISTRT_RETURN_IF_CUDA_ERROR(
      kernels::LaunchReluGrad(n, activation, grad, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::Axpy(int64_t n, float alpha, const float* x, float* y) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchAxpy(n, alpha, x, y, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::Scale(int64_t n, float alpha, float* x) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchScale(n, alpha, x, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::Fill(int64_t n, float value, float* x) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchFill(n, value, x, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::SoftmaxCrossEntropy(int64_t rows, int64_t classes,
                                           const float* logits,
                                           const float* labels,
                                           float* probabilities, float* losses,
                                           float* d_logits) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchSoftmaxCrossEntropy(
      rows, classes, logits, labels, probabilities, losses, d_logits, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::SigmoidCrossEntropy(int64_t n, const float* logits,
                                           const float* labels,
                                           float* probabilities, float* losses,
                                           float* d_logits) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchSigmoidCrossEntropy(
      n, logits, labels, probabilities, losses, d_logits, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::SquaredError(int64_t n, const float* predictions,
                                    const float* labels, float* losses,
                                    float* d_predictions) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchSquaredError(
      n, predictions, labels, losses, d_predictions, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::SparseGatherSum(int64_t num_examples, int64_t width,
                                       const int64_t* offsets,
                                       const int32_t* rows, const float* values,
                                       const float* table, float* out) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchSparseGatherSum(
      num_examples, width, offsets, rows, values, table, out, stream_));
  return absl::OkStatus();
}

absl::Status CudaMath::SparseScatterAdd(int64_t num_examples, int64_t width,
                                        const int64_t* offsets,
                                        const int32_t* rows,
                                        const float* values, const float* d_out,
                                        float* d_table) {
  DISTRT_RETURN_IF_CUDA_ERROR(kernels::LaunchSparseScatterAdd(
      num_examples, width, offsets, rows, values, d_out, d_table, stream_));
  return absl::OkStatus();
}

}  // namespace distrt
