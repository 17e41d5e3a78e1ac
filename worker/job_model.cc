#include "worker/job_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/models/model_registry.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

absl::StatusOr<InputFormatOptions> FormatFor(
    const WorkerOptions& options, const std::vector<std::string>& files) {
  InputFormatOptions format;
  std::string name = options.data_format;
  if (name.empty()) {
    name = absl::EndsWith(files.front(), ".csv") ? "csv" : "libsvm";
  }
  ASSIGN_OR_RETURN(InputFormat parsed, ParseInputFormat(name));
  format.format = parsed;
  return format;
}

// Every record of every file.
InputShard WholeInput(std::vector<std::string> files) {
  InputShard all;
  all.files = std::move(files);
  return all;
}

// Whether the model takes the examples' sparse features as they are (ids
// naming rows of its sparse variables), rather than as a dense row of
// num_features.
bool TakesSparseFeatures(const Model& model) {
  for (const ModelVariable& v : model.variables()) {
    if (v.kind != ModelVariable::Kind::kDense) return true;
  }
  return false;
}

// The built-in sparse models, before they exist (for inferring shapes).
bool IsBuiltInSparseModel(absl::string_view name) {
  return name == "logreg" || name == "wide_deep";
}

absl::Status CheckBinaryLabel(float label, absl::string_view why) {
  if (label == 0.0f || label == 1.0f) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("label ", label, " is not 0 or 1 (", why, ")"));
}

absl::Status CheckClassId(float label, int num_classes, absl::string_view why) {
  if (label >= 0.0f && label < static_cast<float>(num_classes) &&
      label == std::floor(label)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "label ", label, " is not a class id in [0, ", num_classes, ")", why));
}

// Whether the model trains on `label` (readers let only finite labels
// through): what its output takes. The models check their batches the same
// way (model_inputs.h).
absl::Status CheckLabelForModel(const ModelConfig& config, const Model& model,
                                float label) {
  const bool torchscript = config.name == "torchscript";
  switch (model.output()) {
    case ModelOutput::kBinary:
      return CheckBinaryLabel(
          label, torchscript
                     ? std::string("--loss=sigmoid_cross_entropy")
                     : absl::StrCat(config.name, " is a binary classifier"));
    case ModelOutput::kMulticlass:
      return CheckClassId(
          label, model.outputs_per_example(),
          torchscript ? " (the module's outputs, --loss=softmax_cross_entropy)"
                      : "");
    case ModelOutput::kRegression:
      break;
  }
  return absl::OkStatus();
}

// Feature and class counts from all of the training data, so every task
// derives the same model whatever its shard.
absl::Status InferShapes(const std::vector<Example>& all, ModelConfig* config) {
  const std::string& model = config->name;
  int64_t features = 0;
  float max_label = 0;
  for (const Example& e : all) {
    // Dense models take LIBSVM rows too (FitExamplesToModel).
    // (An id of INT64_MAX, which a hashed feature may be, stays the bound.)
    if (!e.ids.empty()) {
      const int64_t id = e.ids.back();
      features = std::max(
          features, id < std::numeric_limits<int64_t>::max() ? id + 1 : id);
    }
    if (!IsBuiltInSparseModel(model)) {
      features = std::max<int64_t>(features, e.dense.size());
    }
    max_label = std::max(max_label, e.label);
  }
  if (config->num_features == 0) config->num_features = features;
  if (model == "mlp" && config->num_classes == 0) {
    config->num_classes = std::max(2, static_cast<int>(max_label) + 1);
  }
  if (config->num_features == 0) {
    return absl::InvalidArgumentError(
        "--train_data holds no features; check the files and --data_format");
  }
  return absl::OkStatus();
}

// The model --model names, from ModelRegistry: a built-in, the user's
// TorchScript module, or one a program linked in.
absl::StatusOr<std::unique_ptr<Model>> CreateJobModel(ModelConfig* config) {
  if (config->name != "torchscript" &&
      (!config->torchscript_file.empty() || !config->loss.empty())) {
    return absl::InvalidArgumentError(
        "--torchscript_file and --loss are for --model=torchscript");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                   ModelRegistry::Global().Create(*config));
  if (model->output() == ModelOutput::kMulticlass) {
    config->num_classes = model->outputs_per_example();
  }
  return model;
}

absl::StatusOr<std::vector<std::string>> ExpandFlagFiles(
    absl::string_view flag, const std::string& spec) {
  absl::StatusOr<std::vector<std::string>> files = ExpandInputFiles(spec);
  if (!files.ok()) {
    return absl::Status(files.status().code(),
                        absl::StrCat(flag, ": ", files.status().message()));
  }
  return files;
}

}  // namespace

