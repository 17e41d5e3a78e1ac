#ifndef DISTRT_RUNTIME_MODELS_LOSS_ARRAYS_H_
#define DISTRT_RUNTIME_MODELS_LOSS_ARRAYS_H_

// LossArrays: a loss's per-example arrays on the device, as every model's
// ComputeOn fills them: what the model predicts (probabilities, or the
// regression values), the losses, and d loss / d logits when gradients are
// wanted. Finish brings the predictions and the loss sum to the result.

#include <cstdint>

#include "absl/status/statusor.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/model.h"

namespace distrt {

struct LossArrays {
  float* predictions = nullptr;  // n * outputs
  float* losses = nullptr;       // n
  float* d_logits = nullptr;     // n * outputs; null without gradients

  // For n examples of `outputs` values each.
  static absl::StatusOr<LossArrays> Make(DeviceArrays& arrays, int64_t n,
                                         int64_t outputs, bool with_gradients);
  // The binary cross-entropy of n logits against 0/1 labels (both on the
  // device): probabilities, losses, and d loss / d logit when wanted.
  static absl::StatusOr<LossArrays> OfSigmoidCrossEntropy(DeviceArrays& arrays,
                                                          int64_t n,
                                                          const float* logits,
                                                          const float* labels,
                                                          bool with_gradients);

  // Sets result->predictions and result->loss_sum (the losses summed in
  // double); waits for the device.
  absl::Status Finish(DeviceArrays& arrays, int64_t n, int64_t outputs,
                      ModelStepResult* result) const;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_LOSS_ARRAYS_H_
