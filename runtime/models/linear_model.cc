#include "runtime/models/linear_model.h"

#include <Eigen/Dense>

#include "runtime/models/model_inputs.h"

namespace distrt {
namespace {

using ConstMatrixMap =
    Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic,
                                   Eigen::RowMajor>>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;
using VectorMap = Eigen::Map<Eigen::VectorXf>;

enum VariableIndex { kWeights = 0, kBias = 1 };

}  // namespace

LinearModel::LinearModel(int64_t num_features, const VariableOptions& options)
    : num_features_(num_features) {
  variables_.push_back(DenseVariable("linear/weights", {num_features, 1},
                                     ZerosInitializer(), options));
  variables_.push_back(
      DenseVariable("linear/bias", {1}, ZerosInitializer(), options));
  SeedInitializers(options.seed, &variables_);
}

absl::Status LinearModel::SparseIds(
    const Batch& batch, std::vector<std::vector<int64_t>>* ids) const {
  if (absl::Status s = CheckDenseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  ids->assign(variables_.size(), {});
  return absl::OkStatus();
}

absl::Status LinearModel::Compute(const Batch& batch,
                                  absl::Span<const VariableSlice> values,
                                  bool with_gradients,
                                  ModelStepResult* result) const {
  if (absl::Status s = CheckLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckFiniteLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckDenseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckValues(variables_, values); !s.ok()) return s;

  const int64_t n = batch.size;
  const ConstMatrixMap x(batch.dense.data(), n, num_features_);
  const ConstVectorMap weights(values[kWeights].dense.data(), num_features_);
  const float bias = values[kBias].dense[0];
  const ConstVectorMap labels(batch.labels.data(), n);

  result->predictions.resize(n);
  VectorMap predictions(result->predictions.data(), n);
  predictions.noalias() = x * weights;
  predictions.array() += bias;
  const Eigen::VectorXf residuals = predictions - labels;
  result->loss_sum = residuals.cast<double>().squaredNorm();

  result->gradients.clear();
  if (!with_gradients) return absl::OkStatus();
  result->gradients.resize(variables_.size());
  // d/dp (p - y)^2 = 2 (p - y).
  result->gradients[kWeights].dense.resize(num_features_);
  VectorMap d_weights(result->gradients[kWeights].dense.data(), num_features_);
  d_weights.noalias() = 2.0f * (x.transpose() * residuals);
  result->gradients[kBias].dense = {2.0f * residuals.sum()};
  return absl::OkStatus();
}

}  // namespace distrt
