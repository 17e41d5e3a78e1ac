#ifndef DISTRT_RUNTIME_MODELS_WIDE_DEEP_MODEL_H_
#define DISTRT_RUNTIME_MODELS_WIDE_DEEP_MODEL_H_

// WideDeepModel ("wide_deep"): the wide & deep click-through model (Cheng et
// al., 2016), in one of two forms fixed at construction.
//
// On LIBSVM ids (no feature spec):
//
//   wide  = sum over the example's features of value * wide_weights[id]
//           + wide_bias
//   deep  = MLP(sum over the example's features of value * embedding[id])
//
// The wide weights are row-sparse [num_features, 1]; the embedding is a hash
// embedding keyed by the feature id, so only the rows a batch uses exist and
// move.
//
// On named features (a FeatureSpec, feature_spec.h), as TensorFlow's
// DNNLinearCombinedClassifier with one embedding_column per embedding group
// in the deep part and the same categorical columns, and the numeric ones,
// in the linear part:
//
//   wide  = sum over groups g of (sum over g's ids of weight * wide_g[id])
//           + dense . wide_dense + wide_bias
//   deep  = MLP(concat(dense, pool_1, ..., pool_G))
//   pool_g = the group's ids' rows of table g, combined as its combiner says
//            (TF's safe_embedding_lookup_sparse):
//              sum    sum of weight * row
//              mean   sum of weight * row / sum of weights
//              sqrtn  sum of weight * row / sqrt(sum of squared weights)
//            where mean and sqrtn leave out ids of weight <= 0 (as TF prunes
//            them), and an example with no (remaining) ids gets zeros.
//
// Each group's table is a hash embedding named exactly the group's name,
// and its wide weights a hash embedding of dim 1 named "<group>/wide", for
// every kind of group: the two share the batch's ids, only those rows exist
// and move (on the ps tasks under the PS strategy), and a group of
// identity or hash_bucket ids (bounded by `buckets`) never holds more than
// that many rows anyway.
//
// In both forms: MLP = the hidden layers (ReLU) then one output unit;
// logit = wide + deep; loss = binary cross-entropy; prediction = sigmoid.
//
// Thread-safety: as Model (immutable after construction).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/input/batch.h"
#include "runtime/input/feature_spec.h"
#include "runtime/models/dense_gradient_output.h"
#include "runtime/models/dense_layers.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/model.h"
#include "runtime/models/model_variables.h"

namespace distrt {

class WideDeepModel final : public Model {
 public:
  // The LIBSVM form. Variables, in this order: "wide_deep/wide/weights"
  // [num_features, 1] (row-sparse, zeros, partitioned by
  // options.partition), "wide_deep/wide/bias" [1] (zeros),
  // "wide_deep/embedding" (hash embedding of embedding_dim, uniform in
  // [-0.05, 0.05)), then per hidden layer i "wide_deep/dense_<i>/kernel" and
  // ".../bias", and "wide_deep/logit/kernel" [in, 1] and
  // "wide_deep/logit/bias" (kernels Glorot-uniform, biases zero).
  // num_features >= 1, embedding_dim >= 1, hidden units >= 1 (CreateModel
  // checks).
  WideDeepModel(int64_t num_features, int64_t embedding_dim,
                const std::vector<int>& hidden_units,
                const ModelVariableOptions& options);

  // The feature-spec form; `spec` must pass CheckSpec and is not kept.
  // Variables, in this order: per embedding group g, "<g's name>" (hash
  // embedding of g's dim, truncated normal of stddev 1/sqrt(dim), TF's
  // embedding_column default) and "<g's name>/wide" (hash embedding of dim
  // 1, zeros); "wide_deep/wide/dense" [num_dense, 1] (zeros; only when the
  // spec has numeric features); "wide_deep/wide/bias" [1] (zeros); then the
  // deep layers as in the LIBSVM form, the first taking num_dense + the
  // groups' dims inputs (dense features first, then the groups in order).
  WideDeepModel(const FeatureSpec& spec, const std::vector<int>& hidden_units,
                const ModelVariableOptions& options);

  // Whether `spec` can make a model: it passes CheckFeatureSpec, has at
  // least one numeric feature or embedding group, group dims are at most
  // 2^20, and no two variables get the same name (a group named
  // "wide_deep/wide/bias", or "a/wide" beside "a"). INVALID_ARGUMENT naming
  // the field ("model config: feature_spec.embedding_groups[1] ...").
  static absl::Status CheckSpec(const FeatureSpec& spec);

  std::string name() const override { return "wide_deep"; }
  const std::vector<ModelVariable>& variables() const override {
    return variables_;
  }
  ModelOutput output() const override { return ModelOutput::kBinary; }
  int outputs_per_example() const override { return 1; }

