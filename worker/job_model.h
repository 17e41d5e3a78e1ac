#ifndef DISTRT_WORKER_JOB_MODEL_H_
#define DISTRT_WORKER_JOB_MODEL_H_

// JobModel: what every task of a job derives from the same flags in the same
// way, so that the chief, the workers and the evaluator build the same model
// (and so create, or restore, the same variables): the training files and
// their format, and the model, with its feature and class counts inferred
// from all of the training data when the flags leave them 0; and the local
// devices the flags ask for.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/input/example.h"
#include "runtime/input/input_files.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/models/model.h"
#include "runtime/models/model_config.h"
#include "worker/worker_options.h"

namespace distrt {

struct JobModel {
  // --train_data expanded (sorted, so every task shards them alike).
  std::vector<std::string> train_files;
  InputFormatOptions format;
  ModelConfig config;
  std::unique_ptr<Model> model;
  // Every training example, when they had to be read to infer the shapes;
  // empty otherwise.
  std::vector<Example> all_examples;
};

// Errors name the flag or the file (and line) at fault.
absl::StatusOr<JobModel> BuildJobModel(const WorkerOptions& options);

// Makes examples fit the model: a model with only dense variables (linear,
// mlp, a TorchScript module without embedding tables) reads LIBSVM files
// too, so an example given with sparse features becomes a dense row of
// config.num_features. Checks each label is one the model's output takes (0
// or 1 for a binary classifier, a class id for a multiclass one), so that
// bad data is reported
// before training starts. INVALID_ARGUMENT naming the example's file and line
// (its Example::file indexes `files`; `what`, the flag, when it has none)
// for a feature id beyond that or such a label.
absl::Status FitExamplesToModel(const ModelConfig& config, const Model& model,
                                absl::string_view what,
                                const std::vector<std::string>& files,
                                std::vector<Example>* examples);

// Every example of --eval_data, in the training data's `format`, fitted to
// `model` (made from `config`).
absl::StatusOr<std::vector<Example>> ReadEvalData(
    const WorkerOptions& options, const ModelConfig& config,
    const InputFormatOptions& format, const Model& model);

// --num_cpu_replicas CPU devices, or the GPUs with --devices=auto when they
// are usable (saying why not otherwise, in the devices' description).
absl::StatusOr<LocalDevices> CreateTaskDevices(const WorkerOptions& options);

}  // namespace distrt

#endif  // DISTRT_WORKER_JOB_MODEL_H_
