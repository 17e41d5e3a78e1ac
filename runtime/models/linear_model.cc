#include "runtime/models/linear_model.h"

#include "runtime/models/dense_gradient_output.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/loss_arrays.h"
#include "runtime/models/model_inputs.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

enum VariableIndex { kWeights = 0, kBias = 1 };

}  // namespace

LinearModel::LinearModel(int64_t num_features,
                         const ModelVariableOptions& options)
    : num_features_(num_features) {
  variables_.push_back(DenseVariable("linear/weights", {num_features, 1},
                                     ZerosInitializer(), options));
  variables_.push_back(
      DenseVariable("linear/bias", {1}, ZerosInitializer(), options));
  SeedInitializers(options.seed, &variables_);
}

absl::Status LinearModel::SparseIds(
    const Batch& batch, std::vector<std::vector<int64_t>>* ids) const {
  RETURN_IF_ERROR(CheckDenseFeatures(batch, num_features_));
  ids->assign(variables_.size(), {});
  return absl::OkStatus();
}

absl::Status LinearModel::ComputeOn(Device& device, const Batch& batch,
                                    absl::Span<const VariableSlice> values,
                                    bool with_gradients,
                                    const DenseGradientBuffer* dense_gradients,
                                    ModelStepResult* result) const {
  RETURN_IF_ERROR(CheckLabels(batch));
  RETURN_IF_ERROR(CheckFiniteLabels(batch));
  RETURN_IF_ERROR(CheckDenseFeatures(batch, num_features_));
  RETURN_IF_ERROR(CheckValues(variables_, values));
  DeviceArrays arrays(device);
  DeviceMath& math = arrays.math();
  ASSIGN_OR_RETURN(const float* x, arrays.Upload(batch.dense));
  ASSIGN_OR_RETURN(const float* labels, arrays.Upload(batch.labels));
  ASSIGN_OR_RETURN(const float* weights, arrays.Upload(values[kWeights].dense));
  ASSIGN_OR_RETURN(const float* bias, arrays.Upload(values[kBias].dense));

  const int64_t n = batch.size;
  const int64_t f = num_features_;
  // d/dp (p - y)^2 = 2 (p - y), in loss->d_logits.
  ASSIGN_OR_RETURN(LossArrays loss,
                   LossArrays::Make(arrays, n, 1, with_gradients));
  RETURN_IF_ERROR(math.Gemm(false, false, n, 1, f, 1.0f, x, weights, 0.0f,
                            loss.predictions));
  RETURN_IF_ERROR(math.AddBias(n, 1, bias, loss.predictions));
  RETURN_IF_ERROR(math.SquaredError(n, loss.predictions, labels, loss.losses,
                                    loss.d_logits));

  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(variables_.size());
    DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
    ASSIGN_OR_RETURN(float* d_weights, gradients.For(kWeights, f));
    RETURN_IF_ERROR(math.Gemm(true, false, f, 1, n, 1.0f, x, loss.d_logits,
                              0.0f, d_weights));
    ASSIGN_OR_RETURN(float* d_bias, gradients.For(kBias, 1));
    RETURN_IF_ERROR(math.ColumnSums(n, 1, loss.d_logits, d_bias));
    RETURN_IF_ERROR(gradients.Finish());
  }
  return loss.Finish(arrays, n, 1, result);
}

}  // namespace distrt
