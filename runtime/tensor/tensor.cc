#include "runtime/tensor/tensor.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {
Tensor::~Tensor() { Release(); }

Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_),
      shape_(std::move(other.shape_)),
      num_elements_(std::exchange(other.num_elements_, 0)),
      allocator_(std::exchange(other.allocator_, nullptr)),
      data_(std::exchange(other.data_, nullptr)) {
  other.shape_.clear();
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    Release();
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    other.shape_.clear();
    num_elements_ = std::exchange(other.num_elements_, 0);
    allocator_ = std::exchange(other.allocator_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

void Tensor::Release() {
  if (data_ != nullptr) allocator_->Deallocate(data_, bytes());
  data_ = nullptr;
}

absl::StatusOr<Tensor> Tensor::Create(DType dtype, std::vector<int64_t> shape,
                                      Allocator* allocator) {
  absl::StatusOr<int64_t> counted = CountElements(shape);
  if (!counted.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", counted.status().message()));
  }
  const int64_t elements = *counted;
  void* data = nullptr;
  if (elements > 0) {
    const size_t bytes = elements * DTypeSize(dtype);
    data = allocator->Allocate(bytes);
    if (data == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory allocating ", bytes, " bytes for a ",
                       DTypeName(dtype), " tensor on ", allocator->name()));
    }
  }
  return Tensor(dtype, std::move(shape), elements, allocator, data);
}

absl::StatusOr<Tensor> Tensor::Zeros(DType dtype, std::vector<int64_t> shape,
                                     Allocator* allocator) {
  absl::StatusOr<Tensor> tensor = Create(dtype, std::move(shape), allocator);
  if (tensor.ok() && tensor->data_ != nullptr) {
    RETURN_IF_ERROR(allocator->SetZero(tensor->data_, tensor->bytes()));
  }
  return tensor;
}

absl::StatusOr<Tensor> Tensor::FromHostBytes(DType dtype, const void* values,
                                             size_t count,
                                             std::vector<int64_t> shape) {
  absl::StatusOr<Tensor> tensor = Create(dtype, std::move(shape));
  RETURN_IF_ERROR(tensor.status());
  if (tensor->num_elements() != static_cast<int64_t>(count)) {
    return absl::InvalidArgumentError(absl::StrCat(
        count, " values for a tensor of shape ", ShapeString(tensor->shape()),
        " (", tensor->num_elements(), " elements)"));
  }
  if (count > 0) {
    std::memcpy(tensor->data_, values, tensor->bytes());
  }
  return tensor;
}

absl::StatusOr<Tensor> Tensor::Clone() const {
  if (is_null()) return Tensor();
  absl::StatusOr<Tensor> copy = Create(dtype_, shape_, allocator_);
  if (copy.ok() && data_ != nullptr) {
    RETURN_IF_ERROR(allocator_->CopyWithin(data_, copy->data_, bytes()));
  }
  return copy;
}

void Tensor::CheckType(DType wanted) const {
  if (allocator_ != nullptr && !allocator_->host_accessible()) {
    // Dereferencing device memory on the host would crash later and far
    // away; this is a bug in the caller, which must copy to the host first.
    std::fprintf(stderr,
                 "Tensor: host access to a %s tensor in %s memory, which "
                 "the host cannot read\n",
                 DescribeTensor(*this).c_str(), allocator_->name().c_str());
    std::abort();
  }
  if (wanted == dtype_) return;
  // A caller asking for the wrong element type is a bug in the caller, not
  // bad input: stop before reinterpreting memory.
  std::fprintf(stderr, "Tensor: %s elements requested of a %s tensor\n",
               std::string(DTypeName(wanted)).c_str(),
               DescribeTensor(*this).c_str());
  std::abort();
}

std::string DescribeTensor(const Tensor& tensor) {
  if (tensor.is_null()) return "null tensor";
  return absl::StrCat(DTypeName(tensor.dtype()), ShapeString(tensor.shape()));
}

}  // namespace distrt
