#ifndef DISTRT_WORKER_EVALUATION_H_
#define DISTRT_WORKER_EVALUATION_H_

// The input pipeline a task feeds its strategy with, and evaluation: one
// pass over examples with the variables as they are, giving the eval_*
// fields of FinalMetrics. Used by the chief at the end of training and by
// the evaluator for each checkpoint.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/distribute/strategy.h"
#include "runtime/input/example.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_pipeline.h"
#include "runtime/input/record_reader.h"
#include "runtime/models/model.h"
#include "runtime/training/model_variables.h"
#include "worker/final_metrics.h"

namespace distrt {

struct Evaluation {
  int64_t examples = 0;
  // "accuracy 0.8712 auc 0.9301 loss 0.3012", for the log.
  std::string description;
};

// The evaluation data: files, and how to read them (JobModel::records).
struct EvalData {
  std::vector<std::string> files;
  std::shared_ptr<const RecordFormat> records;
};

// Evaluates every example of `data` once, in order (streamed: one step in
// memory at a time), and sets metrics->eval_loss and the eval metrics that
// apply to the model's output (accuracy and, for binary classifiers, AUC;
// RMSE for regression).
absl::StatusOr<Evaluation> Evaluate(Strategy& strategy, const Model& model,
                                    const ModelVariables& variables,
                                    const EvalData& data,
                                    int64_t global_batch_size,
                                    FinalMetrics* metrics);

// The eval metrics of `metrics` that are set (and finite), as summary
// scalars named "eval/loss", "eval/accuracy", "eval/auc", "eval/rmse".
std::vector<std::pair<std::string, double>> EvalScalars(
    const FinalMetrics& metrics);

}  // namespace distrt

#endif  // DISTRT_WORKER_EVALUATION_H_
