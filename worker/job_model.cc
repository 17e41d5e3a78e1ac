#include "worker/job_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/input/feature_spec.h"
#include "runtime/input/mapped_record_format.h"
#include "runtime/input/tfrecord_reader.h"
#include "runtime/models/model_registry.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// How --train_data is read: --data_format (or the first file's name),
// --compression, and the feature spec.
absl::StatusOr<InputFormatOptions> FormatFor(
    const WorkerOptions& options, const std::vector<std::string>& files,
    std::shared_ptr<const FeatureSpec> spec) {
  InputFormatOptions format;
  if (options.data_format.empty()) {
    format.format = InputFormatForPath(files.front());
  } else {
    absl::StatusOr<InputFormat> named = ParseInputFormat(options.data_format);
    if (!named.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--data_format: ", named.status().message()));
    }
    format.format = *named;
  }
  if (options.compression != "auto") {
    absl::StatusOr<TfRecordCompression> compression =
        ParseTfRecordCompression(options.compression);
    if (!compression.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--compression: ", compression.status().message()));
    }
    format.compression = *compression;
  }
  // A spec maps CSV columns by the header's names.
  if (spec != nullptr && format.format == InputFormat::kCsv) {
    format.csv.has_header = true;
  }
  format.features = std::move(spec);
  return format;
}

// The feature spec of --features; null without one.
absl::StatusOr<std::shared_ptr<const FeatureSpec>> ReadSpecFlag(
    const WorkerOptions& options) {
  if (options.features.empty()) return nullptr;
  absl::StatusOr<FeatureSpec> spec = ReadFeatureSpec(options.features);
  if (!spec.ok()) {
    return absl::Status(spec.status().code(),
                        absl::StrCat("--features: ", spec.status().message()));
  }
  return std::make_shared<const FeatureSpec>(*std::move(spec));
}

// Whether `model` (a --model name) takes a feature spec's embedding
// groups; the others take its numeric features only.
bool TakesFeatureGroups(absl::string_view model) {
  return model == "wide_deep" || model == "torchscript";
}

absl::Status CheckSpecFitsModel(const FeatureSpec& spec,
                                absl::string_view model) {
  if (model == "logreg") {
    return absl::InvalidArgumentError(
        "--features: logreg takes LIBSVM feature ids, not a feature spec "
        "(use wide_deep, mlp, linear or torchscript)");
  }
  if (!spec.groups.empty() && !TakesFeatureGroups(model)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--features: the spec has embedding groups, which ", model,
                     " does not take (wide_deep and torchscript do)"));
  }
  if (spec.groups.empty() && spec.numeric.empty()) {
    return absl::InvalidArgumentError(
        "--features: the spec has no numeric features and no embedding "
        "groups: nothing to train on");
  }
  return absl::OkStatus();
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

// Feature and class counts from one pass over all of the training data
// (one example in memory at a time), so every task derives the same model
// whatever its shard.
absl::Status InferShapes(const std::vector<std::string>& files,
                         const RecordFormat& records, ModelConfig* config) {
  const std::string& model = config->name;
  int64_t features = 0;
  float max_label = 0;
  for (const std::string& file : files) {
    RETURN_IF_ERROR(ForEachExample(file, records, [&](const Example& e) {
      // Dense models take LIBSVM rows too (FitExample).
      // (An id of INT64_MAX, which a hashed feature may be, stays the
      // bound.)
      if (!e.ids.empty()) {
        const int64_t id = e.ids.back();
        features = std::max(
            features, id < std::numeric_limits<int64_t>::max() ? id + 1 : id);
      }
      if (!IsBuiltInSparseModel(model)) {
        features = std::max<int64_t>(features, e.dense.size());
      }
      max_label = std::max(max_label, e.label);
      return absl::OkStatus();
    }));
  }
  if (config->num_features == 0) config->num_features = features;
  if (model == "mlp" && config->num_classes == 0) {
    config->num_classes = std::max(2, static_cast<int>(max_label) + 1);
  }
  if (config->num_features == 0 && config->feature_spec == nullptr) {
    return absl::InvalidArgumentError(
        "--train_data holds no features; check the files and --data_format");
  }
  return absl::OkStatus();
}

