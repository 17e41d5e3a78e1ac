#include "examples/custom_training_loop/line_model.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distrt::example {
namespace {

ModelVariable Dense(const std::string& name, int64_t size,
                    float learning_rate) {
  ModelVariable variable;
  variable.kind = ModelVariable::Kind::kDense;
  variable.spec.name = name;
  variable.spec.shape = {size};
  variable.spec.optimizer.learning_rate = learning_rate;
  return variable;
}

}  // namespace

LineModel::LineModel(float learning_rate)
    : variables_({Dense("line/w", 2, learning_rate),
                  Dense("line/b", 1, learning_rate)}) {}

absl::Status LineModel::SparseIds(
    const Batch& batch, std::vector<std::vector<int64_t>>* ids) const {
  if (batch.size > 0 && batch.num_dense != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the line model takes 2 dense features, not ", batch.num_dense));
  }
  ids->assign(variables_.size(), {});
  return absl::OkStatus();
}

absl::Status LineModel::ComputeOn(Device& device, const Batch& batch,
                                  absl::Span<const VariableSlice> values,
                                  bool with_gradients,
                                  const DenseGradientBuffer* dense_gradients,
                                  ModelStepResult* result) const {
  std::vector<std::vector<int64_t>> unused;
  if (absl::Status fits = SparseIds(batch, &unused); !fits.ok()) return fits;
  if (values.size() != 2 || values[0].dense.size() != 2 ||
      values[1].dense.size() != 1) {
    return absl::InvalidArgumentError(
        "the line model takes values for line/w [2] and line/b [1]");
  }
  const std::vector<float>& w = values[0].dense;
  const float b = values[1].dense[0];
  result->loss_sum = 0;
  result->predictions.assign(batch.size, 0.0f);
  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(2);
    result->gradients[0].dense.assign(2, 0.0f);
    result->gradients[1].dense.assign(1, 0.0f);
  }
  for (int64_t i = 0; i < batch.size; ++i) {
    const float x0 = batch.dense[2 * i];
    const float x1 = batch.dense[2 * i + 1];
    const float prediction = w[0] * x0 + w[1] * x1 + b;
    const float error = prediction - batch.labels[i];
    result->predictions[i] = prediction;
    result->loss_sum += error * error;
    if (!with_gradients) continue;
    result->gradients[0].dense[0] += 2 * error * x0;
    result->gradients[0].dense[1] += 2 * error * x1;
    result->gradients[1].dense[0] += 2 * error;
  }
  if (with_gradients && dense_gradients != nullptr) {
    return MoveDenseGradientsTo(device, *dense_gradients, variables_,
                                &result->gradients);
  }
  return absl::OkStatus();
}

}  // namespace distrt::example
