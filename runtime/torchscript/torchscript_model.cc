#include "runtime/torchscript/torchscript_model.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/models/embedding_bag.h"
#include "runtime/models/model_inputs.h"
#include "runtime/models/model_registry.h"
#include "runtime/models/model_variables.h"
#include "runtime/torchscript/torchscript_plugin_api.h"
#include "runtime/util/status_macros.h"

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
  // `variables`: the module's parameters, then one hash embedding per
  // entry of `embedding_dims`.
  TorchScriptModel(TorchScriptModelConfig config,
                   const DistrtTorchScriptApi* api, void* module,
                   std::vector<ModelVariable> variables,
                   std::vector<int64_t> embedding_dims, int outputs)
      : config_(std::move(config)),
        api_(api),
        module_(module),
        variables_(std::move(variables)),
        embedding_dims_(std::move(embedding_dims)),
        num_parameters_(variables_.size() - embedding_dims_.size()),
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

  // Without groups, every table is looked up with all of an example's
  // feature ids; with groups, each group's table with the group's ids.
  absl::Status SparseIds(
      const Batch& batch,
      std::vector<std::vector<int64_t>>* ids) const override {
    ids->assign(variables_.size(), {});
    if (embedding_dims_.empty()) return absl::OkStatus();
    if (!config_.groups.empty()) {
      if (batch.size == 0) return absl::OkStatus();
      RETURN_IF_ERROR(CheckGroups(batch));
      for (size_t g = 0; g < config_.groups.size(); ++g) {
        (*ids)[num_parameters_ + g] = DistinctGroupIds(batch.groups[g]);
      }
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(CheckSparseIds(batch));
    const std::vector<int64_t> distinct = DistinctFeatureIds(batch);
    for (size_t i = num_parameters_; i < variables_.size(); ++i) {
      (*ids)[i] = distinct;
    }
    return absl::OkStatus();
  }

  absl::Status ComputeOn(Device& device, const Batch& batch,
                         absl::Span<const VariableSlice> values,
                         bool with_gradients,
                         const DenseGradientBuffer* dense_gradients,
                         ModelStepResult* result) const override {
    if (absl::Status s = CheckInputs(batch, values); !s.ok()) return s;
    std::vector<const float*> parameters;
    for (size_t i = 0; i < num_parameters_; ++i) {
      parameters.push_back(values[i].dense.data());
    }
    std::vector<std::vector<float>> pooled(embedding_dims_.size());
    std::vector<std::vector<float>> pooled_gradients(embedding_dims_.size());
    std::vector<const float*> embeddings;
    std::vector<float*> embedding_gradients;
    // With groups: how each group's ids map onto its table's rows, kept
    // for the gradients' scatter.
    std::vector<EmbeddingBags> bags;
    for (size_t t = 0; t < embedding_dims_.size(); ++t) {
      const VariableSlice& table = values[num_parameters_ + t];
      if (config_.groups.empty()) {
        RETURN_IF_ERROR(Pool(batch, embedding_dims_[t], table, &pooled[t]));
      } else if (batch.size > 0) {
        const TorchScriptGroup& group = config_.groups[t];
        ASSIGN_OR_RETURN(EmbeddingBags group_bags,
                         EmbeddingBags::Make(
                             batch.groups[t], batch.size, group.group.combiner,
                             table, embedding_dims_[t], group.group.name));
        pooled[t] = group_bags.Pool(table);
        bags.push_back(std::move(group_bags));
      }
      pooled_gradients[t].assign(pooled[t].size(), 0.0f);
      embeddings.push_back(pooled[t].data());
      embedding_gradients.push_back(pooled_gradients[t].data());
    }
    result->loss_sum = 0;
    result->predictions.assign(batch.size * outputs_per_example(), 0.0f);
    result->gradients.clear();
    std::vector<float*> gradients;
    if (with_gradients) {
      result->gradients.resize(variables_.size());
      for (size_t i = 0; i < num_parameters_; ++i) {
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
                   embeddings.data(), with_gradients ? 1 : 0, &result->loss_sum,
                   result->predictions.data(), gradients.data(),
                   embedding_gradients.data(), &error) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript model ", config_.path, ": ", TakeError(api_, error)));
    }
    if (!with_gradients) return absl::OkStatus();
    for (size_t t = 0; t < embedding_dims_.size(); ++t) {
      const size_t v = num_parameters_ + t;
      if (config_.groups.empty()) {
        Scatter(batch, embedding_dims_[t], values[v], pooled_gradients[t],
                &result->gradients[v]);
      } else if (batch.size > 0) {
        result->gradients[v] = bags[t].Scatter(values[v], pooled_gradients[t]);
      } else {
        result->gradients[v] = ZeroGradient(values[v]);
      }
    }
    if (dense_gradients == nullptr) return absl::OkStatus();
    return MoveDenseGradientsTo(device, *dense_gradients, variables_,
                                &result->gradients);
  }

 private:
  // Feature ids index hash tables: any id >= 0.
  static absl::Status CheckSparseIds(const Batch& batch) {
    for (int64_t id : batch.ids) {
      if (id < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("torchscript model: feature id ", id,
                         " is negative; embedding tables take ids >= 0"));
      }
    }
    return CheckSparseFeatures(batch, std::numeric_limits<int64_t>::max());
  }

  // One Batch::Group per group, each consistent and within its buckets.
  absl::Status CheckGroups(const Batch& batch) const {
    if (batch.groups.size() != config_.groups.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript model: examples have ", batch.groups.size(),
          " embedding groups, the feature spec ", config_.groups.size()));
    }
    for (size_t g = 0; g < config_.groups.size(); ++g) {
      const TorchScriptGroup& group = config_.groups[g];
      if (absl::Status s = CheckEmbeddingGroup(batch.groups[g], batch.size,
                                               group.buckets, group.group.name);
          !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("torchscript model: ", s.message()));
      }
    }
    return absl::OkStatus();
  }

  // Row k of `slice` for `id`, which SparseIds asked for.
  static absl::StatusOr<int64_t> RowOf(const VariableSlice& slice, int64_t id) {
    auto it = std::lower_bound(slice.ids.begin(), slice.ids.end(), id);
    if (it == slice.ids.end() || *it != id) {
      return absl::InvalidArgumentError(
          absl::StrCat("torchscript model: no embedding row for id ", id));
    }
    return it - slice.ids.begin();
  }

  // out[b] = sum over example b's features of value * the row of its id.
  static absl::Status Pool(const Batch& batch, int64_t dim,
                           const VariableSlice& table,
                           std::vector<float>* out) {
    out->assign(batch.size * dim, 0.0f);
    for (int64_t b = 0; b < batch.size; ++b) {
      float* pooled = out->data() + b * dim;
      for (int64_t k = batch.offsets[b]; k < batch.offsets[b + 1]; ++k) {
        ASSIGN_OR_RETURN(const int64_t row, RowOf(table, batch.ids[k]));
        const float* values = table.rows.data() + row * dim;
        const float weight = batch.values[k];
        for (int64_t d = 0; d < dim; ++d) pooled[d] += weight * values[d];
      }
    }
    return absl::OkStatus();
  }

  // Pool's gradient: each feature's row gets value * its example's pooled
  // gradient. Every id was found by Pool, so RowOf cannot fail here.
  static void Scatter(const Batch& batch, int64_t dim,
                      const VariableSlice& table,
                      const std::vector<float>& pooled_gradients,
                      VariableSlice* gradient) {
    gradient->ids = table.ids;
    gradient->rows.assign(table.rows.size(), 0.0f);
    for (int64_t b = 0; b < batch.size; ++b) {
      const float* pooled = pooled_gradients.data() + b * dim;
      for (int64_t k = batch.offsets[b]; k < batch.offsets[b + 1]; ++k) {
        const int64_t row = *RowOf(table, batch.ids[k]);
        float* rows = gradient->rows.data() + row * dim;
        const float weight = batch.values[k];
        for (int64_t d = 0; d < dim; ++d) rows[d] += weight * pooled[d];
      }
    }
  }

  // What LibTorch would otherwise meet as out-of-range memory or a class id
  // beyond the logits.
  absl::Status CheckInputs(const Batch& batch,
                           absl::Span<const VariableSlice> values) const {
    if (absl::Status s = CheckValues(variables_, values); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("torchscript model: ", s.message()));
    }
    const bool grouped = !config_.groups.empty();
    const int64_t n = grouped ? config_.num_dense : config_.num_features;
    if ((embedding_dims_.empty() || grouped) && batch.size > 0 &&
        (batch.num_dense != n ||
         static_cast<int64_t>(batch.dense.size()) != batch.size * n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("torchscript model: examples have ", batch.num_dense,
                       " dense features, the model takes ", n,
                       grouped ? " (the feature spec's numeric features)"
                               : " (--num_features)"));
    }
    if (grouped && batch.size > 0) {
      RETURN_IF_ERROR(CheckGroups(batch));
    } else if (!embedding_dims_.empty() && batch.size > 0) {
      RETURN_IF_ERROR(CheckSparseIds(batch));
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
  const std::vector<int64_t> embedding_dims_;
  // The module's parameters: variables_[0, num_parameters_).
  const size_t num_parameters_;
  const int outputs_;
};

