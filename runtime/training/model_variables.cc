#include "runtime/training/model_variables.h"

#include "absl/strings/str_cat.h"
#include "runtime/tensor/shape.h"

namespace distrt {

absl::StatusOr<ModelVariables> ModelVariables::Create(Strategy& strategy,
                                                      const Model& model) {
  ModelVariables result;
  VariableOptions step;
  step.spec.name = kGlobalStepName;
  step.spec.dtype = DType::kInt64;
  step.aggregation = VariableAggregation::kOnlyFirstReplica;
  absl::StatusOr<DistributedVariable*> global_step =
      strategy.CreateVariable(step);
  if (!global_step.ok()) return global_step.status();
  result.global_step_ = *global_step;

  for (const ModelVariable& v : model.variables()) {
    DistributedVariable* variable = nullptr;
    DistributedHashTable* table = nullptr;
    if (v.kind == ModelVariable::Kind::kHashEmbedding) {
      absl::StatusOr<DistributedHashTable*> made =
          strategy.CreateHashTable(v.hash_spec);
      if (!made.ok()) return made.status();
      table = *made;
    } else {
      VariableOptions options;
      options.spec = v.spec;
      options.aggregation = VariableAggregation::kSum;
      options.partition = v.partition;
      absl::StatusOr<DistributedVariable*> made =
          strategy.CreateVariable(options);
      if (!made.ok()) return made.status();
      variable = *made;
    }
    result.variables_.push_back(variable);
    result.hash_tables_.push_back(table);
  }
  return result;
}

absl::StatusOr<int64_t> ModelVariables::ReadGlobalStep(
    Strategy& strategy) const {
  absl::StatusOr<Tensor> value = strategy.ReadVar(*global_step_);
  if (!value.ok()) return value.status();
  return value->flat<int64_t>()[0];
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
