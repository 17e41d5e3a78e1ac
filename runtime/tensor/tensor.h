#ifndef DISTRT_RUNTIME_TENSOR_TENSOR_H_
#define DISTRT_RUNTIME_TENSOR_TENSOR_H_

// Tensor: a dense n-dimensional array of float32, int64 or float64 elements in
// row-major order, in a buffer owned through the allocator of the device it
// lives on.
//
// Cheap to move (the buffer moves), explicit to copy (Clone): a copy of a
// large tensor never happens by accident. Tensor() and a moved-from tensor
// are null (is_null): no allocator, no buffer, no elements. Like a
// std::vector, concurrent reads are safe and writes need the caller's lock.

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/tensor/allocator.h"
#include "runtime/tensor/dtype.h"
#include "runtime/tensor/shape.h"

namespace distrt {

class Tensor {
 public:
  // A null tensor: no buffer.
  Tensor() = default;
  ~Tensor();

  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // A tensor of `shape` with uninitialised elements, from `allocator`.
  // INVALID_ARGUMENT for a negative dimension or more than 2^40 elements;
  // RESOURCE_EXHAUSTED naming the size and allocator when out of memory.
  static absl::StatusOr<Tensor> Create(DType dtype, std::vector<int64_t> shape,
                                       Allocator* allocator = CpuAllocator());
  // Filled with zeros.
  static absl::StatusOr<Tensor> Zeros(DType dtype, std::vector<int64_t> shape,
                                      Allocator* allocator = CpuAllocator());
  // A float32 tensor holding `values` (as many as the shape's elements;
  // INVALID_ARGUMENT otherwise).
  static absl::StatusOr<Tensor> FromFloats(absl::Span<const float> values,
                                           std::vector<int64_t> shape) {
    return FromValues<float>(values, std::move(shape));
  }
  // The same for any element type (float, int64_t, double), in host memory.
  template <typename T>
  static absl::StatusOr<Tensor> FromValues(absl::Span<const T> values,
                                           std::vector<int64_t> shape) {
    return FromHostBytes(DTypeOf<T>(), values.data(), values.size(),
                         std::move(shape));
  }

  // An element-for-element copy in a new buffer from the same allocator.
  absl::StatusOr<Tensor> Clone() const;

  bool is_null() const { return allocator_ == nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i]; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t bytes() const { return num_elements_ * DTypeSize(dtype_); }
  Allocator* allocator() const { return allocator_; }

  // The elements as T (which must be the tensor's dtype, in memory the host
  // can read: otherwise a programming error that aborts with a message).
  template <typename T>
  absl::Span<T> flat() {
    CheckType(DTypeOf<T>());
    return absl::MakeSpan(static_cast<T*>(data_), num_elements_);
  }
  template <typename T>
  absl::Span<const T> flat() const {
    CheckType(DTypeOf<T>());
    return absl::MakeConstSpan(static_cast<const T*>(data_), num_elements_);
  }

  // The buffer, wherever it is (device memory for GPU tensors).
  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }

 private:
  // A host tensor of `count` elements of `dtype` copied from `values`.
  static absl::StatusOr<Tensor> FromHostBytes(DType dtype, const void* values,
                                              size_t count,
                                              std::vector<int64_t> shape);

  Tensor(DType dtype, std::vector<int64_t> shape, int64_t num_elements,
         Allocator* allocator, void* data)
      : dtype_(dtype),
        shape_(std::move(shape)),
        num_elements_(num_elements),
        allocator_(allocator),
        data_(data) {}
  void CheckType(DType wanted) const;
  void Release();

  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  int64_t num_elements_ = 0;
  Allocator* allocator_ = nullptr;
  void* data_ = nullptr;  // nullptr also for a tensor of 0 elements
};

// "float32[2, 3]".
std::string DescribeTensor(const Tensor& tensor);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TENSOR_TENSOR_H_
