#include "runtime/models/linear_model.h"

#include "runtime/models/dense_gradient_output.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/loss_arrays.h"
#include "runtime/models/model_inputs.h"

namespace distrt {
namespace {

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

absl::Status LinearModel::ComputeOn(Device& device, const Batch& batch,
                                    absl::Span<const VariableSlice> values,
                                    bool with_gradients,
                                    const DenseGradientBuffer* dense_gradients,
                                    ModelStepResult* result) const {
  if (absl::Status s = CheckLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckFiniteLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckDenseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckValues(variables_, values); !s.ok()) return s;
  DeviceArrays arrays(device);
  DeviceMath& math = arrays.math();
  absl::StatusOr<const float*> x = arrays.Upload(batch.dense);
  if (!x.ok()) return x.status();
  absl::StatusOr<const float*> labels = arrays.Upload(batch.labels);
  if (!labels.ok()) return labels.status();
  absl::StatusOr<const float*> weights = arrays.Upload(values[kWeights].dense);
  if (!weights.ok()) return weights.status();
  absl::StatusOr<const float*> bias = arrays.Upload(values[kBias].dense);
  if (!bias.ok()) return bias.status();

  const int64_t n = batch.size;
  const int64_t f = num_features_;
  // d/dp (p - y)^2 = 2 (p - y), in loss->d_logits.
  absl::StatusOr<LossArrays> loss =
      LossArrays::Make(arrays, n, 1, with_gradients);
  if (!loss.ok()) return loss.status();
  if (absl::Status s = math.Gemm(false, false, n, 1, f, 1.0f, *x, *weights,
                                 0.0f, loss->predictions);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = math.AddBias(n, 1, *bias, loss->predictions); !s.ok()) {
    return s;
  }
  if (absl::Status s = math.SquaredError(n, loss->predictions, *labels,
                                         loss->losses, loss->d_logits);
      !s.ok()) {
    return s;
  }

  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(variables_.size());
    DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
    absl::StatusOr<float*> d_weights = gradients.For(kWeights, f);
    if (!d_weights.ok()) return d_weights.status();
    if (absl::Status s = math.Gemm(true, false, f, 1, n, 1.0f, *x,
                                   loss->d_logits, 0.0f, *d_weights);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<float*> d_bias = gradients.For(kBias, 1);
    if (!d_bias.ok()) return d_bias.status();
    if (absl::Status s = math.ColumnSums(n, 1, loss->d_logits, *d_bias);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = gradients.Finish(); !s.ok()) return s;
  }
  return loss->Finish(arrays, n, 1, result);
}

}  // namespace distrt
