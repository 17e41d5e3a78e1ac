#include "runtime/torchscript/torchscript_model.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/torchscript/torchscript_plugin_api.h"

namespace distrt {
namespace {

constexpr char kPluginName[] = "libdistrt_torchscript.so";
constexpr char kPluginPathVariable[] = "DISTRT_TORCHSCRIPT_PLUGIN";

// Where the plugin may be: $DISTRT_TORCHSCRIPT_PLUGIN; beside this program
// (an installation); or, for a program in Bazel's output tree,
// runtime/torchscript/ below one of the directories above it.
std::vector<std::string> PluginCandidates() {
  if (const char* path = std::getenv(kPluginPathVariable);
      path != nullptr && path[0] != '\0') {
    return {path};
  }
  std::vector<std::string> candidates;
  char exe[PATH_MAX];
  if (realpath("/proc/self/exe", exe) == nullptr) return candidates;
  std::string dir = exe;
  dir = dir.substr(0, dir.rfind('/'));
  candidates.push_back(absl::StrCat(dir, "/", kPluginName));
  for (int up = 0; up < 6 && !dir.empty(); ++up) {
    candidates.push_back(
        absl::StrCat(dir, "/runtime/torchscript/", kPluginName));
    dir = dir.substr(0, dir.rfind('/'));
  }
  return candidates;
}

absl::StatusOr<const DistrtTorchScriptApi*> LoadPlugin() {
  const std::vector<std::string> candidates = PluginCandidates();
  for (const std::string& path : candidates) {
    if (access(path.c_str(), F_OK) != 0) continue;
    void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (plugin == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--model=torchscript: cannot load ", path, ": ", dlerror(),
          " (LibTorch comes from Debian's libtorch-dev: tools/setup.sh)"));
    }
    using ApiFn = const DistrtTorchScriptApi* (*)();
    auto api_fn =
        reinterpret_cast<ApiFn>(dlsym(plugin, "distrt_torchscript_api"));
    const DistrtTorchScriptApi* api = api_fn != nullptr ? api_fn() : nullptr;
    if (api == nullptr || api->version != kDistrtTorchScriptApiVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--model=torchscript: ", path,
          " is not this version's TorchScript plugin (rebuild it with the "
          "worker)"));
    }
    return api;  // the plugin stays loaded for the life of the process
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "--model=torchscript needs the TorchScript plugin ", kPluginName,
      " (bazel build //runtime/torchscript:", kPluginName,
      "), beside the program or named by $", kPluginPathVariable,
      "; looked at: ", absl::StrJoin(candidates, ", ")));
}

// Loaded once, when the first TorchScript model is.
absl::StatusOr<const DistrtTorchScriptApi*> Plugin() {
  static const auto* const plugin =
      new absl::StatusOr<const DistrtTorchScriptApi*>(LoadPlugin());
  return *plugin;
}

// The plugin's error message, freed.
std::string TakeError(const DistrtTorchScriptApi* api, char* error) {
  std::string message = error != nullptr ? error : "unknown error";
  api->free_error(error);
  return message;
}

class TorchScriptModel : public Model {
 public:
  TorchScriptModel(TorchScriptModelConfig config,
                   const DistrtTorchScriptApi* api, void* module,
                   std::vector<ModelVariable> variables, int outputs)
      : config_(std::move(config)),
        api_(api),
        module_(module),
        variables_(std::move(variables)),
        outputs_(outputs) {}
  ~TorchScriptModel() override { api_->free_module(module_); }

  std::string name() const override { return "torchscript"; }
  const std::vector<ModelVariable>& variables() const override {
    return variables_;
  }
  ModelOutput output() const override {
    switch (config_.loss) {
      case TorchScriptLoss::kSoftmaxCrossEntropy:
        return ModelOutput::kMulticlass;
      case TorchScriptLoss::kSigmoidCrossEntropy:
        return ModelOutput::kBinary;
      case TorchScriptLoss::kMeanSquaredError:
        return ModelOutput::kRegression;
    }
    return ModelOutput::kRegression;
  }
  int outputs_per_example() const override {
    return config_.loss == TorchScriptLoss::kSoftmaxCrossEntropy ? outputs_ : 1;
  }

  absl::Status SparseIds(
      const Batch& batch,
      std::vector<std::vector<int64_t>>* ids) const override {
    ids->assign(variables_.size(), {});
    return absl::OkStatus();
  }

  absl::Status ComputeOn(Device& device, const Batch& batch,
                         absl::Span<const VariableSlice> values,
                         bool with_gradients,
                         const DenseGradientBuffer* dense_gradients,
                         ModelStepResult* result) const override {
    if (absl::Status s = CheckInputs(batch, values); !s.ok()) return s;
    std::vector<const float*> parameters;
    for (const VariableSlice& slice : values) {
      parameters.push_back(slice.dense.data());
    }
    result->loss_sum = 0;
    result->predictions.assign(batch.size * outputs_per_example(), 0.0f);
    result->gradients.clear();
    std::vector<float*> gradients;
    if (with_gradients) {
      result->gradients.resize(variables_.size());
      for (size_t i = 0; i < variables_.size(); ++i) {
        result->gradients[i].dense.assign(values[i].dense.size(), 0.0f);
        gradients.push_back(result->gradients[i].dense.data());
      }
    }
    // A replica without examples this step (the last, short one) still
    // takes part in the gradient all-reduce, with the zeros above; the
    // module is not run (batch norm, for one, refuses an empty batch in
    // training).
    char* error = nullptr;
    if (batch.size > 0 &&
        api_->step(module_, static_cast<int>(config_.loss), batch.dense.data(),
                   batch.size, batch.labels.data(), parameters.data(),
                   with_gradients ? 1 : 0, &result->loss_sum,
                   result->predictions.data(), gradients.data(), &error) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript model ", config_.path, ": ", TakeError(api_, error)));
    }
    if (!with_gradients || dense_gradients == nullptr) {
      return absl::OkStatus();
    }
    // The caller wants the gradients in one buffer in the device's memory.
    for (size_t i = 0; i < variables_.size(); ++i) {
      std::vector<float>& grad = result->gradients[i].dense;
      if (absl::Status s = device.allocator()->CopyFromHost(
              grad.data(), dense_gradients->base + dense_gradients->offsets[i],
              grad.size() * sizeof(float));
          !s.ok()) {
        return s;
      }
      grad.clear();
    }
    return absl::OkStatus();
  }

