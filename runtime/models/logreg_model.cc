#include "runtime/models/logreg_model.h"

#include "runtime/models/losses.h"
#include "runtime/models/model_inputs.h"

namespace distrt {
namespace {

enum VariableIndex { kWeights = 0, kBias = 1 };

}  // namespace

LogRegModel::LogRegModel(int64_t num_features, const VariableOptions& options)
    : num_features_(num_features) {
  variables_.push_back(RowSparseVariable("logreg/weights", {num_features, 1},
                                         ZerosInitializer(), options));
  variables_.push_back(
      DenseVariable("logreg/bias", {1}, ZerosInitializer(), options));
  SeedInitializers(options.seed, &variables_);
}

absl::Status LogRegModel::SparseIds(
    const Batch& batch, std::vector<std::vector<int64_t>>* ids) const {
  if (absl::Status s = CheckSparseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  ids->assign(variables_.size(), {});
  (*ids)[kWeights] = DistinctFeatureIds(batch);
  return absl::OkStatus();
}

absl::Status LogRegModel::Compute(const Batch& batch,
                                  absl::Span<const VariableSlice> values,
                                  bool with_gradients,
                                  ModelStepResult* result) const {
  if (absl::Status s = CheckLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckBinaryLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckSparseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckValues(variables_, values); !s.ok()) return s;
  absl::StatusOr<std::vector<int64_t>> rows =
      SliceRowsOfFeatures(batch, variables_[kWeights], values[kWeights]);
  if (!rows.ok()) return rows.status();

  const std::vector<float>& weights = values[kWeights].rows;
  const float bias = values[kBias].dense[0];
  result->loss_sum = 0;
  result->predictions.resize(batch.size);
  result->gradients.clear();
  if (with_gradients) {
    result->gradients.push_back(ZeroGradient(values[kWeights]));
    result->gradients.push_back(ZeroGradient(values[kBias]));
  }
  for (int64_t i = 0; i < batch.size; ++i) {
    const int64_t begin = batch.offsets[i];
    const int64_t end = batch.offsets[i + 1];
    float logit = bias;
    for (int64_t k = begin; k < end; ++k) {
      logit += batch.values[k] * weights[(*rows)[k]];
    }
    const float label = batch.labels[i];
    result->loss_sum += SigmoidCrossEntropy(logit, label);
    const float probability = Sigmoid(logit);
    result->predictions[i] = probability;
    if (!with_gradients) continue;
    // d loss / d logit of the binary cross-entropy.
    const float d_logit = probability - label;
    std::vector<float>& d_weights = result->gradients[kWeights].rows;
    for (int64_t k = begin; k < end; ++k) {
      d_weights[(*rows)[k]] += d_logit * batch.values[k];
    }
    result->gradients[kBias].dense[0] += d_logit;
  }
  return absl::OkStatus();
}

}  // namespace distrt
