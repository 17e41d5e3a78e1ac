#include "runtime/models/logreg_model.h"

#include "runtime/models/dense_gradient_output.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/loss_arrays.h"
#include "runtime/models/model_inputs.h"
#include "runtime/models/sparse_batch_arrays.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

enum VariableIndex { kWeights = 0, kBias = 1 };

}  // namespace

LogRegModel::LogRegModel(int64_t num_features,
                         const ModelVariableOptions& options)
    : num_features_(num_features) {
  variables_.push_back(RowSparseVariable("logreg/weights", {num_features, 1},
                                         ZerosInitializer(), options));
  variables_.push_back(
      DenseVariable("logreg/bias", {1}, ZerosInitializer(), options));
  SeedInitializers(options.seed, &variables_);
}

absl::Status LogRegModel::SparseIds(
    const Batch& batch, std::vector<std::vector<int64_t>>* ids) const {
  RETURN_IF_ERROR(CheckSparseFeatures(batch, num_features_));
  ids->assign(variables_.size(), {});
  (*ids)[kWeights] = DistinctFeatureIds(batch);
  return absl::OkStatus();
}

absl::Status LogRegModel::ComputeOn(Device& device, const Batch& batch,
                                    absl::Span<const VariableSlice> values,
                                    bool with_gradients,
                                    const DenseGradientBuffer* dense_gradients,
                                    ModelStepResult* result) const {
  RETURN_IF_ERROR(CheckLabels(batch));
  RETURN_IF_ERROR(CheckBinaryLabels(batch));
  RETURN_IF_ERROR(CheckSparseFeatures(batch, num_features_));
  RETURN_IF_ERROR(CheckValues(variables_, values));
  DeviceArrays arrays(device);
  DeviceMath& math = arrays.math();
  ASSIGN_OR_RETURN(
      const int32_t* rows,
      UploadSliceRows(arrays, batch, variables_[kWeights], values[kWeights]));
  ASSIGN_OR_RETURN(SparseBatchArrays sparse,
                   SparseBatchArrays::Upload(arrays, batch));
  ASSIGN_OR_RETURN(const float* weights, arrays.Upload(values[kWeights].rows));
  ASSIGN_OR_RETURN(const float* bias, arrays.Upload(values[kBias].dense));

  const int64_t n = batch.size;
  ASSIGN_OR_RETURN(float* logits,
                   SparseLinearLogits(arrays, sparse, n, rows, weights, bias));
  // d loss / d logit of the binary cross-entropy.
  ASSIGN_OR_RETURN(LossArrays loss,
                   LossArrays::OfSigmoidCrossEntropy(
                       arrays, n, logits, sparse.labels, with_gradients));

  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(variables_.size());
    VariableSlice& d_weights = result->gradients[kWeights];
    d_weights = ZeroGradient(values[kWeights]);
    DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
    ASSIGN_OR_RETURN(float* d_bias, gradients.For(kBias, 1));
    RETURN_IF_ERROR(math.ColumnSums(n, 1, loss.d_logits, d_bias));
    RETURN_IF_ERROR(gradients.Finish());
    RETURN_IF_ERROR(SparseRowsGradient(arrays, sparse, n, 1, rows,
                                       loss.d_logits,
                                       absl::MakeSpan(d_weights.rows)));
  }
  return loss.Finish(arrays, n, 1, result);
}

}  // namespace distrt
