#include "runtime/training/model_variables.h"

#include "absl/strings/str_cat.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/status_macros.h"

namespace distrt {

namespace {

absl::StatusOr<DistributedVariable*> CreateGlobalStep(Strategy& strategy) {
  VariableOptions step;
  step.spec.name = kGlobalStepName;
  step.spec.dtype = DType::kInt64;
  step.aggregation = VariableAggregation::kOnlyFirstReplica;
  return strategy.CreateVariable(step);
}

}  // namespace

absl::StatusOr<ModelVariables> ModelVariables::Create(Strategy& strategy,
                                                      const Model& model) {
  ModelVariables result;
  ASSIGN_OR_RETURN(result.global_step_, CreateGlobalStep(strategy));

  for (const ModelVariable& v : model.variables()) {
    DistributedVariable* variable = nullptr;
    DistributedHashTable* table = nullptr;
    if (v.kind == ModelVariable::Kind::kHashEmbedding) {
      ASSIGN_OR_RETURN(DistributedHashTable * made,
                       strategy.CreateHashTable(v.hash_spec));
      table = made;
    } else {
      VariableOptions options;
      options.spec = v.spec;
      options.aggregation = VariableAggregation::kSum;
      options.partition = v.partition;
      ASSIGN_OR_RETURN(DistributedVariable * made,
                       strategy.CreateVariable(options));
      variable = made;
    }
    result.variables_.push_back(variable);
    result.hash_tables_.push_back(table);
  }
  return result;
}

absl::StatusOr<ModelVariables> ModelVariables::FromVariables(
    Strategy& strategy, std::vector<DistributedVariable*> variables,
    std::vector<DistributedHashTable*> hash_tables) {
  ModelVariables result;
  ASSIGN_OR_RETURN(result.global_step_, CreateGlobalStep(strategy));
  for (DistributedVariable* variable : variables) {
    if (variable == nullptr) {
      return absl::InvalidArgumentError("FromVariables: a variable is null");
    }
    result.variables_.push_back(variable);
    result.hash_tables_.push_back(nullptr);
  }
  for (DistributedHashTable* table : hash_tables) {
    if (table == nullptr) {
      return absl::InvalidArgumentError("FromVariables: a hash table is null");
    }
    result.variables_.push_back(nullptr);
    result.hash_tables_.push_back(table);
  }
  return result;
}

absl::Status ModelVariables::AssignInitialValues(Strategy& strategy,
                                                 const Model& model) const {
  for (int i = 0; i < size(); ++i) {
    const ModelVariable& v = model.variables()[i];
    if (v.initial_values.empty() || variables_[i] == nullptr) continue;
    absl::StatusOr<Tensor> value =
        Tensor::FromFloats(v.initial_values, v.spec.shape);
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "initial values of ", v.name(), ": ", value.status().message()));
    }
    RETURN_IF_ERROR(strategy.Assign(*variables_[i], *value));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ModelVariables::ReadGlobalStep(
    Strategy& strategy) const {
  ASSIGN_OR_RETURN(Tensor value, strategy.ReadVar(*global_step_));
  return value.flat<int64_t>()[0];
}

std::vector<std::string> ModelVariables::Describe(const Model& model) const {
  std::vector<std::string> lines;
  for (int i = 0; i < size(); ++i) {
    const ModelVariable& v = model.variables()[i];
    if (hash_tables_[i] != nullptr) {
      lines.push_back(absl::StrCat(v.name(), ": hash embedding of dim ",
                                   v.hash_spec.dim, ", ",
                                   hash_tables_[i]->DescribePlacement()));
    } else {
      lines.push_back(absl::StrCat(v.name(), ": ", DTypeName(v.spec.dtype),
                                   ShapeString(v.spec.shape), ", ",
                                   variables_[i]->DescribePlacement()));
    }
  }
  return lines;
}

}  // namespace distrt
