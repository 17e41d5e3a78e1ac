#include "worker/evaluation.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/input/input_context.h"
#include "runtime/models/metrics.h"
#include "runtime/training/train_step.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<InputPipeline>> MakeInputPipeline(
    const InputContext& context, int num_local_replicas,
    int64_t global_batch_size, std::vector<Example> examples, int64_t epochs,
    bool shuffle, uint64_t seed) {
  absl::StatusOr<int64_t> per_replica =
      context.GetPerReplicaBatchSize(global_batch_size);
  if (!per_replica.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--global_batch_size: ", per_replica.status().message()));
  }
  InputPipeline::Options options;
  options.per_replica_batch_size = *per_replica;
  options.num_replicas = num_local_replicas;
  options.shuffle = shuffle;
  options.seed = seed;
  options.num_epochs = epochs;
  return InputPipeline::Create(std::move(examples), options);
}

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
                                    const std::vector<Example>& examples,
                                    int64_t global_batch_size,
                                    FinalMetrics* metrics) {
  ASSIGN_OR_RETURN(std::unique_ptr<InputPipeline> pipeline,
                   MakeInputPipeline(LocalInputContext(strategy),
                                     strategy.num_local_replicas(),
                                     global_batch_size, examples, /*epochs=*/1,
                                     /*shuffle=*/false, /*seed=*/0));
  Metrics eval(model.output(), model.outputs_per_example());
  std::vector<float> labels, predictions;
  while (true) {
    absl::StatusOr<InputStep> step = pipeline->Next();
    if (absl::IsOutOfRange(step.status())) break;
    if (!step.ok()) return step.status();
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
