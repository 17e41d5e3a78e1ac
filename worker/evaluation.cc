#include "worker/evaluation.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/distribute/distributed_dataset.h"
#include "runtime/input/input_context.h"
#include "runtime/models/metrics.h"
#include "runtime/training/train_step.h"
#include "runtime/util/status_macros.h"

namespace distrt {

namespace {

// Evaluation is this process's alone (the chief's, or the evaluator's): a
// step is global_batch_size examples over its own replicas, whatever the
// workers of the training job.
InputContext LocalInputContext(const Strategy& strategy) {
  InputContext context;
  context.num_replicas_in_sync = strategy.num_local_replicas();
  return context;
}

}  // namespace

absl::StatusOr<Evaluation> Evaluate(Strategy& strategy, const Model& model,
                                    const ModelVariables& variables,
                                    const EvalData& data,
                                    int64_t global_batch_size,
                                    FinalMetrics* metrics) {
  // Every example once, in file order: no shuffle, no sharding (this
  // process evaluates alone), one file at a time.
  DistributeFilesOptions options;
  options.auto_shard = AutoShardPolicy::kOff;
  options.pipeline.num_epochs = 1;
  options.pipeline.shuffle = false;
  options.pipeline.cycle_length = 1;
  absl::StatusOr<std::unique_ptr<InputPipeline>> distributed =
      DistributeFileShard(LocalInputContext(strategy),
                          strategy.num_local_replicas(), data.files,
                          data.records, global_batch_size, options);
  if (!distributed.ok()) {
    return absl::Status(
        distributed.status().code(),
        absl::StrCat("--global_batch_size: ", distributed.status().message()));
  }
  std::unique_ptr<InputPipeline> pipeline = *std::move(distributed);
  Metrics eval(model.output(), model.outputs_per_example());
  std::vector<float> labels, predictions;
  while (true) {
    absl::StatusOr<InputStep> step = pipeline->Next();
    if (absl::IsOutOfRange(step.status())) break;
    RETURN_IF_ERROR(step.status());
    ASSIGN_OR_RETURN(StepResult result,
                     EvaluateStep(strategy, model, variables, step->replicas));
    labels.clear();
    predictions.clear();
    for (size_t r = 0; r < step->replicas.size(); ++r) {
      const Batch& batch = step->replicas[r];
      labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
      predictions.insert(predictions.end(), result.predictions[r].begin(),
                         result.predictions[r].end());
    }
    RETURN_IF_ERROR(eval.Add(labels, predictions, result.loss_sum));
  }
  metrics->eval_loss = eval.mean_loss();
  if (model.output() == ModelOutput::kRegression) {
    metrics->eval_rmse = eval.rmse();
  } else {
    metrics->eval_accuracy = eval.accuracy();
  }
  if (model.output() == ModelOutput::kBinary) metrics->eval_auc = eval.auc();
  return Evaluation{eval.count(), eval.ToString()};
}

std::vector<std::pair<std::string, double>> EvalScalars(
    const FinalMetrics& metrics) {
  std::vector<std::pair<std::string, double>> scalars;
  auto add = [&](const char* tag, const std::optional<double>& value) {
    if (value.has_value() && std::isfinite(*value)) {
      scalars.emplace_back(tag, *value);
    }
  };
  add("eval/loss", metrics.eval_loss);
  add("eval/accuracy", metrics.eval_accuracy);
  add("eval/auc", metrics.eval_auc);
  add("eval/rmse", metrics.eval_rmse);
  return scalars;
}

}  // namespace distrt
