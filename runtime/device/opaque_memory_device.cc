#include "runtime/device/opaque_memory_device.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/cpu_math.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

DeviceName OpaqueName(int id) {
  DeviceName name;
  name.type = "OPAQUE";
  name.id = id;
  return name;
}

// CpuMath, refusing arrays outside the device's memory. Sizes of 0 pass
// whatever the pointer (nothing is read).
class OwnedMath final : public DeviceMath {
 public:
  explicit OwnedMath(const OpaqueMemoryDevice& device) : device_(device) {}

  absl::Status Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                    int64_t k, float alpha, const float* a, const float* b,
                    float beta, float* c) override {
    RETURN_IF_ERROR(Check({{a, m * k}, {b, k * n}, {c, m * n}}));
    return HostMath()->Gemm(transpose_a, transpose_b, m, n, k, alpha, a, b,
                            beta, c);
  }
  absl::Status AddBias(int64_t rows, int64_t cols, const float* bias,
                       float* out) override {
    RETURN_IF_ERROR(Check({{bias, cols}, {out, rows * cols}}));
    return HostMath()->AddBias(rows, cols, bias, out);
  }
  absl::Status ColumnSums(int64_t rows, int64_t cols, const float* x,
                          float* sums) override {
    RETURN_IF_ERROR(Check({{x, rows * cols}, {sums, cols}}));
    return HostMath()->ColumnSums(rows, cols, x, sums);
  }
  absl::Status Relu(int64_t n, float* x) override {
    RETURN_IF_ERROR(Check({{x, n}}));
    return HostMath()->Relu(n, x);
  }
  absl::Status ReluGrad(int64_t n, const float* activation,
                        float* grad) override {
    RETURN_IF_ERROR(Check({{activation, n}, {grad, n}}));
    return HostMath()->ReluGrad(n, activation, grad);
  }
  absl::Status Axpy(int64_t n, float alpha, const float* x, float* y) override {
    RETURN_IF_ERROR(Check({{x, n}, {y, n}}));
    return HostMath()->Axpy(n, alpha, x, y);
  }
  absl::Status Scale(int64_t n, float alpha, float* x) override {
    RETURN_IF_ERROR(Check({{x, n}}));
    return HostMath()->Scale(n, alpha, x);
  }
  absl::Status Fill(int64_t n, float value, float* x) override {
    RETURN_IF_ERROR(Check({{x, n}}));
    return HostMath()->Fill(n, value, x);
  }
  absl::Status SoftmaxCrossEntropy(int64_t rows, int64_t classes,
                                   const float* logits, const float* labels,
                                   float* probabilities, float* losses,
                                   float* d_logits) override {
    RETURN_IF_ERROR(Check({{logits, rows * classes},
                           {labels, rows},
                           {probabilities, rows * classes},
                           {losses, rows},
                           {d_logits, d_logits ? rows * classes : 0}}));
    return HostMath()->SoftmaxCrossEntropy(rows, classes, logits, labels,
                                           probabilities, losses, d_logits);
  }
  absl::Status SigmoidCrossEntropy(int64_t n, const float* logits,
                                   const float* labels, float* probabilities,
                                   float* losses, float* d_logits) override {
    RETURN_IF_ERROR(Check({{logits, n},
                           {labels, n},
                           {probabilities, n},
                           {losses, n},
                           {d_logits, d_logits ? n : 0}}));
    return HostMath()->SigmoidCrossEntropy(n, logits, labels, probabilities,
                                           losses, d_logits);
  }
  absl::Status SquaredError(int64_t n, const float* predictions,
                            const float* labels, float* losses,
                            float* d_predictions) override {
    RETURN_IF_ERROR(Check({{predictions, n},
                           {labels, n},
                           {losses, n},
                           {d_predictions, d_predictions ? n : 0}}));
    return HostMath()->SquaredError(n, predictions, labels, losses,
                                    d_predictions);
  }
  absl::Status SparseGatherSum(int64_t num_examples, int64_t width,
                               const int64_t* offsets, const int32_t* rows,
                               const float* values, const float* table,
                               float* out) override {
    RETURN_IF_ERROR(
        CheckSparse(num_examples, width, offsets, rows, values, table, out));
    return HostMath()->SparseGatherSum(num_examples, width, offsets, rows,
                                       values, table, out);
  }
  absl::Status SparseScatterAdd(int64_t num_examples, int64_t width,
                                const int64_t* offsets, const int32_t* rows,
                                const float* values, const float* d_out,
                                float* d_table) override {
    RETURN_IF_ERROR(CheckSparse(num_examples, width, offsets, rows, values,
                                d_table, d_out));
    return HostMath()->SparseScatterAdd(num_examples, width, offsets, rows,
                                        values, d_out, d_table);
  }

 private:
  struct Array {
    const void* data;
    int64_t elements;  // of 4 bytes
  };

  absl::Status Check(std::initializer_list<Array> arrays) const {
    int index = 0;
    for (const Array& array : arrays) {
      if (array.elements > 0 &&
          !device_.Owns(array.data, array.elements * sizeof(float))) {
        return absl::InternalError(
            absl::StrCat("array ", index, " (", array.elements,
                         " elements) given to the math of ",
                         device_.name().ToString(), " is not in its memory"));
      }
      ++index;
    }
    return absl::OkStatus();
  }

  // The CSR arrays (offsets read here, so they must be owned first), the
  // table's first row and the dense side.
  absl::Status CheckSparse(int64_t num_examples, int64_t width,
                           const int64_t* offsets, const int32_t* rows,
                           const float* values, const float* table,
                           const float* dense) const {
    if (num_examples <= 0 || width <= 0) return absl::OkStatus();
    if (!device_.Owns(offsets, (num_examples + 1) * sizeof(int64_t))) {
      return absl::InternalError(
          absl::StrCat("CSR offsets given to the math of ",
                       device_.name().ToString(), " are not in its memory"));
    }
    const int64_t features = offsets[num_examples];
    return Check({{rows, features},
                  {values, features},
                  {table, features > 0 ? width : 0},
                  {dense, num_examples * width}});
  }

  const OpaqueMemoryDevice& device_;
};

}  // namespace

