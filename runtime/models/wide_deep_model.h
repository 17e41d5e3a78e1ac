#ifndef DISTRT_RUNTIME_MODELS_WIDE_DEEP_MODEL_H_
#define DISTRT_RUNTIME_MODELS_WIDE_DEEP_MODEL_H_

// WideDeepModel ("wide_deep"): the wide & deep click-through model (Cheng et
// al., 2016) on sparse features.
//
//   wide  = sum over the example's features of value * wide_weights[id]
//           + wide_bias
//   deep  = MLP(sum over the example's features of value * embedding[id])
//           with ReLU hidden layers and one output unit
//   logit = wide + deep; loss = binary cross-entropy; prediction = sigmoid
//
// The wide weights are row-sparse [num_features, 1]; the embedding is a hash
// embedding keyed by the feature id, so only the rows a batch uses exist and
// move.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/input/batch.h"
#include "runtime/models/dense_layers.h"
#include "runtime/models/model.h"
#include "runtime/models/model_variables.h"

namespace distrt {

class WideDeepModel final : public Model {
 public:
  // Variables, in this order: "wide_deep/wide/weights" [num_features, 1]
  // (row-sparse, zeros, partitioned by options.partition),
  // "wide_deep/wide/bias" [1] (zeros), "wide_deep/embedding" (hash embedding
  // of embedding_dim, uniform in [-0.05, 0.05)), then per hidden layer i
  // "wide_deep/dense_<i>/kernel" and ".../bias", and "wide_deep/logit/kernel"
  // [in, 1] and "wide_deep/logit/bias" (kernels Glorot-uniform, biases zero).
  // num_features >= 1, embedding_dim >= 1, hidden units >= 1 (CreateModel
  // checks).
  WideDeepModel(int64_t num_features, int64_t embedding_dim,
                const std::vector<int>& hidden_units,
                const ModelVariableOptions& options);

  std::string name() const override { return "wide_deep"; }
  const std::vector<ModelVariable>& variables() const override {
    return variables_;
  }
  ModelOutput output() const override { return ModelOutput::kBinary; }
  int outputs_per_example() const override { return 1; }

  // The batch's distinct feature ids, sorted, for both the wide weights and
  // the embedding. INVALID_ARGUMENT naming the example for an id outside
  // [0, num_features).
  absl::Status SparseIds(const Batch& batch,
                         std::vector<std::vector<int64_t>>* ids) const override;
  // INVALID_ARGUMENT also naming the example for a label not 0 or 1, and for
  // sparse values lacking an id of the batch. Sparse gradients have the ids
  // of the values given.
  absl::Status ComputeOn(Device& device, const Batch& batch,
                         absl::Span<const VariableSlice> values,
                         bool with_gradients,
                         const DenseGradientBuffer* dense_gradients,
                         ModelStepResult* result) const override;

 private:
  const int64_t num_features_;
  const int64_t embedding_dim_;
  const DenseLayers deep_;
  std::vector<ModelVariable> variables_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_WIDE_DEEP_MODEL_H_
