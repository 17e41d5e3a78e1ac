#include "runtime/models/mlp_model.h"

#include "absl/strings/str_cat.h"
#include "runtime/models/loss_arrays.h"
#include "runtime/models/model_inputs.h"

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
                   const VariableOptions& options)
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
  if (absl::Status s = CheckDenseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  ids->assign(variables_.size(), {});
  return absl::OkStatus();
}

absl::Status MlpModel::ComputeOn(Device& device, const Batch& batch,
                                 absl::Span<const VariableSlice> values,
                                 bool with_gradients,
                                 const DenseGradientBuffer* dense_gradients,
                                 ModelStepResult* result) const {
  if (absl::Status s = CheckLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckClassLabels(batch, num_classes_); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDenseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckValues(variables_, values); !s.ok()) return s;

  const int64_t n = batch.size;
  DeviceArrays arrays(device);
  absl::StatusOr<std::vector<const float*>> params =
      layers_.UploadParams(arrays, values);
  if (!params.ok()) return params.status();
  absl::StatusOr<const float*> input = arrays.Upload(batch.dense);
  if (!input.ok()) return input.status();
  absl::StatusOr<const float*> labels = arrays.Upload(batch.labels);
  if (!labels.ok()) return labels.status();
  std::vector<const float*> activations;
  if (absl::Status s =
          layers_.Forward(arrays, *params, n, *input, &activations);
      !s.ok()) {
    return s;
  }

  // d loss / d logits of the softmax cross-entropy: probabilities - one-hot.
  absl::StatusOr<LossArrays> loss =
      LossArrays::Make(arrays, n, num_classes_, with_gradients);
  if (!loss.ok()) return loss.status();
  if (absl::Status s = arrays.math().SoftmaxCrossEntropy(
          n, num_classes_, activations.back(), *labels, loss->predictions,
          loss->losses, loss->d_logits);
      !s.ok()) {
    return s;
  }

  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(variables_.size());
    DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
    if (absl::Status s =
            layers_.Backward(arrays, *params, n, activations, loss->d_logits,
                             gradients, /*first_variable=*/0,
                             /*d_input=*/nullptr);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = gradients.Finish(); !s.ok()) return s;
  }
  return loss->Finish(arrays, n, num_classes_, result);
}

}  // namespace distrt
