#ifndef DISTRT_RUNTIME_KERNELS_CPU_MATH_H_
#define DISTRT_RUNTIME_KERNELS_CPU_MATH_H_

// CpuMath: DeviceMath on host memory, computed on the calling thread (Eigen
// for GEMM, plain loops elsewhere); every call has finished when it returns.
//
// CpuMath holds no state, so unlike DeviceMath in general one instance may be
// used by any number of threads at once; HostMath() is such a shared one.
//
// Beyond the DeviceMath contract (CudaMath behaves the same):
//  - Gemm refuses negative sizes with INVALID_ARGUMENT. With k = 0 or
//    alpha = 0 it does not read A or B, and beta = 0 overwrites C whatever it
//    held (NaN included), as BLAS does.
//  - SoftmaxCrossEntropy with a label outside [0, classes) (or NaN) writes a
//    NaN loss and d_logits = probabilities, instead of reading out of bounds;
//    a label that is not a whole number is truncated.
//  - Relu and ReluGrad let NaN through (NaN stays NaN; ReluGrad keeps the
//    gradient where the activation is NaN), so a diverging model shows it.

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/kernels/device_math.h"

namespace distrt {

class CpuMath final : public DeviceMath {
 public:
  CpuMath() = default;

  absl::Status Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                    int64_t k, float alpha, const float* a, const float* b,
                    float beta, float* c) override;
  absl::Status AddBias(int64_t rows, int64_t cols, const float* bias,
                       float* out) override;
  absl::Status ColumnSums(int64_t rows, int64_t cols, const float* x,
                          float* sums) override;
  absl::Status Relu(int64_t n, float* x) override;
  absl::Status ReluGrad(int64_t n, const float* activation,
                        float* grad) override;
  absl::Status Axpy(int64_t n, float alpha, const float* x, float* y) override;
  absl::Status Scale(int64_t n, float alpha, float* x) override;
  absl::Status Fill(int64_t n, float value, float* x) override;
  absl::Status SoftmaxCrossEntropy(int64_t rows, int64_t classes,
                                   const float* logits, const float* labels,
                                   float* probabilities, float* losses,
                                   float* d_logits) override;
  absl::Status SigmoidCrossEntropy(int64_t n, const float* logits,
                                   const float* labels, float* probabilities,
                                   float* losses, float* d_logits) override;
  absl::Status SquaredError(int64_t n, const float* predictions,
                            const float* labels, float* losses,
                            float* d_predictions) override;
  absl::Status SparseGatherSum(int64_t num_examples, int64_t width,
                               const int64_t* offsets, const int32_t* rows,
                               const float* values, const float* table,
                               float* out) override;
  absl::Status SparseScatterAdd(int64_t num_examples, int64_t width,
                                const int64_t* offsets, const int32_t* rows,
                                const float* values, const float* d_out,
                                float* d_table) override;
};

// A process-wide CpuMath, for host tensors; never destroyed, safe to use from
// any thread (see above).
CpuMath* HostMath();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_KERNELS_CPU_MATH_H_
