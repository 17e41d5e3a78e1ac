#ifndef DISTRT_RUNTIME_GPU_CUDA_KERNELS_H_
#define DISTRT_RUNTIME_GPU_CUDA_KERNELS_H_

// The CUDA kernels behind CudaMath's non-GEMM operations, behind a plain C++
// interface so that callers need not be compiled by nvcc. Each Launch*
// queues one kernel on `stream` (on the current device) and returns
// cudaGetLastError() after the launch, so a bad launch, or an earlier
// asynchronous error still pending, shows up here; it launches nothing when
// there is nothing to do. Pointers are to device memory; the semantics are
// DeviceMath's (runtime/kernels/device_math.h), with the additions that
// runtime/kernels/cpu_math.h lists.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace distrt::kernels {

// out[i, j] += bias[j].
cudaError_t LaunchAddBias(int64_t rows, int64_t cols, const float* bias,
                          float* out, cudaStream_t stream);

// sums[j] = sum over i of x[i, j] (0 for rows == 0). Deterministic: the same
// input gives the same bits.
cudaError_t LaunchColumnSums(int64_t rows, int64_t cols, const float* x,
                             float* sums, cudaStream_t stream);

// x[i] = max(x[i], 0); NaN stays NaN.
cudaError_t LaunchRelu(int64_t n, float* x, cudaStream_t stream);

// grad[i] = 0 where activation[i] <= 0.
cudaError_t LaunchReluGrad(int64_t n, const float* activation, float* grad,
                           cudaStream_t stream);

// y[i] += alpha * x[i].
cudaError_t LaunchAxpy(int64_t n, float alpha, const float* x, float* y,
                       cudaStream_t stream);

// x[i] *= alpha.
cudaError_t LaunchScale(int64_t n, float alpha, float* x, cudaStream_t stream);

// x[i] = value.
cudaError_t LaunchFill(int64_t n, float value, float* x, cudaStream_t stream);

// Softmax, cross-entropy loss and (when d_logits is not null) its gradient
// per row of `classes` logits; a label outside [0, classes) gives a NaN loss
// and d_logits = probabilities.
cudaError_t LaunchSoftmaxCrossEntropy(int64_t rows, int64_t classes,
                                      const float* logits, const float* labels,
                                      float* probabilities, float* losses,
                                      float* d_logits, cudaStream_t stream);

// Sigmoid, its cross-entropy loss and (when d_logits is not null) gradient.
cudaError_t LaunchSigmoidCrossEntropy(int64_t n, const float* logits,
                                      const float* labels, float* probabilities,
                                      float* losses, float* d_logits,
                                      cudaStream_t stream);

// (p - y)^2 and (when d_predictions is not null) its gradient 2 (p - y).
cudaError_t LaunchSquaredError(int64_t n, const float* predictions,
                               const float* labels, float* losses,
                               float* d_predictions, cudaStream_t stream);

// out[i, :] += sum over the example's features k of values[k] *
// table[rows[k], :] (CSR: `offsets` has num_examples + 1 entries).
cudaError_t LaunchSparseGatherSum(int64_t num_examples, int64_t width,
                                  const int64_t* offsets, const int32_t* rows,
                                  const float* values, const float* table,
                                  float* out, cudaStream_t stream);

// d_table[rows[k], :] += values[k] * d_out[i, :] for every feature k of
// example i. Uses atomicAdd, so where rows repeat the order of the additions,
// and hence the last bits of the sum, can differ from run to run.
cudaError_t LaunchSparseScatterAdd(int64_t num_examples, int64_t width,
                                   const int64_t* offsets, const int32_t* rows,
                                   const float* values, const float* d_out,
                                   float* d_table, cudaStream_t stream);

}  // namespace distrt::kernels

#endif  // DISTRT_RUNTIME_GPU_CUDA_KERNELS_H_