// The name of table `t`: its group's, or "embedding.<t>" without groups.
std::string TableName(const TorchScriptModelConfig& config, int t) {
  return config.groups.empty() ? TorchScriptEmbeddingName(t)
                               : config.groups[t].group.name;
}

// The model's variables: the module's parameters, starting from the
// file's values, then one hash embedding table per embedding input (per
// group, with groups). INVALID_ARGUMENT for a table named like a parameter
// or another table: the ps tasks know variables by name.
absl::StatusOr<std::vector<ModelVariable>> VariablesOf(
    const DistrtTorchScriptModuleInfo& info,
    const TorchScriptModelConfig& config, absl::string_view where) {
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
  ModelVariableOptions options;
  options.optimizer = config.optimizer;
  options.partition = config.partition;
  for (int t = 0; t < info.num_embeddings; ++t) {
    const std::string name = TableName(config, t);
    for (const ModelVariable& v : variables) {
      if (v.name() == name) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": embedding group \"", name, "\" is named like the ",
            v.kind == ModelVariable::Kind::kDense ? "module's parameter"
                                                  : "table of another group",
            "; variables need names of their own"));
      }
    }
    variables.push_back(HashEmbeddingVariable(name, info.embedding_dims[t],
                                              UniformInitializer(-0.05f, 0.05f),
                                              options));
    // A group's admission and eviction (the feature spec's), which the ps
    // tasks apply; tables without groups admit every id.
    if (!config.groups.empty()) {
      variables.back().hash_spec.policy = config.groups[t].group.policy;
    }
  }
  // Seeds the tables' initializers (the parameters start from the file).
  SeedInitializers(config.seed, &variables);
  if (variables.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the module has no parameters to train"));
  }
  return variables;
}