OpaqueMemoryDevice::OpaqueMemoryDevice(int id)
    : Device(OpaqueName(id)), math_(std::make_unique<OwnedMath>(*this)) {}

OpaqueMemoryDevice::~OpaqueMemoryDevice() = default;

void* OpaqueMemoryDevice::Memory::Allocate(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded);
  if (ptr == nullptr) return nullptr;
  // All bits set: NaN as floats, -1 as integers.
  std::memset(ptr, 0xff, rounded);
  in_use += bytes;
  absl::MutexLock lock(&mu_);
  live_[reinterpret_cast<uintptr_t>(ptr)] = bytes;
  return ptr;
}

void OpaqueMemoryDevice::Memory::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    live_.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  std::free(ptr);
  in_use -= bytes;
}

bool OpaqueMemoryDevice::Memory::Owns(const void* ptr, size_t bytes) const {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  absl::MutexLock lock(&mu_);
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) return false;
  --it;
  return address + bytes <= it->first + it->second;
}

absl::Status OpaqueMemoryDevice::Memory::CopyToHost(const void* from, void* to,
                                                    size_t bytes) {
  if (bytes > 0 && !Owns(from, bytes)) {
    return absl::InternalError("CopyToHost from memory not of this device");
  }
  to_host += bytes;
  return Allocator::CopyToHost(from, to, bytes);
}

absl::Status OpaqueMemoryDevice::Memory::CopyFromHost(const void* from,
                                                      void* to, size_t bytes) {
  if (bytes > 0 && !Owns(to, bytes)) {
    return absl::InternalError("CopyFromHost to memory not of this device");
  }
  from_host += bytes;
  return Allocator::CopyFromHost(from, to, bytes);
}

absl::Status OpaqueMemoryDevice::Memory::CopyWithin(const void* from, void* to,
                                                    size_t bytes) {
  if (bytes > 0 && (!Owns(from, bytes) || !Owns(to, bytes))) {
    return absl::InternalError("CopyWithin between memory not of this device");
  }
  return Allocator::CopyWithin(from, to, bytes);
}

absl::Status OpaqueMemoryDevice::Memory::SetZero(void* to, size_t bytes) {
  if (bytes > 0 && !Owns(to, bytes)) {
    return absl::InternalError("SetZero of memory not of this device");
  }
  return Allocator::SetZero(to, bytes);
}

absl::StatusOr<Tensor> OpaqueMemoryDevice::CopyFrom(const Tensor& source) {
  if (source.is_null()) return Tensor();
  absl::StatusOr<Tensor> copy =
      Tensor::Create(source.dtype(), source.shape(), allocator());
  if (!copy.ok() || source.bytes() == 0) return copy;
  // Host memory comes up; any other memory (another opaque device's, as a
  // peer copy) goes through the host.
  if (source.allocator()->host_accessible()) {
    RETURN_IF_ERROR(memory_.CopyFromHost(source.raw_data(), copy->raw_data(),
                                         source.bytes()));
    return copy;
  }
  std::string staged(source.bytes(), '\0');
  RETURN_IF_ERROR(source.allocator()->CopyToHost(
      source.raw_data(), staged.data(), source.bytes()));
  RETURN_IF_ERROR(
      memory_.CopyFromHost(staged.data(), copy->raw_data(), source.bytes()));
  return copy;
}

}  // namespace distrt