 private:
  // What LibTorch would otherwise meet as out-of-range memory or a class id
  // beyond the logits.
  absl::Status CheckInputs(const Batch& batch,
                           absl::Span<const VariableSlice> values) const {
    if (values.size() != variables_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript model: ", values.size(), " variable values for ",
          variables_.size(), " variables"));
    }
    for (size_t i = 0; i < variables_.size(); ++i) {
      const size_t want = variables_[i].initial_values.size();
      if (values[i].dense.size() != want) {
        return absl::InvalidArgumentError(absl::StrCat(
            "torchscript model: ", values[i].dense.size(), " values for ",
            variables_[i].name(), ", which has ", want));
      }
    }
    const int64_t n = config_.num_features;
    if (batch.size > 0 &&
        (batch.num_dense != n ||
         static_cast<int64_t>(batch.dense.size()) != batch.size * n)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript model: examples have ", batch.num_dense,
          " dense features, the model takes ", n, " (--num_features)"));
    }
    if (static_cast<int64_t>(batch.labels.size()) != batch.size) {
      return absl::InvalidArgumentError(
          absl::StrCat("torchscript model: ", batch.labels.size(),
                       " labels for a batch of ", batch.size));
    }
    if (config_.loss == TorchScriptLoss::kSoftmaxCrossEntropy) {
      for (float label : batch.labels) {
        if (!(label >= 0 && label < outputs_) || label != std::floor(label)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "torchscript model: label ", label,
              "; softmax_cross_entropy needs labels that are class ids in "
              "[0, ",
              outputs_, ")"));
        }
      }
    }
    return absl::OkStatus();
  }

  const TorchScriptModelConfig config_;
  const DistrtTorchScriptApi* const api_;
  void* const module_;
  const std::vector<ModelVariable> variables_;
  const int outputs_;
};

}  // namespace

absl::StatusOr<TorchScriptLoss> ParseTorchScriptLoss(absl::string_view name) {
  if (name == "softmax_cross_entropy") {
    return TorchScriptLoss::kSoftmaxCrossEntropy;
  }
  if (name == "sigmoid_cross_entropy") {
    return TorchScriptLoss::kSigmoidCrossEntropy;
  }
  if (name == "mean_squared_error") return TorchScriptLoss::kMeanSquaredError;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown loss \"", name,
      "\" (expected softmax_cross_entropy, sigmoid_cross_entropy or "
      "mean_squared_error)"));
}

absl::string_view TorchScriptLossName(TorchScriptLoss loss) {
  switch (loss) {
    case TorchScriptLoss::kSoftmaxCrossEntropy:
      return "softmax_cross_entropy";
    case TorchScriptLoss::kSigmoidCrossEntropy:
      return "sigmoid_cross_entropy";
    case TorchScriptLoss::kMeanSquaredError:
      return "mean_squared_error";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<Model>> LoadTorchScriptModel(
    const TorchScriptModelConfig& config) {
  const std::string where = absl::StrCat("--torchscript_file=", config.path);
  if (config.num_features < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("torchscript model: --num_features must be >= 1, not ",
                     config.num_features));
  }
  absl::StatusOr<const DistrtTorchScriptApi*> api = Plugin();
  if (!api.ok()) return api.status();
  DistrtTorchScriptModuleInfo info{};
  char* error = nullptr;
  void* module =
      (*api)->load(config.path.c_str(), config.num_features, &info, &error);
  if (module == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", TakeError(*api, error)));
  }
  // Freed with the model, or here on any error below.
  struct Owner {
    const DistrtTorchScriptApi* api;
    void* module;
    ~Owner() {
      if (module != nullptr) api->free_module(module);
    }
  } owner{*api, module};

  std::vector<ModelVariable> variables;
  for (int i = 0; i < info.num_parameters; ++i) {
    const DistrtTorchScriptParameter& p = info.parameters[i];
    if (!p.is_float32) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": parameter ", p.name, " is ", p.dtype,
                       "; parameters must be float32"));
    }
    ModelVariable v;
    v.kind = ModelVariable::Kind::kDense;
    v.spec.name = p.name;
    v.spec.shape.assign(p.shape, p.shape + p.rank);
    v.spec.optimizer = config.optimizer;
    v.partition = config.partition;
    v.initial_values.assign(p.values, p.values + p.numel);
    variables.push_back(std::move(v));
  }
  if (variables.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the module has no parameters to train"));
  }
  const int outputs = info.outputs;
  if (config.loss == TorchScriptLoss::kSoftmaxCrossEntropy && outputs < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        where,
        ": softmax_cross_entropy needs at least 2 outputs (one per class); "
        "forward returns ",
        outputs));
  }
  if (config.loss != TorchScriptLoss::kSoftmaxCrossEntropy && outputs != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", TorchScriptLossName(config.loss),
                     " needs 1 output per example; forward returns ", outputs));
  }
  auto model = std::make_unique<TorchScriptModel>(
      config, *api, module, std::move(variables), outputs);
  owner.module = nullptr;
  return model;
}

}  // namespace distrt