// Checks that forward's `outputs` per example suit `loss`.
absl::Status CheckOutputsFitLoss(TorchScriptLoss loss, int outputs,
                                 absl::string_view where) {
  if (loss == TorchScriptLoss::kSoftmaxCrossEntropy && outputs < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        where,
        ": softmax_cross_entropy needs at least 2 outputs (one per class); "
        "forward returns ",
        outputs));
  }
  if (loss != TorchScriptLoss::kSoftmaxCrossEntropy && outputs != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", TorchScriptLossName(loss),
                     " needs 1 output per example; forward returns ", outputs));
  }
  return absl::OkStatus();
}

// x's width, or with groups dense's and the groups' dims.
absl::Status CheckWidths(const TorchScriptModelConfig& config) {
  if (config.groups.empty()) {
    if (config.num_features < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("torchscript model: --num_features must be >= 1, not ",
                       config.num_features));
    }
    return absl::OkStatus();
  }
  if (config.num_dense < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "torchscript model: num_dense must be >= 0, not ", config.num_dense));
  }
  for (const TorchScriptGroup& group : config.groups) {
    if (group.group.dim < 1 || group.group.dim > (int64_t{1} << 20)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript model: embedding group \"", group.group.name,
          "\" has dim ", group.group.dim, "; it must be in [1, 1048576]"));
    }
    if (group.buckets < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript model: embedding group \"", group.group.name, "\" has ",
          group.buckets, " buckets; 0 (hashed) or more"));
    }
  }
  return absl::OkStatus();
}

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