  // LIBSVM form: the batch's distinct feature ids, sorted, for both the
  // wide weights and the embedding; INVALID_ARGUMENT naming the example for
  // an id outside [0, num_features).
  // Spec form: per group, its distinct ids for both its table and its wide
  // weights; INVALID_ARGUMENT naming the example and the group when the
  // batch's groups do not fit the spec (their number, CSR arrays, weights,
  // an id outside [0, buckets) of an identity or hash_bucket group).
  absl::Status SparseIds(const Batch& batch,
                         std::vector<std::vector<int64_t>>* ids) const override;
  // INVALID_ARGUMENT also naming the example for a label not 0 or 1, for
  // sparse values lacking an id of the batch, and (spec form) for dense
  // features other than the spec's num_dense. Sparse gradients have the ids
  // of the values given.
  absl::Status ComputeOn(Device& device, const Batch& batch,
                         absl::Span<const VariableSlice> values,
                         bool with_gradients,
                         const DenseGradientBuffer* dense_gradients,
                         ModelStepResult* result) const override;

 private:
  // An embedding group as the spec form computes it.
  struct Group {
    std::string name;
    int64_t dim = 0;
    Combiner combiner = Combiner::kMean;
    // Identity and hash_bucket ids are in [0, buckets); 0: any id (hashed).
    int64_t buckets = 0;
    // Where its pooled embedding starts in the deep input.
    int64_t deep_input_offset = 0;
    int embedding_variable = 0;  // index in variables_
    int wide_variable = 0;
  };

  absl::Status ComputeIdsOn(Device& device, const Batch& batch,
                            absl::Span<const VariableSlice> values,
                            bool with_gradients,
                            const DenseGradientBuffer* dense_gradients,
                            ModelStepResult* result) const;
  absl::Status ComputeSpecOn(Device& device, const Batch& batch,
                             absl::Span<const VariableSlice> values,
                             bool with_gradients,
                             const DenseGradientBuffer* dense_gradients,
                             ModelStepResult* result) const;
  // Spec form: the batch's dense features and groups fit the spec.
  absl::Status CheckSpecFeatures(const Batch& batch) const;

  // The steps of ComputeSpecOn, in the order it runs them. SpecForward
  // (defined in the .cc) holds what the forward steps leave for the later
  // ones: each group's arrays (host and device), the dense features, the
  // first layer's kernel and output and the upper layers' activations.
  // `logits` (n on the device) accumulate the wide and deep parts.
  struct SpecForward;
  absl::Status ForwardGroups(DeviceArrays& arrays, const Batch& batch,
                             absl::Span<const VariableSlice> values,
                             SpecForward* forward, float* logits) const;
  absl::Status UploadGroup(DeviceArrays& arrays, const Batch::Group& in,
                           size_t g, absl::Span<const VariableSlice> values,
                           SpecForward* forward) const;
  absl::Status ForwardWide(DeviceArrays& arrays, const Batch& batch,
                           absl::Span<const VariableSlice> values,
                           SpecForward* forward, float* logits) const;
  absl::Status ForwardFirstLayer(DeviceArrays& arrays,
                                 absl::Span<const VariableSlice> values,
                                 SpecForward* forward) const;
  absl::Status ForwardDeep(DeviceArrays& arrays,
                           absl::Span<const VariableSlice> values,
                           SpecForward* forward, float* logits) const;
  absl::Status BackwardSpec(DeviceArrays& arrays,
                            absl::Span<const VariableSlice> values,
                            const SpecForward& forward, const float* d_logits,
                            const DenseGradientBuffer* dense_gradients,
                            ModelStepResult* result) const;
  absl::Status BackwardDeep(DeviceArrays& arrays, const SpecForward& forward,
                            const float* d_logits,
                            DenseGradientOutput& gradients, const float** delta,
                            float** d_kernel) const;
  absl::Status BackwardGroups(DeviceArrays& arrays, const SpecForward& forward,
                              const float* d_logits, const float* delta,
                              float* d_kernel, ModelStepResult* result) const;

  const bool from_spec_;
  // LIBSVM form (0 in the spec form).
  const int64_t num_features_;
  const int64_t embedding_dim_;
  // Spec form (empty and 0 in the LIBSVM form).
  std::vector<Group> groups_;
  int64_t num_dense_ = 0;
  int wide_dense_variable_ = -1;  // -1: no numeric features
  int wide_bias_variable_ = 0;
  int first_deep_variable_ = 0;
  int64_t first_layer_width_ = 0;  // the first hidden layer's, or 1
  // All the deep layers. The LIBSVM form computes with it; the spec form
  // computes the first layer block by block (its input is the
  // concatenation, never built) and the rest with upper_layers_.
  const DenseLayers deep_;
  // Spec form: the layers after the first (none without hidden units).
  const DenseLayers upper_layers_;
  std::vector<ModelVariable> variables_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_WIDE_DEEP_MODEL_H_
