#ifndef DISTRT_RUNTIME_TRAINING_TRAIN_STEP_H_
#define DISTRT_RUNTIME_TRAINING_TRAIN_STEP_H_

// One synchronous training step over a strategy's replicas, the loop body
// of a worker:
//
//   1. every replica reads the values its batch needs (whole dense
//      variables; only the rows of the ids its batch uses for row-sparse
//      variables and hash embeddings), computes loss and gradients;
//   2. dense gradients, the loss and the example count are all-reduced in
//      one collective; sparse gradients are gathered from every replica;
//   3. gradients are divided by the step's total examples (the global batch
//      size), so a step gives the same update on one device as split over
//      many, and applied once per variable copy (each mirror, the central
//      copy, or one push per worker to the parameter servers);
//   4. the global step is incremented once (on parameter servers in the
//      same round of requests as the updates; after the hash tables'
//      pushes where the model has some).
//
// A step whose batches are all empty changes nothing.

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/distribute/strategy.h"
#include "runtime/input/batch.h"
#include "runtime/models/model.h"
#include "runtime/training/model_variables.h"

namespace distrt {

struct StepResult {
  int64_t examples = 0;  // over all replicas
  double loss_sum = 0;   // over all replicas' examples
  // Per replica: the model's predictions for its batch, before the update.
  std::vector<std::vector<float>> predictions;
  // TrainStep: the global step its increment left (every worker's steps up
  // to this one), learnt with the increment itself; none when the step had
  // no examples (no increment) or for EvaluateStep.
  std::optional<int64_t> global_step;

  double mean_loss() const { return examples > 0 ? loss_sum / examples : 0; }
};

// `batches` holds one batch per local replica (strategy.num_local_replicas()).
absl::StatusOr<StepResult> TrainStep(Strategy& strategy, const Model& model,
                                     const ModelVariables& variables,
                                     absl::Span<const Batch> batches);

// The forward pass only (evaluation): loss and predictions, no update.
absl::StatusOr<StepResult> EvaluateStep(Strategy& strategy, const Model& model,
                                        const ModelVariables& variables,
                                        absl::Span<const Batch> batches);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TRAINING_TRAIN_STEP_H_