std::vector<TorchScriptGroup> TorchScriptGroupsOf(const FeatureSpec& spec) {
  std::vector<TorchScriptGroup> groups;
  for (const EmbeddingGroup& group : spec.groups) {
    const CategoricalFeature& key = spec.GroupKey(group);
    groups.push_back(
        {group, key.kind == CategoricalKind::kHashed ? 0 : key.buckets});
  }
  return groups;
}

std::string TorchScriptEmbeddingName(int index) {
  return absl::StrCat("embedding.", index);
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
  RETURN_IF_ERROR(CheckWidths(config));
  // LibTorch's own message for a missing file is a C++ backtrace's worth.
  if (access(config.path.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": cannot read it: ", std::strerror(errno)));
  }
  absl::StatusOr<const DistrtTorchScriptApi*> api = Plugin();
  RETURN_IF_ERROR(api.status());
  DistrtTorchScriptModuleInfo info{};
  char* error = nullptr;
  std::vector<int64_t> group_dims;
  for (const TorchScriptGroup& group : config.groups) {
    group_dims.push_back(group.group.dim);
  }
  void* module = (*api)->load(
      config.path.c_str(),
      config.groups.empty() ? config.num_features : config.num_dense,
      static_cast<int>(group_dims.size()), group_dims.data(),
      config.intra_op_threads, &info, &error);
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

  ASSIGN_OR_RETURN(std::vector<ModelVariable> variables,
                   VariablesOf(info, config, where));
  std::vector<int64_t> embedding_dims(
      info.embedding_dims, info.embedding_dims + info.num_embeddings);
  const int outputs = info.outputs;
  RETURN_IF_ERROR(CheckOutputsFitLoss(config.loss, outputs, where));
  auto model = std::make_unique<TorchScriptModel>(
      config, *api, module, std::move(variables), std::move(embedding_dims),
      outputs);
  owner.module = nullptr;
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> CreateTorchScriptModel(
    const ModelConfig& config) {
  if (config.torchscript_file.empty()) {
    return absl::InvalidArgumentError(
        "--model=torchscript needs --torchscript_file: the file "
        "torch.jit.script(model).save(path) wrote");
  }
  absl::StatusOr<TorchScriptLoss> loss = ParseTorchScriptLoss(config.loss);
  if (!loss.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--loss",
        config.loss.empty() ? " is required with --model=torchscript" : "",
        ": ", loss.status().message()));
  }
  TorchScriptModelConfig torchscript;
  torchscript.path = config.torchscript_file;
  torchscript.loss = *loss;
  torchscript.num_features = config.num_features;
  if (config.feature_spec != nullptr) {
    torchscript.groups = TorchScriptGroupsOf(*config.feature_spec);
    torchscript.num_dense = config.feature_spec->num_dense();
  }
  torchscript.optimizer = config.optimizer;
  torchscript.partition = config.partition;
  torchscript.seed = config.seed;
  torchscript.intra_op_threads = config.threads_per_replica;
  return LoadTorchScriptModel(torchscript);
}

DISTRT_REGISTER_MODEL("torchscript", &CreateTorchScriptModel);

}  // namespace distrt
