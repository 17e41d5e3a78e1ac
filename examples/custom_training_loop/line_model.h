#ifndef DISTRT_EXAMPLES_CUSTOM_TRAINING_LOOP_LINE_MODEL_H_
#define DISTRT_EXAMPLES_CUSTOM_TRAINING_LOOP_LINE_MODEL_H_

// The example's own model, written against the public Model interface
// (runtime/models/model.h): y = w . x + b over two dense features, with a
// squared-error loss. Its variables are "line/w" [2] and "line/b" [1],
// zeros, updated by SGD; ModelVariables::Create makes them wherever the
// strategy keeps variables.

#include <string>
#include <vector>

#include "runtime/models/model.h"

namespace distrt::example {

class LineModel : public Model {
 public:
  explicit LineModel(float learning_rate);

  std::string name() const override { return "line"; }
  const std::vector<ModelVariable>& variables() const override {
    return variables_;
  }
  ModelOutput output() const override { return ModelOutput::kRegression; }
  int outputs_per_example() const override { return 1; }
  absl::Status SparseIds(const Batch& batch,
                         std::vector<std::vector<int64_t>>* ids) const override;
  // Computes on the host whatever the device: two features need no
  // device math. Loss and gradients are sums over the batch, as Model asks.
  absl::Status ComputeOn(Device& device, const Batch& batch,
                         absl::Span<const VariableSlice> values,
                         bool with_gradients,
                         const DenseGradientBuffer* dense_gradients,
                         ModelStepResult* result) const override;

 private:
  std::vector<ModelVariable> variables_;
};

}  // namespace distrt::example

#endif  // DISTRT_EXAMPLES_CUSTOM_TRAINING_LOOP_LINE_MODEL_H_
