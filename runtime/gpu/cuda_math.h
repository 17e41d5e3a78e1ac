#ifndef DISTRT_RUNTIME_GPU_CUDA_MATH_H_
#define DISTRT_RUNTIME_GPU_CUDA_MATH_H_

// CudaMath: DeviceMath on one GPU. GEMMs go to cuBLAS, everything else to
// the kernels of cuda_kernels.h; all of it is queued on one stream, so the
// calls run in the order they were made and a result is ready once the
// stream has been synchronised (or a later copy on it has finished). A
// Status that is not OK names the CUDA or cuBLAS call that failed; as
// launches are asynchronous, it can also report an earlier call's fault.
//
// Semantics beyond DeviceMath's are CpuMath's (see
// runtime/kernels/cpu_math.h), so the two agree up to rounding;
// SparseScatterAdd's sums may differ in the last bits from run to run
// (atomics). Gemm sizes must also fit in an int (cuBLAS's
// limit), or it returns INVALID_ARGUMENT.
//
// Like any DeviceMath, a CudaMath is used by one thread at a time; that
// thread must have the stream's device current (cudaSetDevice).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/kernels/device_math.h"

namespace distrt {

class CudaMath final : public DeviceMath {
 public:
  // `stream` and `cublas` are borrowed and must outlive this object.
  // `cublas` must already be bound to `stream` (cublasSetStream) and use
  // CUBLAS_POINTER_MODE_HOST (the default), since alpha and beta are passed
  // from the host. Its math mode decides GEMM precision: the default is full
  // FP32; a TF32 mode rounds the inputs to 10 mantissa bits for speed.
  CudaMath(cudaStream_t stream, cublasHandle_t cublas)
      : stream_(stream), cublas_(cublas) {}

  CudaMath(const CudaMath&) = delete;
  CudaMath& operator=(const CudaMath&) = delete;

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

 private:
  // Constant after construction; borrowed.
  cudaStream_t const stream_;
  cublasHandle_t const cublas_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_GPU_CUDA_MATH_H_
