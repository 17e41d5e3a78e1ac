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
#include "runtime/training/read_ahead.h"

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

// TrainStep with read-ahead (read_ahead.h): each replica computes with the
// values `read_ahead` read for its batch during the step before, where it
// read exactly that batch's ids (else it reads them now, as TrainStep
// does), and while this step's updates go to the ps tasks, it starts
// reading for its batch of `next_batches` (one per replica; empty when no
// step follows). Under ParameterServerStrategy only (CheckReadAhead);
// `read_ahead` has one slot per local replica, and `strategy`, `model` and
// `variables` must outlive it (its reads go on after the step returns).
// Values read ahead are as the ps tasks held them during the step before:
// an Assign or restore the caller makes between steps is not in them.
// Without read-ahead: `read_ahead` null, `next_batches` empty.
//
// `global_step`: the global step as the caller knows it before this step
// (the step before's StepResult::global_step, or the one read when
// training began); -1: unknown. The hash tables' pushes carry it, by which
// a table ages its rows (TablePolicy's ttl_steps).
absl::StatusOr<StepResult> TrainStep(Strategy& strategy, const Model& model,
                                     const ModelVariables& variables,
                                     absl::Span<const Batch> batches,
                                     ReadAhead* read_ahead,
                                     absl::Span<const Batch> next_batches,
                                     int64_t global_step = -1);

// INVALID_ARGUMENT unless `strategy` keeps its variables on ps tasks, the
// only place where read-ahead has round trips to overlap (under mirrored
// strategies it would only make sync training stale).
absl::Status CheckReadAhead(const Strategy& strategy);

// The forward pass only (evaluation): loss and predictions, no update.
absl::StatusOr<StepResult> EvaluateStep(Strategy& strategy, const Model& model,
                                        const ModelVariables& variables,
                                        absl::Span<const Batch> batches);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TRAINING_TRAIN_STEP_H_