// Makes one example fit the model, as the pipeline parses it: a model with
// only dense variables (`sparse` false: linear, mlp, a TorchScript module
// without embedding tables) reads LIBSVM files too, so an example given
// with sparse features becomes a dense row of config.num_features. Checks
// the label is one the model's output takes. INVALID_ARGUMENT saying what
// is wrong (the mapped format names the record).
absl::Status FitExample(const ModelConfig& config, const Model& model,
                        bool sparse, Example& e) {
  RETURN_IF_ERROR(CheckLabelForModel(config, model, e.label));
  if (sparse || !e.dense.empty() || e.ids.empty()) return absl::OkStatus();
  if (e.ids.back() >= config.num_features) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feature id ", e.ids.back() + 1, " (1-based) but the model has ",
        config.num_features,
        " features (--num_features, or the training data's largest id)"));
  }
  e.dense.assign(config.num_features, 0.0f);
  for (size_t k = 0; k < e.ids.size(); ++k) e.dense[e.ids[k]] = e.values[k];
  e.ids.clear();
  e.values.clear();
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

absl::StatusOr<JobModel> BuildJobModel(
    const WorkerOptions& options,
    const std::function<void(absl::string_view)>& log) {
  JobModel job;
  ASSIGN_OR_RETURN(std::vector<std::string> files,
                   ExpandFlagFiles("--train_data", options.train_data));
  job.train_files = std::move(files);
  ASSIGN_OR_RETURN(std::shared_ptr<const FeatureSpec> spec,
                   ReadSpecFlag(options));
  if (spec != nullptr) {
    RETURN_IF_ERROR(CheckSpecFitsModel(*spec, options.model));
  }
  ASSIGN_OR_RETURN(job.format, FormatFor(options, job.train_files, spec));
  absl::StatusOr<std::shared_ptr<const RecordFormat>> records =
      MakeRecordFormat(job.format);
  if (!records.ok()) {
    return absl::Status(
        records.status().code(),
        absl::StrCat("--train_data (", InputFormatName(job.format.format),
                     "): ", records.status().message()));
  }

  ModelConfig& config = job.config;
  config.name = options.model;
  config.num_features = options.num_features;
  config.num_classes = options.num_classes;
  ASSIGN_OR_RETURN(std::vector<int> hidden_units,
                   ParseHiddenUnits(options.hidden_units));
  config.hidden_units = std::move(hidden_units);
  config.embedding_dim = options.embedding_dim;
  config.seed = options.seed;
  config.feature_spec = spec;
  RETURN_IF_ERROR(MakeOptimizerConfig(options, &config.optimizer));
  // With a spec the dense width is the spec's (0 for a spec of embedding
  // groups only, which the models that take groups accept); only mlp's
  // class count may still need the labels.
  if (spec != nullptr && config.num_features == 0) {
    config.num_features = spec->num_dense();
  }
  if ((spec == nullptr && config.num_features == 0) ||
      (options.model == "mlp" && options.num_classes == 0)) {
    if (log) {
      log(absl::StrCat("reading all ", job.train_files.size(),
                       " training file(s) once to infer the model's shapes "
                       "(--num_features",
                       options.model == "mlp" ? " and --num_classes" : "",
                       " skip this)"));
    }
    RETURN_IF_ERROR(InferShapes(job.train_files, **records, &config));
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
  if (config.name == "torchscript" && spec == nullptr &&
      TakesSparseFeatures(*job.model) &&
      job.format.format == InputFormat::kCsv) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--torchscript_file=", config.torchscript_file,
        ": the module has embedding tables, which are looked up by feature "
        "id; CSV rows have no ids (give LIBSVM data, or a feature spec)"));
  }
  // Each example is fitted as the pipeline parses it. The model is shared
  // with the format, which may outlive this JobModel in a pipeline.
  std::shared_ptr<const Model> fitted_to = job.model;
  const bool sparse = TakesSparseFeatures(*fitted_to);
  job.records =
      MapRecords(*std::move(records), [fitted_to, sparse, config](Example& e) {
        return FitExample(config, *fitted_to, sparse, e);
      });
  return job;
}

absl::StatusOr<std::vector<std::string>> CheckEvalData(
    const WorkerOptions& options, const RecordFormat& records) {
  ASSIGN_OR_RETURN(std::vector<std::string> files,
                   ExpandFlagFiles("--eval_data", options.eval_data));
  for (const std::string& file : files) {
    absl::StatusOr<std::unique_ptr<RecordReader>> reader =
        records.Open(file, RecordPosition{});
    if (!reader.ok()) {
      return absl::Status(
          reader.status().code(),
          absl::StrCat("--eval_data: ", reader.status().message()));
    }
  }
  return files;
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

}  // namespace distrt
