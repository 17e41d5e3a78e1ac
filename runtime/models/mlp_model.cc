#include "runtime/models/mlp_model.h"

#include "absl/strings/str_cat.h"
#include "runtime/models/losses.h"
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

absl::Status MlpModel::Compute(const Batch& batch,
                               absl::Span<const VariableSlice> values,
                               bool with_gradients,
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
  std::vector<RowMajorMatrix> activations;
  layers_.Forward(
      values,
      Eigen::Map<const RowMajorMatrix>(batch.dense.data(), n, num_features_),
      &activations);
  const RowMajorMatrix& logits = activations.back();

  result->loss_sum = 0;
  result->predictions.resize(n * num_classes_);
  for (int64_t i = 0; i < n; ++i) {
    result->loss_sum += SoftmaxCrossEntropy(
        absl::MakeConstSpan(logits.row(i).data(), num_classes_),
        static_cast<int>(batch.labels[i]),
        absl::MakeSpan(&result->predictions[i * num_classes_], num_classes_));
  }

  result->gradients.clear();
  if (!with_gradients) return absl::OkStatus();
  result->gradients.resize(variables_.size());
  // d loss / d logits of the softmax cross-entropy: probabilities - one-hot.
  RowMajorMatrix d_logits = Eigen::Map<const RowMajorMatrix>(
      result->predictions.data(), n, num_classes_);
  for (int64_t i = 0; i < n; ++i) {
    d_logits(i, static_cast<int>(batch.labels[i])) -= 1.0f;
  }
  layers_.Backward(values, activations, std::move(d_logits),
                   absl::MakeSpan(result->gradients), /*d_input=*/nullptr);
  return absl::OkStatus();
}

}  // namespace distrt
