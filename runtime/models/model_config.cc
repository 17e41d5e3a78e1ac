#include "runtime/models/model_config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/models/linear_model.h"
#include "runtime/models/logreg_model.h"
#include "runtime/models/mlp_model.h"
#include "runtime/models/model_variables.h"
#include "runtime/models/wide_deep_model.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// HashEmbeddingTable's limit on a row.
constexpr int64_t kMaxEmbeddingDim = int64_t{1} << 20;

absl::Status CheckHiddenUnits(const ModelConfig& config) {
  for (size_t i = 0; i < config.hidden_units.size(); ++i) {
    if (config.hidden_units[i] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("model config: hidden_units[", i, "] must be >= 1, got ",
                       config.hidden_units[i]));
    }
  }
  return absl::OkStatus();
}

// wide_deep on named features: the spec sets the feature counts and the
// embedding dims, so num_features and embedding_dim are not used.
bool WideDeepOnSpec(const ModelConfig& config) {
  return config.name == "wide_deep" && config.feature_spec != nullptr;
}

absl::Status CheckConfig(const ModelConfig& config) {
  if (WideDeepOnSpec(config)) {
    RETURN_IF_ERROR(WideDeepModel::CheckSpec(*config.feature_spec));
  } else if (config.num_features < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config: num_features must be >= 1, got ", config.num_features));
  }
  if (config.name == "mlp" && config.num_classes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: num_classes must be >= 2 for mlp, got ",
                     config.num_classes));
  }
  if (config.name == "mlp" || config.name == "wide_deep") {
    RETURN_IF_ERROR(CheckHiddenUnits(config));
  }
  if (config.name == "wide_deep" && !WideDeepOnSpec(config) &&
      (config.embedding_dim < 1 || config.embedding_dim > kMaxEmbeddingDim)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: embedding_dim must be in [1, 2^20], got ",
                     config.embedding_dim));
  }
  if (absl::Status s = ValidateOptimizerConfig(config.optimizer); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: optimizer: ", s.message()));
  }
  return absl::OkStatus();
}

// What the model's variables must satisfy on parameter servers: valid specs
// (sizes within bounds) and a partition policy PartitionRows accepts.
absl::Status CheckVariables(const Model& model) {
  for (const ModelVariable& variable : model.variables()) {
    if (variable.kind == ModelVariable::Kind::kHashEmbedding) continue;
    if (absl::Status s = ValidateVariableSpec(variable.spec); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model config: ", s.message()));
    }
    if (variable.kind == ModelVariable::Kind::kRowSparse) {
      if (absl::Status s =
              PartitionRows(variable.spec, variable.partition).status();
          !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("model config: partition: ", s.message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> ModelNames() {
  return {"linear", "logreg", "mlp", "wide_deep"};
}

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config) {
  const std::vector<std::string> names = ModelNames();
  if (std::find(names.begin(), names.end(), config.name) == names.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: unknown model name \"", config.name,
                     "\"; known: ", absl::StrJoin(names, ", ")));
  }
  RETURN_IF_ERROR(CheckConfig(config));

  ModelVariableOptions options;
  options.optimizer = config.optimizer;
  options.partition = config.partition;
  options.seed = config.seed;
  std::unique_ptr<Model> model;
  if (config.name == "linear") {
    model = std::make_unique<LinearModel>(config.num_features, options);
  } else if (config.name == "logreg") {
    model = std::make_unique<LogRegModel>(config.num_features, options);
  } else if (config.name == "mlp") {
    model = std::make_unique<MlpModel>(config.num_features, config.num_classes,
                                       config.hidden_units, options);
  } else if (WideDeepOnSpec(config)) {
    model = std::make_unique<WideDeepModel>(*config.feature_spec,
                                            config.hidden_units, options);
  } else {
    model = std::make_unique<WideDeepModel>(config.num_features,
                                            config.embedding_dim,
                                            config.hidden_units, options);
  }
  RETURN_IF_ERROR(CheckVariables(*model));
  return model;
}

}  // namespace distrt
