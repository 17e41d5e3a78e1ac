#ifndef DISTRT_WORKER_JOB_MODEL_H_
#define DISTRT_WORKER_JOB_MODEL_H_

// JobModel: what every task of a job derives from the same flags in the same
// way, so that the chief, the workers and the evaluator build the same model
// (and so create, or restore, the same variables): the training files and
// how they are read (their RecordFormat, with the feature spec of
// --features), and the model, with its shapes from the feature spec or,
// when the flags leave them 0, from one streaming pass over all of the
// training data; and the local devices the flags ask for.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/example.h"
#include "runtime/input/input_files.h"
#include "runtime/input/record_reader.h"
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
  std::shared_ptr<Model> model;
  // How the input pipeline reads --train_data and --eval_data: `format`,
  // each example fitted to the model as it is parsed (LIBSVM rows
  // become dense rows for a dense model; labels checked against its output).
  std::shared_ptr<const RecordFormat> records;
};

// Errors name the flag or the file (and line) at fault. `log` (may be
// unset) hears of a pass over the data to infer shapes.
absl::StatusOr<JobModel> BuildJobModel(
    const WorkerOptions& options,
    const std::function<void(absl::string_view)>& log = nullptr);

// --eval_data expanded, each file opened once to check it can be read (a
// missing file, a CSV header without the spec's columns), so that a mistake
// is found before training rather than at the end.
absl::StatusOr<std::vector<std::string>> CheckEvalData(
    const WorkerOptions& options, const RecordFormat& records);

// --num_cpu_replicas CPU devices, or the GPUs with --devices=auto when they
// are usable (saying why not otherwise, in the devices' description).
absl::StatusOr<LocalDevices> CreateTaskDevices(const WorkerOptions& options);

}  // namespace distrt

#endif  // DISTRT_WORKER_JOB_MODEL_H_
