#include "runtime/models/wide_deep_model.h"

#include "absl/strings/str_cat.h"
#include "runtime/models/dense_gradient_output.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/loss_arrays.h"
#include "runtime/models/model_inputs.h"
#include "runtime/models/sparse_batch_arrays.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Where the variables are; the deep layers' kernels and biases follow.
enum VariableIndex {
  kWideWeights = 0,
  kWideBias = 1,
  kEmbedding = 2,
  kFirstDeep = 3,
};

std::vector<int64_t> DeepWidths(int64_t embedding_dim,
                                const std::vector<int>& hidden_units) {
  std::vector<int64_t> widths = {embedding_dim};
  widths.insert(widths.end(), hidden_units.begin(), hidden_units.end());
  widths.push_back(1);
  return widths;
}

}  // namespace

WideDeepModel::WideDeepModel(int64_t num_features, int64_t embedding_dim,
                             const std::vector<int>& hidden_units,
                             const ModelVariableOptions& options)
    : num_features_(num_features),
      embedding_dim_(embedding_dim),
      deep_(DeepWidths(embedding_dim, hidden_units)) {
  variables_.push_back(RowSparseVariable("wide_deep/wide/weights",
                                         {num_features, 1}, ZerosInitializer(),
                                         options));
  variables_.push_back(
      DenseVariable("wide_deep/wide/bias", {1}, ZerosInitializer(), options));
  variables_.push_back(
      HashEmbeddingVariable("wide_deep/embedding", embedding_dim,
                            UniformInitializer(-0.05f, 0.05f), options));
  std::vector<std::string> layer_names;
  for (size_t i = 0; i < hidden_units.size(); ++i) {
    layer_names.push_back(absl::StrCat("dense_", i));
  }
  layer_names.push_back("logit");
  for (ModelVariable& variable :
       deep_.Variables("wide_deep", layer_names, options)) {
    variables_.push_back(std::move(variable));
  }
  SeedInitializers(options.seed, &variables_);
}

absl::Status WideDeepModel::SparseIds(
    const Batch& batch, std::vector<std::vector<int64_t>>* ids) const {
  RETURN_IF_ERROR(CheckSparseFeatures(batch, num_features_));
  ids->assign(variables_.size(), {});
  (*ids)[kWideWeights] = DistinctFeatureIds(batch);
  (*ids)[kEmbedding] = (*ids)[kWideWeights];
  return absl::OkStatus();
}

absl::Status WideDeepModel::ComputeOn(
    Device& device, const Batch& batch, absl::Span<const VariableSlice> values,
    bool with_gradients, const DenseGradientBuffer* dense_gradients,
    ModelStepResult* result) const {
  RETURN_IF_ERROR(CheckLabels(batch));
  RETURN_IF_ERROR(CheckBinaryLabels(batch));
  RETURN_IF_ERROR(CheckSparseFeatures(batch, num_features_));
  RETURN_IF_ERROR(CheckValues(variables_, values));
  DeviceArrays arrays(device);
  DeviceMath& math = arrays.math();
  ASSIGN_OR_RETURN(const int32_t* wide_rows,
                   UploadSliceRows(arrays, batch, variables_[kWideWeights],
                                   values[kWideWeights]));
  ASSIGN_OR_RETURN(const int32_t* embedding_rows,
                   UploadSliceRows(arrays, batch, variables_[kEmbedding],
                                   values[kEmbedding]));
  ASSIGN_OR_RETURN(SparseBatchArrays sparse,
                   SparseBatchArrays::Upload(arrays, batch));
  ASSIGN_OR_RETURN(const float* wide_weights,
                   arrays.Upload(values[kWideWeights].rows));
  ASSIGN_OR_RETURN(const float* wide_bias,
                   arrays.Upload(values[kWideBias].dense));
  ASSIGN_OR_RETURN(const float* embedding,
                   arrays.Upload(values[kEmbedding].rows));
  const absl::Span<const VariableSlice> deep_values =
      values.subspan(kFirstDeep);
  ASSIGN_OR_RETURN(std::vector<const float*> deep_params,
                   deep_.UploadParams(arrays, deep_values));

  const int64_t n = batch.size;
  const int64_t dim = embedding_dim_;
  // Forward: the wide logits, and each example's features pooled into one
  // embedding (the value-weighted sum of their rows) for the deep part.
  ASSIGN_OR_RETURN(float* logits,
                   SparseLinearLogits(arrays, sparse, n, wide_rows,
                                      wide_weights, wide_bias));
  ASSIGN_OR_RETURN(float* pooled, arrays.Zeros(n * dim));
  RETURN_IF_ERROR(math.SparseGatherSum(n, dim, sparse.offsets, embedding_rows,
                                       sparse.values, embedding, pooled));
  std::vector<const float*> activations;
  RETURN_IF_ERROR(deep_.Forward(arrays, deep_params, n, pooled, &activations));
  RETURN_IF_ERROR(math.Axpy(n, 1.0f, activations.back(), logits));
  // d loss / d logit of the binary cross-entropy.
  ASSIGN_OR_RETURN(LossArrays loss,
                   LossArrays::OfSigmoidCrossEntropy(
                       arrays, n, logits, sparse.labels, with_gradients));

  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(variables_.size());
    VariableSlice& d_wide = result->gradients[kWideWeights];
    VariableSlice& d_embedding = result->gradients[kEmbedding];
    d_wide = ZeroGradient(values[kWideWeights]);
    d_embedding = ZeroGradient(values[kEmbedding]);
    DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
    ASSIGN_OR_RETURN(float* d_wide_bias, gradients.For(kWideBias, 1));
    RETURN_IF_ERROR(math.ColumnSums(n, 1, loss.d_logits, d_wide_bias));
    float* d_pooled = nullptr;
    RETURN_IF_ERROR(deep_.Backward(arrays, deep_params, n, activations,
                                   loss.d_logits, gradients, kFirstDeep,
                                   &d_pooled));
    RETURN_IF_ERROR(gradients.Finish());
    RETURN_IF_ERROR(SparseRowsGradient(arrays, sparse, n, 1, wide_rows,
                                       loss.d_logits,
                                       absl::MakeSpan(d_wide.rows)));
    RETURN_IF_ERROR(SparseRowsGradient(arrays, sparse, n, dim, embedding_rows,
                                       d_pooled,
                                       absl::MakeSpan(d_embedding.rows)));
  }
  return loss.Finish(arrays, n, 1, result);
}

}  // namespace distrt
