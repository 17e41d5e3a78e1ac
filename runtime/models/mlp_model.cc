#include "runtime/models/mlp_model.h"

#include "absl/strings/str_cat.h"
#include "runtime/models/loss_arrays.h"
#include "runtime/models/model_inputs.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

std::vector<int64_t> LayerWidths(int64_t num_features, int num_classes,
                                 const std::vector<int>& hidden_units) {
  std::vector<int64_t> widths = {num_features};
  widths.insert(widths.end(), hidden_units.begin(), hidden_units.end());
  widths.push_back(num_classes);
  return widths;
}

}  // namespace

MlpModel::MlpModel(int64_t num_features, int num_classes,
                   const std::vector<int>& hidden_units,
                   const ModelVariableOptions& options)
    : num_features_(num_features),
      num_classes_(num_classes),
      layers_(LayerWidths(num_features, num_classes, hidden_units)) {
  std::vector<std::string> layer_names;
  for (size_t i = 0; i < hidden_units.size(); ++i) {
    layer_names.push_back(absl::StrCat("dense_", i));
  }
  layer_names.push_back("logits");
  variables_ = layers_.Variables("mlp", layer_names, options);
  SeedInitializers(options.seed, &variables_);
}

absl::Status MlpModel::SparseIds(const Batch& batch,
                                 std::vector<std::vector<int64_t>>* ids) const {
  RETURN_IF_ERROR(CheckDenseFeatures(batch, num_features_));
  ids->assign(variables_.size(), {});
  return absl::OkStatus();
}

absl::Status MlpModel::ComputeOn(Device& device, const Batch& batch,
                                 absl::Span<const VariableSlice> values,
                                 bool with_gradients,
                                 const DenseGradientBuffer* dense_gradients,
                                 ModelStepResult* result) const {
  RETURN_IF_ERROR(CheckLabels(batch));
  RETURN_IF_ERROR(CheckClassLabels(batch, num_classes_));
  RETURN_IF_ERROR(CheckDenseFeatures(batch, num_features_));
  RETURN_IF_ERROR(CheckValues(variables_, values));

  const int64_t n = batch.size;
  DeviceArrays arrays(device);
  ASSIGN_OR_RETURN(std::vector<const float*> params,
                   layers_.UploadParams(arrays, values));
  ASSIGN_OR_RETURN(const float* input, arrays.Upload(batch.dense));
  ASSIGN_OR_RETURN(const float* labels, arrays.Upload(batch.labels));
  std::vector<const float*> activations;
  RETURN_IF_ERROR(layers_.Forward(arrays, params, n, input, &activations));

  // d loss / d logits of the softmax cross-entropy: probabilities - one-hot.
  ASSIGN_OR_RETURN(LossArrays loss,
                   LossArrays::Make(arrays, n, num_classes_, with_gradients));
  RETURN_IF_ERROR(arrays.math().SoftmaxCrossEntropy(
      n, num_classes_, activations.back(), labels, loss.predictions,
      loss.losses, loss.d_logits));

  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(variables_.size());
    DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
    RETURN_IF_ERROR(layers_.Backward(arrays, params, n, activations,
                                     loss.d_logits, gradients,
                                     /*first_variable=*/0,
                                     /*d_input=*/nullptr));
    RETURN_IF_ERROR(gradients.Finish());
  }
  return loss.Finish(arrays, n, num_classes_, result);
}

}  // namespace distrt
