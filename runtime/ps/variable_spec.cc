#include "runtime/ps/variable_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distrt {

int64_t NumRows(const VariableSpec& spec) {
  return spec.shape.empty() ? 1 : spec.shape[0];
}

int64_t RowWidth(const VariableSpec& spec) {
  int64_t width = 1;
  for (size_t i = 1; i < spec.shape.size(); ++i) width *= spec.shape[i];
  return width;
}

std::vector<int64_t> ShapeOfRows(const VariableSpec& spec, int64_t rows) {
  std::vector<int64_t> shape = spec.shape;
  if (!shape.empty()) shape[0] = rows;
  return shape;
}

std::string RowRangeString(RowRange rows) {
  return absl::StrCat("[", rows.begin, ", ", rows.end, ")");
}

absl::Status ValidateVariableSpec(const VariableSpec& spec) {
  if (spec.name.empty()) {
    return absl::InvalidArgumentError("variable name is empty");
  }
  if (absl::StatusOr<int64_t> elements = CountElements(spec.shape);
      !elements.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable \"", spec.name, "\": ", elements.status().message()));
  }
  if (spec.dtype == DType::kFloat64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable \"", spec.name,
        "\": variables are float32 or int64; float64 is for reduced values "
        "only"));
  }
  if (spec.dtype == DType::kFloat32) {
    if (absl::Status s = ValidateInitializer(spec.initializer); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable \"", spec.name, "\": ", s.message()));
    }
    if (absl::Status s = ValidateOptimizerConfig(spec.optimizer); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable \"", spec.name, "\": ", s.message()));
    }
  }
  return absl::OkStatus();
}

std::string DescribeSpecDifference(const VariableSpec& a,
                                   const VariableSpec& b) {
  std::vector<std::string> diffs;
  if (a.dtype != b.dtype) {
    diffs.push_back(
        absl::StrCat("dtype ", DTypeName(a.dtype), " vs ", DTypeName(b.dtype)));
  }
  if (a.shape != b.shape) {
    diffs.push_back(absl::StrCat("shape ", ShapeString(a.shape), " vs ",
                                 ShapeString(b.shape)));
  }
  const InitializerSpec& ia = a.initializer;
  const InitializerSpec& ib = b.initializer;
  if (ia.kind != ib.kind || ia.value != ib.value || ia.minval != ib.minval ||
      ia.maxval != ib.maxval || ia.mean != ib.mean || ia.stddev != ib.stddev ||
      ia.seed != ib.seed) {
    diffs.push_back("initializer");
  }
  const OptimizerConfig& oa = a.optimizer;
  const OptimizerConfig& ob = b.optimizer;
  if (oa.kind != ob.kind) {
    diffs.push_back(absl::StrCat("optimizer ", OptimizerName(oa.kind), " vs ",
                                 OptimizerName(ob.kind)));
  } else if (oa.learning_rate != ob.learning_rate ||
             oa.momentum != ob.momentum || oa.nesterov != ob.nesterov ||
             oa.initial_accumulator_value != ob.initial_accumulator_value ||
             oa.epsilon != ob.epsilon || oa.beta1 != ob.beta1 ||
             oa.beta2 != ob.beta2 ||
             oa.learning_rate_power != ob.learning_rate_power ||
             oa.l1_regularization != ob.l1_regularization ||
             oa.l2_regularization != ob.l2_regularization) {
    diffs.push_back("optimizer hyper-parameters");
  }
  return absl::StrJoin(diffs, ", ");
}

}  // namespace distrt
