#ifndef DISTRT_RUNTIME_KERNELS_DEVICE_MATH_H_
#define DISTRT_RUNTIME_KERNELS_DEVICE_MATH_H_

// DeviceMath: the arithmetic the models need, done where a device keeps its
// tensors. CpuMath (cpu_math.h: Eigen, on the calling thread) and CudaMath
// (runtime/gpu/cuda_math.h: cuBLAS and our kernels, queued on the device's
// compute stream) implement it, so one model computes on either kind of
// device.
//
// Every pointer is to memory of the device the math belongs to (host memory
// for CPUs). Matrices are row-major. On GPUs the calls only queue work: a
// result is in memory once the device is synchronised or a later copy on
// the same stream has finished; the Status reports a launch that failed.
// Sizes of 0 are allowed and do nothing (a GEMM with k = 0 writes
// beta * C). An implementation is used by one thread at a time.

#include <cstdint>

#include "absl/status/status.h"

namespace distrt {

class DeviceMath {
 public:
  virtual ~DeviceMath() = default;

  // C = alpha * op(A) * op(B) + beta * C, where op(A) is [m, k], op(B) is
  // [k, n] and C is [m, n]; op(X) is X or, when transpose_x, X transposed
  // (so A is stored [k, m] then).
  virtual absl::Status Gemm(bool transpose_a, bool transpose_b, int64_t m,
                            int64_t n, int64_t k, float alpha, const float* a,
                            const float* b, float beta, float* c) = 0;

  // out[i, j] += bias[j] for the rows x cols matrix `out`.
  virtual absl::Status AddBias(int64_t rows, int64_t cols, const float* bias,
                               float* out) = 0;

  // sums[j] = sum over i of x[i, j] (the gradient of a bias).
  virtual absl::Status ColumnSums(int64_t rows, int64_t cols, const float* x,
                                  float* sums) = 0;

  // x[i] = max(x[i], 0).
  virtual absl::Status Relu(int64_t n, float* x) = 0;

  // grad[i] = 0 where activation[i] <= 0: back through a ReLU whose output
  // was `activation`.
  virtual absl::Status ReluGrad(int64_t n, const float* activation,
                                float* grad) = 0;

  // y[i] += alpha * x[i].
  virtual absl::Status Axpy(int64_t n, float alpha, const float* x,
                            float* y) = 0;

  // x[i] *= alpha.
  virtual absl::Status Scale(int64_t n, float alpha, float* x) = 0;

  // x[i] = value.
  virtual absl::Status Fill(int64_t n, float value, float* x) = 0;

  // Per example i (a row of `classes` logits) and its label (a class index
  // stored as a float, in [0, classes)): probabilities[i, :] =
  // softmax(logits[i, :]), losses[i] = -log probabilities[i, label], and,
  // when d_logits is not null, d_logits[i, :] = probabilities[i, :] -
  // one_hot(label). Stable for any logits (log-sum-exp after subtracting
  // the row's maximum).
  virtual absl::Status SoftmaxCrossEntropy(int64_t rows, int64_t classes,
                                           const float* logits,
                                           const float* labels,
                                           float* probabilities, float* losses,
                                           float* d_logits) = 0;

  // Per example i with a logit and a 0/1 label: probabilities[i] =
  // sigmoid(logits[i]), losses[i] = max(z, 0) - z y + log1p(exp(-|z|)),
  // and, when d_logits is not null, d_logits[i] = probabilities[i] - y.
  virtual absl::Status SigmoidCrossEntropy(int64_t n, const float* logits,
                                           const float* labels,
                                           float* probabilities, float* losses,
                                           float* d_logits) = 0;

  // Per example i with a prediction p and a real label y: losses[i] =
  // (p - y)^2 and, when d_predictions is not null, d_predictions[i] =
  // 2 (p - y) (the squared error of linear regression).
  virtual absl::Status SquaredError(int64_t n, const float* predictions,
                                    const float* labels, float* losses,
                                    float* d_predictions) = 0;

  // The embedding-bag forward pass over a sparse batch in CSR form: for
  // each example i, out[i, :] (width floats) += the sum over k in
  // [offsets[i], offsets[i + 1]) of values[k] * table[rows[k], :].
  // `offsets` has num_examples + 1 entries; `rows` index the table.
  virtual absl::Status SparseGatherSum(int64_t num_examples, int64_t width,
                                       const int64_t* offsets,
                                       const int32_t* rows, const float* values,
                                       const float* table, float* out) = 0;

  // Its gradient: d_table[rows[k], :] += values[k] * d_out[i, :] for every k
  // of example i (a scatter-add; rows used by several features accumulate).
  virtual absl::Status SparseScatterAdd(int64_t num_examples, int64_t width,
                                        const int64_t* offsets,
                                        const int32_t* rows,
                                        const float* values, const float* d_out,
                                        float* d_table) = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_KERNELS_DEVICE_MATH_H_
