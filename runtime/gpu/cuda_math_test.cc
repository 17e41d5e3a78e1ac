// CudaMath against CpuMath on the same inputs. Needs a GPU; without one
// every test is skipped, saying why.
#include "runtime/gpu/cuda_math.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/gpu/cuda_status.h"
#include "runtime/gpu/gpu_probe.h"
#include "runtime/kernels/cpu_math.h"
#include "runtime/kernels/random_vector.h"

namespace distrt {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// Equal up to `tolerance`, relative where |expected| is above 1; NaN only
// where CpuMath has NaN.
void ExpectAllNear(const std::vector<float>& actual,
                   const std::vector<float>& expected,
                   double tolerance = 1e-4) {
  ASSERT_EQ(actual.size(), expected.size());
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 10; ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "at " << i << ": " << actual[i];
      failures += !std::isnan(actual[i]);
      continue;
    }
    const double allowed =
        tolerance * std::max(1.0, std::fabs(double{expected[i]}));
    const bool near = std::fabs(double{actual[i]} - expected[i]) <= allowed;
    EXPECT_TRUE(near) << "at " << i << ": GPU " << actual[i] << ", CPU "
                      << expected[i];
    failures += !near;
  }
}

// Whether a CUDA or cuBLAS call succeeded; if not, a test failure that names
// it and where it was made.
bool Succeeded(const absl::Status& status) {
  EXPECT_TRUE(status.ok()) << status;
  return status.ok();
}
#define CUDA_OK(expr) \
  Succeeded(gpu::CudaStatus((expr), #expr, __FILE__, __LINE__))
#define CUBLAS_OK(expr) \
  Succeeded(gpu::CublasStatus((expr), #expr, __FILE__, __LINE__))

class CudaMathTest : public testing::Test {
 protected:
  void SetUp() override {
    const gpu::GpuProbeResult probe = gpu::ProbeGpus();
    if (probe.gpus.empty()) {
      GTEST_SKIP() << "no usable GPU: " << probe.unavailable_reason;
    }
    ASSERT_TRUE(CUDA_OK(cudaSetDevice(probe.gpus[0].ordinal)));
    // Non-blocking, as GpuDevice makes its streams.
    ASSERT_TRUE(
        CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)));
    ASSERT_TRUE(CUBLAS_OK(cublasCreate(&cublas_)));
    ASSERT_TRUE(CUBLAS_OK(cublasSetStream(cublas_, stream_)));
    math_ = std::make_unique<CudaMath>(stream_, cublas_);
  }

  void TearDown() override {
    if (stream_ != nullptr) {
      CUDA_OK(cudaStreamSynchronize(stream_));
    }
    for (void* p : allocations_) CUDA_OK(cudaFree(p));
    if (cublas_ != nullptr) {
      CUBLAS_OK(cublasDestroy(cublas_));
    }
    if (stream_ != nullptr) {
      CUDA_OK(cudaStreamDestroy(stream_));
    }
  }

  // A device copy of `host` (null when empty), freed at TearDown.
  template <typename T>
  T* ToDevice(const std::vector<T>& host) {
    if (host.empty()) return nullptr;
    void* device = nullptr;
    const size_t bytes = host.size() * sizeof(T);
    if (!CUDA_OK(cudaMalloc(&device, bytes))) return nullptr;
    allocations_.push_back(device);
    // Synchronised so that `host` may go at once, whatever the driver does
    // with pageable memory.
    CUDA_OK(cudaMemcpyAsync(device, host.data(), bytes, cudaMemcpyHostToDevice,
                            stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    return static_cast<T*>(device);
  }

  // `n` elements at `device`, once all the work queued so far has finished.
  template <typename T>
  std::vector<T> ToHost(const T* device, size_t n) {
    std::vector<T> host(n);
    if (n == 0) return host;
    CUDA_OK(cudaMemcpyAsync(host.data(), device, n * sizeof(T),
                            cudaMemcpyDeviceToHost, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    return host;
  }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<CudaMath> math_;
  CpuMath cpu_;
  std::vector<void*> allocations_;
};

TEST_F(CudaMathTest, GemmMatchesCpuForAllTransposes) {
  std::mt19937 rng(1);
  const int64_t m = 257, n = 129, k = 65;
  for (bool transpose_a : {false, true}) {
    for (bool transpose_b : {false, true}) {
      for (float beta : {0.0f, 0.5f}) {
        SCOPED_TRACE(testing::Message()
                     << "transpose_a=" << transpose_a
                     << " transpose_b=" << transpose_b << " beta=" << beta);
        const std::vector<float> a = RandomVector(m * k, rng);
        const std::vector<float> b = RandomVector(k * n, rng);
        // With beta == 0, C's NaN must not survive.
        std::vector<float> c = beta == 0 ? std::vector<float>(m * n, kNan)
                                         : RandomVector(m * n, rng);
        float* device_c = ToDevice(c);
        const absl::Status status =
            math_->Gemm(transpose_a, transpose_b, m, n, k, 1.5f, ToDevice(a),
                        ToDevice(b), beta, device_c);
        ASSERT_TRUE(status.ok()) << status;
        ASSERT_TRUE(cpu_.Gemm(transpose_a, transpose_b, m, n, k, 1.5f, a.data(),
                              b.data(), beta, c.data())
                        .ok());
        ExpectAllNear(ToHost(device_c, m * n), c);
      }
    }
  }
}

TEST_F(CudaMathTest, GemmCornerCasesMatchCpu) {
  const std::vector<float> initial = {1, -2, 3, 4, 5, 6};
  // k == 0: C = beta C.
  for (float beta : {0.0f, 1.0f, 2.0f}) {
    SCOPED_TRACE(testing::Message() << "k=0 beta=" << beta);
    float* c = ToDevice(initial);
    ASSERT_TRUE(
        math_->Gemm(false, true, 2, 3, 0, 1.0f, nullptr, nullptr, beta, c)
            .ok());
    std::vector<float> expected = initial;
    ASSERT_TRUE(cpu_.Gemm(false, true, 2, 3, 0, 1.0f, nullptr, nullptr, beta,
                          expected.data())
                    .ok());
    EXPECT_EQ(ToHost(c, 6), expected);
  }
  // k == 0, beta == 0 over NaN.
  float* garbage = ToDevice(std::vector<float>(6, kNan));
  ASSERT_TRUE(
      math_->Gemm(true, false, 2, 3, 0, 1.0f, nullptr, nullptr, 0.0f, garbage)
          .ok());
  EXPECT_EQ(ToHost(garbage, 6), std::vector<float>(6, 0.0f));
  // alpha == 0: A and B (NaN here) are not read.
  const std::vector<float> nans(6, kNan);
  float* c = ToDevice(initial);
  ASSERT_TRUE(math_
                  ->Gemm(false, false, 2, 3, 2, 0.0f, ToDevice(nans),
                         ToDevice(nans), 3.0f, c)
                  .ok());
  EXPECT_EQ(ToHost(c, 6), (std::vector<float>{3, -6, 9, 12, 15, 18}));
  // Empty outputs: nothing to touch.
  EXPECT_TRUE(
      math_->Gemm(false, false, 0, 3, 4, 1.0f, nullptr, nullptr, 0.0f, nullptr)
          .ok());
  EXPECT_TRUE(
      math_->Gemm(false, false, 3, 0, 4, 1.0f, nullptr, nullptr, 0.0f, nullptr)
          .ok());
}

TEST_F(CudaMathTest, GemmRefusesSizesCublasCannotTake) {
  absl::Status status = math_->Gemm(false, false, -1, 2, 3, 1.0f, nullptr,
                                    nullptr, 0.0f, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "Gemm: negative size (m=-1, n=2, k=3)");
  status = math_->Gemm(false, false, 2, 3, int64_t{1} << 31, 1.0f, nullptr,
                       nullptr, 0.0f, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "Gemm: sizes (m=2, n=3, k=2147483648) exceed cuBLAS's limit of "
            "2147483647");
}

TEST_F(CudaMathTest, AddBiasAndColumnSumsMatchCpu) {
  std::mt19937 rng(2);
  // Columns not a multiple of the 32-column tile; one very tall column.
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{1000, 37}, {5000, 1}, {3, 300}, {0, 5}}) {
    SCOPED_TRACE(testing::Message() << rows << "x" << cols);
    const std::vector<float> bias = RandomVector(cols, rng);
    std::vector<float> x = RandomVector(rows * cols, rng);
    float* device_x = ToDevice(x);
    ASSERT_TRUE(math_->AddBias(rows, cols, ToDevice(bias), device_x).ok());
    ASSERT_TRUE(cpu_.AddBias(rows, cols, bias.data(), x.data()).ok());
    ExpectAllNear(ToHost(device_x, x.size()), x);

    float* device_sums = ToDevice(std::vector<float>(cols, kNan));
    ASSERT_TRUE(math_->ColumnSums(rows, cols, device_x, device_sums).ok());
    std::vector<float> sums(cols);
    ASSERT_TRUE(cpu_.ColumnSums(rows, cols, x.data(), sums.data()).ok());
    ExpectAllNear(ToHost(device_sums, cols), sums);
  }
}

TEST_F(CudaMathTest, ElementwiseOperationsMatchCpu) {
  std::mt19937 rng(3);
  // Not a multiple of the block size.
  const int64_t n = 100003;
  std::vector<float> x = RandomVector(n, rng);
  x[17] = kNan;
  float* device_x = ToDevice(x);
  ASSERT_TRUE(math_->Relu(n, device_x).ok());
  ASSERT_TRUE(cpu_.Relu(n, x.data()).ok());
  ExpectAllNear(ToHost(device_x, n), x);

  std::vector<float> grad = RandomVector(n, rng);
  float* device_grad = ToDevice(grad);
  const std::vector<float> activation = RandomVector(n, rng);
  ASSERT_TRUE(math_->ReluGrad(n, ToDevice(activation), device_grad).ok());
  ASSERT_TRUE(cpu_.ReluGrad(n, activation.data(), grad.data()).ok());
  ExpectAllNear(ToHost(device_grad, n), grad);

  ASSERT_TRUE(math_->Axpy(n, -0.75f, device_grad, device_x).ok());
  ASSERT_TRUE(cpu_.Axpy(n, -0.75f, grad.data(), x.data()).ok());
  ExpectAllNear(ToHost(device_x, n), x);

  ASSERT_TRUE(math_->Scale(n, 3.0f, device_x).ok());
  ASSERT_TRUE(cpu_.Scale(n, 3.0f, x.data()).ok());
  ExpectAllNear(ToHost(device_x, n), x);

  ASSERT_TRUE(math_->Fill(n, -2.5f, device_x).ok());
  ExpectAllNear(ToHost(device_x, n), std::vector<float>(n, -2.5f), 0.0);
}

// More work items than a capped grid has threads (or, for softmax, warps),
// so that they go round their grid-stride loops more than once.
TEST_F(CudaMathTest, GridStrideLoopsCoverLargeArrays) {
  const int64_t n = int64_t{65535} * 256 * 2 + 1001;
  float* x = ToDevice(std::vector<float>(n, 0.0f));
  float* y = ToDevice(std::vector<float>(n, 1.0f));
  ASSERT_TRUE(math_->Fill(n, 2.0f, x).ok());
  ASSERT_TRUE(math_->Axpy(n, 3.0f, x, y).ok());
  ExpectAllNear(ToHost(y, n), std::vector<float>(n, 7.0f));

  std::mt19937 rng(7);
  const int64_t rows = int64_t{65535} * 8 + 17, classes = 2;
  const std::vector<float> logits = RandomVector(rows * classes, rng, 5.0f);
  std::vector<float> labels(rows);
  for (int64_t i = 0; i < rows; ++i) labels[i] = static_cast<float>(i % 2);
  std::vector<float> probabilities(rows * classes), losses(rows);
  ASSERT_TRUE(cpu_.SoftmaxCrossEntropy(rows, classes, logits.data(),
                                       labels.data(), probabilities.data(),
                                       losses.data(), nullptr)
                  .ok());
  float* device_probabilities = ToDevice(std::vector<float>(rows * classes));
  float* device_losses = ToDevice(std::vector<float>(rows));
  ASSERT_TRUE(math_
                  ->SoftmaxCrossEntropy(rows, classes, ToDevice(logits),
                                        ToDevice(labels), device_probabilities,
                                        device_losses, nullptr)
                  .ok());
  ExpectAllNear(ToHost(device_probabilities, rows * classes), probabilities);
  ExpectAllNear(ToHost(device_losses, rows), losses);
}

TEST_F(CudaMathTest, SoftmaxCrossEntropyMatchesCpu) {
  std::mt19937 rng(4);
  // Fewer classes than a warp has lanes, more, and one.
  for (auto [rows, classes] :
       {std::pair<int64_t, int64_t>{1000, 10}, {300, 100}, {64, 1}}) {
    for (bool with_gradient : {true, false}) {
      SCOPED_TRACE(testing::Message() << rows << "x" << classes
                                      << " with_gradient=" << with_gradient);
      std::vector<float> logits = RandomVector(rows * classes, rng, 10.0f);
      logits[0] = 1000;  // huge logits stay finite
      logits[classes * 2] = -1000;
      std::uniform_int_distribution<int64_t> label(0, classes - 1);
      std::vector<float> labels(rows);
      for (float& l : labels) l = static_cast<float>(label(rng));
      labels[3] = static_cast<float>(classes);  // out of range: NaN loss
      labels[4] = -1;
      labels[5] = kNan;

      std::vector<float> probabilities(rows * classes), losses(rows),
          d_logits(rows * classes);
      ASSERT_TRUE(
          cpu_.SoftmaxCrossEntropy(rows, classes, logits.data(), labels.data(),
                                   probabilities.data(), losses.data(),
                                   with_gradient ? d_logits.data() : nullptr)
              .ok());
      float* device_probabilities = ToDevice(probabilities);
      float* device_losses = ToDevice(losses);
      float* device_d_logits = with_gradient ? ToDevice(d_logits) : nullptr;
      ASSERT_TRUE(math_
                      ->SoftmaxCrossEntropy(
                          rows, classes, ToDevice(logits), ToDevice(labels),
                          device_probabilities, device_losses, device_d_logits)
                      .ok());
      ExpectAllNear(ToHost(device_probabilities, probabilities.size()),
                    probabilities);
      ExpectAllNear(ToHost(device_losses, rows), losses);
      if (with_gradient) {
        ExpectAllNear(ToHost(device_d_logits, d_logits.size()), d_logits);
      }
    }
  }
}

TEST_F(CudaMathTest, SigmoidCrossEntropyMatchesCpu) {
  std::mt19937 rng(5);
  const int64_t n = 10000;
  std::vector<float> logits = RandomVector(n, rng, 20.0f);
  logits[0] = 1000;
  logits[1] = -1000;
  logits[2] = 1000;
  logits[3] = -1000;
  std::vector<float> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<float>(i % 2);
  std::vector<float> probabilities(n), losses(n), d_logits(n);
  ASSERT_TRUE(cpu_.SigmoidCrossEntropy(n, logits.data(), labels.data(),
                                       probabilities.data(), losses.data(),
                                       d_logits.data())
                  .ok());
  float* device_probabilities = ToDevice(probabilities);
  float* device_losses = ToDevice(losses);
  float* device_d_logits = ToDevice(d_logits);
  ASSERT_TRUE(math_
                  ->SigmoidCrossEntropy(n, ToDevice(logits), ToDevice(labels),
                                        device_probabilities, device_losses,
                                        device_d_logits)
                  .ok());
  ExpectAllNear(ToHost(device_probabilities, n), probabilities);
  ExpectAllNear(ToHost(device_losses, n), losses);
  ExpectAllNear(ToHost(device_d_logits, n), d_logits);
}

TEST_F(CudaMathTest, SquaredErrorMatchesCpu) {
  std::mt19937 rng(9);
  const int64_t n = 70000;
  const std::vector<float> predictions = RandomVector(n, rng, 5.0f);
  const std::vector<float> labels = RandomVector(n, rng, 5.0f);
  std::vector<float> losses(n), d(n);
  ASSERT_TRUE(cpu_.SquaredError(n, predictions.data(), labels.data(),
                                losses.data(), d.data())
                  .ok());
  float* device_losses = ToDevice(losses);
  float* device_d = ToDevice(d);
  ASSERT_TRUE(math_
                  ->SquaredError(n, ToDevice(predictions), ToDevice(labels),
                                 device_losses, device_d)
                  .ok());
  ExpectAllNear(ToHost(device_losses, n), losses);
  ExpectAllNear(ToHost(device_d, n), d);
}

TEST_F(CudaMathTest, SparseGatherSumAndScatterAddMatchCpu) {
  std::mt19937 rng(6);
  const int64_t num_examples = 512, width = 16;
  const int32_t table_rows = 1000;
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> rows;
  std::vector<float> values;
  std::uniform_int_distribution<int> features(1, 20);
  std::uniform_int_distribution<int32_t> row(0, table_rows - 1);
  std::uniform_real_distribution<float> value(-2, 2);
  for (int64_t i = 0; i < num_examples; ++i) {
    // Every 50th example has no features.
    const int count = i % 50 == 0 ? 0 : features(rng);
    for (int f = 0; f < count; ++f) {
      // Some rows shared by many features, so that atomics collide.
      rows.push_back(f % 4 == 0 ? 7 : row(rng));
      values.push_back(value(rng));
    }
    offsets.push_back(rows.size());
  }
  const int64_t* device_offsets = ToDevice(offsets);
  const int32_t* device_rows = ToDevice(rows);
  const float* device_values = ToDevice(values);

  const std::vector<float> table = RandomVector(table_rows * width, rng);
  std::vector<float> out = RandomVector(num_examples * width, rng);
  float* device_out = ToDevice(out);
  ASSERT_TRUE(math_
                  ->SparseGatherSum(num_examples, width, device_offsets,
                                    device_rows, device_values, ToDevice(table),
                                    device_out)
                  .ok());
  ASSERT_TRUE(cpu_.SparseGatherSum(num_examples, width, offsets.data(),
                                   rows.data(), values.data(), table.data(),
                                   out.data())
                  .ok());
  ExpectAllNear(ToHost(device_out, out.size()), out);

  const std::vector<float> d_out = RandomVector(num_examples * width, rng);
  std::vector<float> d_table = RandomVector(table_rows * width, rng);
  float* device_d_table = ToDevice(d_table);
  ASSERT_TRUE(math_
                  ->SparseScatterAdd(num_examples, width, device_offsets,
                                     device_rows, device_values,
                                     ToDevice(d_out), device_d_table)
                  .ok());
  ASSERT_TRUE(cpu_.SparseScatterAdd(num_examples, width, offsets.data(),
                                    rows.data(), values.data(), d_out.data(),
                                    d_table.data())
                  .ok());
  ExpectAllNear(ToHost(device_d_table, d_table.size()), d_table);
}

// Sizes of 0 launch nothing, so null pointers are never touched.
TEST_F(CudaMathTest, EmptySizesDoNothing) {
  EXPECT_TRUE(math_->AddBias(0, 4, nullptr, nullptr).ok());
  EXPECT_TRUE(math_->AddBias(4, 0, nullptr, nullptr).ok());
  EXPECT_TRUE(math_->ColumnSums(4, 0, nullptr, nullptr).ok());
  EXPECT_TRUE(math_->Relu(0, nullptr).ok());
  EXPECT_TRUE(math_->ReluGrad(0, nullptr, nullptr).ok());
  EXPECT_TRUE(math_->Axpy(0, 1.0f, nullptr, nullptr).ok());
  EXPECT_TRUE(math_->Scale(0, 1.0f, nullptr).ok());
  EXPECT_TRUE(math_->Fill(0, 1.0f, nullptr).ok());
  EXPECT_TRUE(math_
                  ->SoftmaxCrossEntropy(0, 3, nullptr, nullptr, nullptr,
                                        nullptr, nullptr)
                  .ok());
  EXPECT_TRUE(math_
                  ->SoftmaxCrossEntropy(3, 0, nullptr, nullptr, nullptr,
                                        nullptr, nullptr)
                  .ok());
  EXPECT_TRUE(
      math_->SigmoidCrossEntropy(0, nullptr, nullptr, nullptr, nullptr, nullptr)
          .ok());
  EXPECT_TRUE(
      math_->SparseGatherSum(0, 4, nullptr, nullptr, nullptr, nullptr, nullptr)
          .ok());
  EXPECT_TRUE(
      math_->SparseScatterAdd(0, 4, nullptr, nullptr, nullptr, nullptr, nullptr)
          .ok());
  CUDA_OK(cudaStreamSynchronize(stream_));
}

}  // namespace
}  // namespace distrt
