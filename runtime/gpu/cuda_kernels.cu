#include <math_constants.h>

#include "runtime/gpu/cuda_kernels.h"

namespace distrt::kernels {
namespace {

constexpr int kThreadsPerBlock = 256;
// Grid-stride loops cover whatever a capped grid does not.
constexpr int64_t kMaxBlocks = 65535;
constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// Blocks for `items` work items of `items_per_block` each.
int BlocksFor(int64_t items, int64_t items_per_block = kThreadsPerBlock) {
  const int64_t wanted = (items + items_per_block - 1) / items_per_block;
  return static_cast<int>(wanted < kMaxBlocks ? wanted : kMaxBlocks);
}

__device__ int64_t GlobalThreadIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ int64_t GridThreads() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

__global__ void AddBiasKernel(int64_t rows, int64_t cols, const float* bias,
                              float* out) {
  const int64_t n = rows * cols;
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    out[i] += bias[i % cols];
  }
}

// A block sums kColumnTile adjacent columns, so that a warp reads along a
// row; its kRowSlices rows of threads split the rows between them and then
// add their partial sums in a fixed order (deterministic, no atomics).
constexpr int kColumnTile = 32;
constexpr int kRowSlices = kThreadsPerBlock / kColumnTile;

__global__ void ColumnSumsKernel(int64_t rows, int64_t cols, const float* x,
                                 float* sums) {
  __shared__ float partial[kRowSlices][kColumnTile];
  // The loop bound is the same for every thread of the block, as
  // __syncthreads() needs.
  for (int64_t tile = static_cast<int64_t>(blockIdx.x) * kColumnTile;
       tile < cols; tile += static_cast<int64_t>(gridDim.x) * kColumnTile) {
    const int64_t col = tile + threadIdx.x;
    float sum = 0;
    if (col < cols) {
      for (int64_t row = threadIdx.y; row < rows; row += kRowSlices) {
        sum += x[row * cols + col];
      }
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
      float total = 0;
      for (int s = 0; s < kRowSlices; ++s) total += partial[s][threadIdx.x];
      sums[col] = total;
    }
    __syncthreads();
  }
}

__global__ void ReluKernel(int64_t n, float* x) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    // Not fmaxf, which would turn NaN into 0.
    x[i] = x[i] < 0 ? 0.0f : x[i];
  }
}

__global__ void ReluGradKernel(int64_t n, const float* activation,
                               float* grad) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    if (activation[i] <= 0) grad[i] = 0;
  }
}

__global__ void AxpyKernel(int64_t n, float alpha, const float* x, float* y) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    y[i] += alpha * x[i];
  }
}

__global__ void ScaleKernel(int64_t n, float alpha, float* x) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    x[i] *= alpha;
  }
}

__global__ void FillKernel(int64_t n, float value, float* x) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    x[i] = value;
  }
}

__device__ float WarpMax(float value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(kFullWarp, value, offset));
  }
  return value;
}

__device__ float WarpSum(float value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(kFullWarp, value, offset);
  }
  return value;
}

// One warp per row, its lanes striding over the classes. Every lane of a
// warp takes the same rows (the block is whole warps), so the shuffles see
// all 32 lanes.
__global__ void SoftmaxCrossEntropyKernel(int64_t rows, int64_t classes,
                                          const float* logits,
                                          const float* labels,
                                          float* probabilities, float* losses,
                                          float* d_logits) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = GridThreads() / kWarpSize;
  for (int64_t row = GlobalThreadIndex() / kWarpSize; row < rows;
       row += warps) {
    const float* z = logits + row * classes;
    float max = -CUDART_INF_F;
    for (int64_t j = lane; j < classes; j += kWarpSize) max = fmaxf(max, z[j]);
    max = WarpMax(max);
    float sum = 0;
    for (int64_t j = lane; j < classes; j += kWarpSize) sum += expf(z[j] - max);
    const float log_sum = logf(WarpSum(sum));
    // Compared before the conversion, which is undefined for NaN and for
    // values out of range.
    const float label = labels[row];
    const bool valid =
        label >= 0 && static_cast<double>(label) < static_cast<double>(classes);
    const int64_t label_class = valid ? static_cast<int64_t>(label) : -1;
    for (int64_t j = lane; j < classes; j += kWarpSize) {
      const float p = expf(z[j] - max - log_sum);
      probabilities[row * classes + j] = p;
      if (d_logits != nullptr) {
        d_logits[row * classes + j] = j == label_class ? p - 1.0f : p;
      }
    }
    if (lane == 0) {
      losses[row] = valid ? log_sum - (z[label_class] - max) : CUDART_NAN_F;
    }
  }
}

__global__ void SigmoidCrossEntropyKernel(int64_t n, const float* logits,
                                          const float* labels,
                                          float* probabilities, float* losses,
                                          float* d_logits) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    const float z = logits[i];
    const float y = labels[i];
    // exp of a non-positive number only, so nothing overflows.
    const float e = expf(-fabsf(z));
    const float p = z >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
    probabilities[i] = p;
    losses[i] = fmaxf(z, 0.0f) - z * y + log1pf(e);
    if (d_logits != nullptr) d_logits[i] = p - y;
  }
}

__global__ void SquaredErrorKernel(int64_t n, const float* predictions,
                                   const float* labels, float* losses,
                                   float* d_predictions) {
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    const float residual = predictions[i] - labels[i];
    losses[i] = residual * residual;
    if (d_predictions != nullptr) d_predictions[i] = 2.0f * residual;
  }
}

