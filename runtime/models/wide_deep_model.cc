#include "runtime/models/wide_deep_model.h"

#include "absl/strings/str_cat.h"
#include "runtime/models/losses.h"
#include "runtime/models/model_inputs.h"

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

using ConstMatrixMap = Eigen::Map<const RowMajorMatrix>;
using MatrixMap = Eigen::Map<RowMajorMatrix>;

}  // namespace

WideDeepModel::WideDeepModel(int64_t num_features, int64_t embedding_dim,
                             const std::vector<int>& hidden_units,
                             const VariableOptions& options)
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
  if (absl::Status s = CheckSparseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  ids->assign(variables_.size(), {});
  (*ids)[kWideWeights] = DistinctFeatureIds(batch);
  (*ids)[kEmbedding] = (*ids)[kWideWeights];
  return absl::OkStatus();
}

absl::Status WideDeepModel::Compute(const Batch& batch,
                                    absl::Span<const VariableSlice> values,
                                    bool with_gradients,
                                    ModelStepResult* result) const {
  if (absl::Status s = CheckLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckBinaryLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckSparseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckValues(variables_, values); !s.ok()) return s;
  absl::StatusOr<std::vector<int64_t>> wide_rows = SliceRowsOfFeatures(
      batch, variables_[kWideWeights], values[kWideWeights]);
  if (!wide_rows.ok()) return wide_rows.status();
  absl::StatusOr<std::vector<int64_t>> embedding_rows =
      SliceRowsOfFeatures(batch, variables_[kEmbedding], values[kEmbedding]);
  if (!embedding_rows.ok()) return embedding_rows.status();

  const int64_t n = batch.size;
  const int64_t dim = embedding_dim_;
  const std::vector<float>& wide_weights = values[kWideWeights].rows;
  const float wide_bias = values[kWideBias].dense[0];
  const ConstMatrixMap embedding(values[kEmbedding].rows.data(),
                                 values[kEmbedding].ids.size(), dim);

  // Forward: the wide logits, and each example's features pooled into one
  // embedding (the value-weighted sum of their rows) for the deep part.
  std::vector<float> logits(n, wide_bias);
  RowMajorMatrix pooled = RowMajorMatrix::Zero(n, dim);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = batch.offsets[i]; k < batch.offsets[i + 1]; ++k) {
      logits[i] += batch.values[k] * wide_weights[(*wide_rows)[k]];
      pooled.row(i) += batch.values[k] * embedding.row((*embedding_rows)[k]);
    }
  }
  const absl::Span<const VariableSlice> deep_values =
      values.subspan(kFirstDeep);
  std::vector<RowMajorMatrix> activations;
  deep_.Forward(deep_values, std::move(pooled), &activations);

  result->loss_sum = 0;
  result->predictions.resize(n);
  RowMajorMatrix d_logits(n, 1);
  for (int64_t i = 0; i < n; ++i) {
    logits[i] += activations.back()(i, 0);
    result->loss_sum += SigmoidCrossEntropy(logits[i], batch.labels[i]);
    result->predictions[i] = Sigmoid(logits[i]);
    // d loss / d logit of the binary cross-entropy.
    d_logits(i, 0) = result->predictions[i] - batch.labels[i];
  }

  result->gradients.clear();
  if (!with_gradients) return absl::OkStatus();
  result->gradients.resize(variables_.size());
  VariableSlice& d_wide = result->gradients[kWideWeights];
  VariableSlice& d_embedding_slice = result->gradients[kEmbedding];
  d_wide = ZeroGradient(values[kWideWeights]);
  result->gradients[kWideBias].dense = {d_logits.sum()};
  d_embedding_slice = ZeroGradient(values[kEmbedding]);

  RowMajorMatrix d_pooled;
  deep_.Backward(deep_values, activations, d_logits,
                 absl::MakeSpan(result->gradients).subspan(kFirstDeep),
                 &d_pooled);
  MatrixMap d_embedding(d_embedding_slice.rows.data(),
                        d_embedding_slice.ids.size(), dim);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = batch.offsets[i]; k < batch.offsets[i + 1]; ++k) {
      d_wide.rows[(*wide_rows)[k]] += batch.values[k] * d_logits(i, 0);
      d_embedding.row((*embedding_rows)[k]) +=
          batch.values[k] * d_pooled.row(i);
    }
  }
  return absl::OkStatus();
}

}  // namespace distrt
