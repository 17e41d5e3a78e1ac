#include "runtime/tensor/host_floats.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<HostFloats> HostFloats::Read(const Tensor& tensor) {
  return Make(tensor, nullptr);
}

absl::StatusOr<HostFloats> HostFloats::Edit(Tensor& tensor) {
  return Make(tensor, &tensor);
}

absl::StatusOr<HostFloats> HostFloats::Make(const Tensor& tensor,
                                            Tensor* editable) {
  if (tensor.dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a float32 tensor, got ", DTypeName(tensor.dtype())));
  }
  HostFloats view;
  view.editable_ = editable;
  if (tensor.num_elements() == 0) return view;
  if (tensor.allocator()->host_accessible()) {
    if (editable != nullptr) view.mutable_values_ = editable->flat<float>();
    view.values_ = tensor.flat<float>();
    return view;
  }
  view.copy_.resize(tensor.num_elements());
  RETURN_IF_ERROR(tensor.allocator()->CopyToHost(
      tensor.raw_data(), view.copy_.data(), tensor.bytes()));
  if (editable != nullptr) view.mutable_values_ = absl::MakeSpan(view.copy_);
  view.values_ = absl::MakeConstSpan(view.copy_);
  return view;
}

absl::Span<float> HostFloats::mutable_values() {
  if (editable_ == nullptr) {
    // Writing through a read-only view is a bug in the caller.
    std::fprintf(stderr,
                 "HostFloats: mutable_values() of a view made by Read\n");
    std::abort();
  }
  return mutable_values_;
}

absl::Status HostFloats::Commit() {
  if (editable_ == nullptr) {
    return absl::FailedPreconditionError(
        "HostFloats: Commit() of a view made by Read");
  }
  if (!is_copy()) return absl::OkStatus();
  return editable_->allocator()->CopyFromHost(
      copy_.data(), editable_->raw_data(), editable_->bytes());
}

}  // namespace distrt