// One thread per (example, column) element; the lanes of a warp mostly share
// an example, so its offsets, rows and values are read once per warp and the
// table rows along their width.
__global__ void SparseGatherSumKernel(int64_t num_examples, int64_t width,
                                      const int64_t* offsets,
                                      const int32_t* rows, const float* values,
                                      const float* table, float* out) {
  const int64_t n = num_examples * width;
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    const int64_t example = i / width;
    const int64_t column = i - example * width;
    const int64_t end = offsets[example + 1];
    float sum = 0;
    for (int64_t f = offsets[example]; f < end; ++f) {
      sum += values[f] * table[static_cast<int64_t>(rows[f]) * width + column];
    }
    out[i] += sum;
  }
}

__global__ void SparseScatterAddKernel(int64_t num_examples, int64_t width,
                                       const int64_t* offsets,
                                       const int32_t* rows, const float* values,
                                       const float* d_out, float* d_table) {
  const int64_t n = num_examples * width;
  for (int64_t i = GlobalThreadIndex(); i < n; i += GridThreads()) {
    const int64_t example = i / width;
    const int64_t column = i - example * width;
    const float g = d_out[i];
    const int64_t end = offsets[example + 1];
    for (int64_t f = offsets[example]; f < end; ++f) {
      atomicAdd(&d_table[static_cast<int64_t>(rows[f]) * width + column],
                values[f] * g);
    }
  }
}

}  // namespace

cudaError_t LaunchAddBias(int64_t rows, int64_t cols, const float* bias,
                          float* out, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  AddBiasKernel<<<BlocksFor(rows * cols), kThreadsPerBlock, 0, stream>>>(
      rows, cols, bias, out);
  return cudaGetLastError();
}

cudaError_t LaunchColumnSums(int64_t rows, int64_t cols, const float* x,
                             float* sums, cudaStream_t stream) {
  // rows == 0 still runs: the sums of no rows are 0.
  if (cols <= 0) return cudaSuccess;
  const dim3 threads(kColumnTile, kRowSlices);
  ColumnSumsKernel<<<BlocksFor(cols, kColumnTile), threads, 0, stream>>>(
      rows < 0 ? 0 : rows, cols, x, sums);
  return cudaGetLastError();
}

cudaError_t LaunchRelu(int64_t n, float* x, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ReluKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, x);
  return cudaGetLastError();
}

cudaError_t LaunchReluGrad(int64_t n, const float* activation, float* grad,
                           cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ReluGradKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, activation,
                                                                grad);
  return cudaGetLastError();
}

cudaError_t LaunchAxpy(int64_t n, float alpha, const float* x, float* y,
                       cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  AxpyKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, alpha, x, y);
  return cudaGetLastError();
}

cudaError_t LaunchScale(int64_t n, float alpha, float* x, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ScaleKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, alpha, x);
  return cudaGetLastError();
}

cudaError_t LaunchFill(int64_t n, float value, float* x, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  FillKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(n, value, x);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxCrossEntropy(int64_t rows, int64_t classes,
                                      const float* logits, const float* labels,
                                      float* probabilities, float* losses,
                                      float* d_logits, cudaStream_t stream) {
  if (rows <= 0 || classes <= 0) return cudaSuccess;
  constexpr int kRowsPerBlock = kThreadsPerBlock / kWarpSize;
  SoftmaxCrossEntropyKernel<<<BlocksFor(rows, kRowsPerBlock), kThreadsPerBlock,
                              0, stream>>>(rows, classes, logits, labels,
                                           probabilities, losses, d_logits);
  return cudaGetLastError();
}

cudaError_t LaunchSigmoidCrossEntropy(int64_t n, const float* logits,
                                      const float* labels, float* probabilities,
                                      float* losses, float* d_logits,
                                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  SigmoidCrossEntropyKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      n, logits, labels, probabilities, losses, d_logits);
  return cudaGetLastError();
}

cudaError_t LaunchSquaredError(int64_t n, const float* predictions,
                               const float* labels, float* losses,
                               float* d_predictions, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  SquaredErrorKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      n, predictions, labels, losses, d_predictions);
  return cudaGetLastError();
}

cudaError_t LaunchSparseGatherSum(int64_t num_examples, int64_t width,
                                  const int64_t* offsets, const int32_t* rows,
                                  const float* values, const float* table,
                                  float* out, cudaStream_t stream) {
  if (num_examples <= 0 || width <= 0) return cudaSuccess;
  SparseGatherSumKernel<<<BlocksFor(num_examples * width), kThreadsPerBlock, 0,
                          stream>>>(num_examples, width, offsets, rows, values,
                                    table, out);
  return cudaGetLastError();
}

cudaError_t LaunchSparseScatterAdd(int64_t num_examples, int64_t width,
                                   const int64_t* offsets, const int32_t* rows,
                                   const float* values, const float* d_out,
                                   float* d_table, cudaStream_t stream) {
  if (num_examples <= 0 || width <= 0) return cudaSuccess;
  SparseScatterAddKernel<<<BlocksFor(num_examples * width), kThreadsPerBlock, 0,
                           stream>>>(num_examples, width, offsets, rows, values,
                                     d_out, d_table);
  return cudaGetLastError();
}

}  // namespace distrt::kernels
