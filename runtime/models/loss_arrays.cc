#include "runtime/models/loss_arrays.h"

#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<LossArrays> LossArrays::Make(DeviceArrays& arrays, int64_t n,
                                            int64_t outputs,
                                            bool with_gradients) {
  LossArrays made;
  ASSIGN_OR_RETURN(float* predictions, arrays.Floats(n * outputs));
  made.predictions = predictions;
  ASSIGN_OR_RETURN(float* losses, arrays.Floats(n));
  made.losses = losses;
  if (with_gradients) {
    ASSIGN_OR_RETURN(float* d_logits, arrays.Floats(n * outputs));
    made.d_logits = d_logits;
  }
  return made;
}

absl::StatusOr<LossArrays> LossArrays::OfSigmoidCrossEntropy(
    DeviceArrays& arrays, int64_t n, const float* logits, const float* labels,
    bool with_gradients) {
  absl::StatusOr<LossArrays> loss = Make(arrays, n, 1, with_gradients);
  RETURN_IF_ERROR(loss.status());
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
  ASSIGN_OR_RETURN(double loss_sum, arrays.SumOnHost(losses, n));
  result->loss_sum = loss_sum;
  return absl::OkStatus();
}

}  // namespace distrt