absl::StatusOr<JobModel> BuildJobModel(const WorkerOptions& options) {
  JobModel job;
  ASSIGN_OR_RETURN(std::vector<std::string> files,
                   ExpandFlagFiles("--train_data", options.train_data));
  job.train_files = std::move(files);
  ASSIGN_OR_RETURN(InputFormatOptions format,
                   FormatFor(options, job.train_files));
  job.format = format;

  ModelConfig& config = job.config;
  config.name = options.model;
  config.num_features = options.num_features;
  config.num_classes = options.num_classes;
  ASSIGN_OR_RETURN(std::vector<int> hidden_units,
                   ParseHiddenUnits(options.hidden_units));
  config.hidden_units = std::move(hidden_units);
  config.embedding_dim = options.embedding_dim;
  config.seed = options.seed;
  RETURN_IF_ERROR(MakeOptimizerConfig(options, &config.optimizer));
  if (options.num_features == 0 ||
      (options.model == "mlp" && options.num_classes == 0)) {
    ASSIGN_OR_RETURN(std::vector<Example> read,
                     ReadInputShard(WholeInput(job.train_files), job.format));
    job.all_examples = std::move(read);
    RETURN_IF_ERROR(InferShapes(job.all_examples, &config));
  }
  config.torchscript_file = options.torchscript_file;
  config.loss = options.loss;
  // Replicas step at once; together their threads fill the cores.
  const int cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  config.threads_per_replica =
      std::max(1, cores / std::max(1, options.num_cpu_replicas));
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, CreateJobModel(&config));
  job.model = std::move(model);
  if (config.name == "torchscript" && TakesSparseFeatures(*job.model) &&
      format.format == InputFormat::kCsv) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--torchscript_file=", config.torchscript_file,
        ": the module has embedding tables, which are looked up by feature "
        "id; CSV rows have no ids (give LIBSVM data)"));
  }
  RETURN_IF_ERROR(FitExamplesToModel(config, *job.model, "--train_data",
                                     job.train_files, &job.all_examples));
  return job;
}

absl::Status FitExamplesToModel(const ModelConfig& config, const Model& model,
                                absl::string_view what,
                                const std::vector<std::string>& files,
                                std::vector<Example>* examples) {
  const bool sparse = TakesSparseFeatures(model);
  for (size_t i = 0; i < examples->size(); ++i) {
    Example& e = (*examples)[i];
    const auto refused = [&](absl::string_view why) {
      const bool located = e.file >= 0 &&
                           static_cast<size_t>(e.file) < files.size() &&
                           e.line > 0;
      return absl::InvalidArgumentError(
          located ? absl::StrCat(files[e.file], ":", e.line, ": ", why)
                  : absl::StrCat(what, ": example ", i, ": ", why));
    };
    if (absl::Status s = CheckLabelForModel(config, model, e.label); !s.ok()) {
      return refused(s.message());
    }
    if (sparse || !e.dense.empty() || e.ids.empty()) {
      continue;
    }
    if (e.ids.back() >= config.num_features) {
      return refused(absl::StrCat(
          "feature id ", e.ids.back() + 1, " (1-based) but the model has ",
          config.num_features,
          " features (--num_features, or the training data's largest id)"));
    }
    e.dense.assign(config.num_features, 0.0f);
    for (size_t k = 0; k < e.ids.size(); ++k) e.dense[e.ids[k]] = e.values[k];
    e.ids.clear();
    e.values.clear();
  }
  return absl::OkStatus();
}

absl::StatusOr<LocalDevices> CreateTaskDevices(const WorkerOptions& options) {
  LocalDevicesOptions device_options;
  if (absl::Status s = ParseDeviceSelection(options.devices, &device_options);
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--devices: ", s.message()));
  }
  device_options.num_cpu_devices = options.num_cpu_replicas;
  if (options.model != "torchscript" || !device_options.use_gpus) {
    return CreateLocalDevices(device_options);
  }
  // --devices=auto: LibTorch computes on the host (ValidateOptions refuses
  // --devices=gpu), so GPUs would only add copies.
  device_options.use_gpus = false;
  ASSIGN_OR_RETURN(LocalDevices devices, CreateLocalDevices(device_options));
  devices.description = absl::StrCat(
      "--model=torchscript computes on CPU devices (Debian's LibTorch has no "
      "CUDA); ",
      devices.description);
  return devices;
}

absl::StatusOr<std::vector<Example>> ReadEvalData(
    const WorkerOptions& options, const ModelConfig& config,
    const InputFormatOptions& format, const Model& model) {
  ASSIGN_OR_RETURN(std::vector<std::string> files,
                   ExpandFlagFiles("--eval_data", options.eval_data));
  absl::StatusOr<std::vector<Example>> examples =
      ReadInputShard(WholeInput(files), format);
  RETURN_IF_ERROR(examples.status());
  RETURN_IF_ERROR(
      FitExamplesToModel(config, model, "--eval_data", files, &*examples));
  return examples;
}

}  // namespace distrt
