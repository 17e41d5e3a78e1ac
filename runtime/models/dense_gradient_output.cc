#include "runtime/models/dense_gradient_output.h"

#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<float*> DenseGradientOutput::For(int variable, int64_t size) {
  if (buffer_ != nullptr) return buffer_->base + buffer_->offsets[variable];
  std::vector<float>& host = (*gradients_)[variable].dense;
  host.resize(size);
  // On the host, straight into the result.
  if (arrays_.device().allocator()->host_accessible()) return host.data();
  absl::StatusOr<float*> scratch = arrays_.Floats(size);
  RETURN_IF_ERROR(scratch.status());
  pending_.push_back({variable, *scratch});
  return scratch;
}

absl::Status DenseGradientOutput::Finish() {
  for (const Pending& p : pending_) {
    RETURN_IF_ERROR(arrays_.Download(
        p.data, absl::MakeSpan((*gradients_)[p.variable].dense)));
  }
  pending_.clear();
  return absl::OkStatus();
}

}  // namespace distrt
