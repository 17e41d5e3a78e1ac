#include "runtime/models/loss_arrays.h"

#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<LossArrays> LossArrays::Make(DeviceArrays& arrays, int64_t n,
                                            int64_t outputs,
                                            bool with_gradients) {
  LossArrays made;
  absl::StatusOr<float*> predictions = arrays.Floats(n * outputs);
  if (!predictions.ok()) return predictions.status();
  made.predictions = *predictions;
  absl::StatusOr<float*> losses = arrays.Floats(n);
  if (!losses.ok()) return losses.status();
  made.losses = *losses;
  if (with_gradients) {
    absl::StatusOr<float*> d_logits = arrays.Floats(n * outputs);
    if (!d_logits.ok()) return d_logits.status();
    made.d_logits = *d_logits;
  }
  return made;
}

absl::StatusOr<LossArrays> LossArrays::OfSigmoidCrossEntropy(
    DeviceArrays& arrays, int64_t n, const float* logits, const float* labels,
    bool with_gradients) {
  absl::StatusOr<LossArrays> loss = Make(arrays, n, 1, with_gradients);
  if (!loss.ok()) return loss;
  RETURN_IF_ERROR(arrays.math().SigmoidCrossEntropy(
      n, logits, labels, loss->predictions, loss->losses, loss->d_logits));
  return loss;
}

absl::Status LossArrays::Finish(DeviceArrays& arrays, int64_t n,
                                int64_t outputs,
                                ModelStepResult* result) const {
  result->predictions.resize(n * outputs);
  RETURN_IF_ERROR(
      arrays.Download(predictions, absl::MakeSpan(result->predictions)));
  absl::StatusOr<double> loss_sum = arrays.SumOnHost(losses, n);
  if (!loss_sum.ok()) return loss_sum.status();
  result->loss_sum = *loss_sum;
  return absl::OkStatus();
}

}  // namespace distrt
