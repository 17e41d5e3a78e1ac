#ifndef DISTRT_RUNTIME_TENSOR_HOST_FLOATS_H_
#define DISTRT_RUNTIME_TENSOR_HOST_FLOATS_H_

// HostFloats: a float32 tensor's values where the host can work on them.
// For a tensor in host-accessible memory they are the tensor's own, so
// nothing is copied; for one the host cannot read (a GPU's) they are a copy
// downloaded when the view is made. Code that works on values with the host
// (a sum, Gloo, the optimizer) takes them from here instead of asking where
// the tensor lives.

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/tensor/tensor.h"

namespace distrt {

class HostFloats {
 public:
  // The values of `tensor`, to read. `tensor` must outlive the view.
  static absl::StatusOr<HostFloats> Read(const Tensor& tensor);
  // The values of `tensor`, to change. Changes to a copy reach the tensor
  // only through Commit().
  static absl::StatusOr<HostFloats> Edit(Tensor& tensor);

  // The spans point into the view when it holds a copy: moving keeps them
  // valid, copying would not.
  HostFloats(HostFloats&&) = default;
  HostFloats& operator=(HostFloats&&) = default;
  HostFloats(const HostFloats&) = delete;
  HostFloats& operator=(const HostFloats&) = delete;

  absl::Span<const float> values() const { return values_; }
  // Only for a view made by Edit.
  absl::Span<float> mutable_values();

  // Puts the values back into the tensor of Edit when they are a copy; does
  // nothing when they are the tensor's own.
  absl::Status Commit();

  bool is_copy() const { return !copy_.empty(); }

 private:
  HostFloats() = default;
  static absl::StatusOr<HostFloats> Make(const Tensor& tensor,
                                         Tensor* editable);

  std::vector<float> copy_;
  absl::Span<const float> values_;
  absl::Span<float> mutable_values_;  // empty for Read
  Tensor* editable_ = nullptr;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TENSOR_HOST_FLOATS_H_
