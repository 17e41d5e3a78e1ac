// A model registered from a target outside runtime/models, as a user's
// library would register theirs (runtime/models/model_registry.h):
// "test_scaled_logreg", logistic regression whose logits are the built-in
// logreg's times a factor, so that its name, its variables and its
// gradients are its own. Linked only into the test build of the worker
// beside it.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/models/logreg_model.h"
#include "runtime/models/model.h"
#include "runtime/models/model_config.h"
#include "runtime/models/model_registry.h"
#include "runtime/models/model_variables.h"

namespace distrt::testing {
namespace {

// The built-in logreg with weights named after this model and read at half
// scale: the same predictions for weights twice as large.
class ScaledLogReg : public Model {
 public:
  ScaledLogReg(int64_t num_features, const ModelVariableOptions& options)
      : logreg_(num_features, options), variables_(logreg_.variables()) {
    for (ModelVariable& v : variables_) {
      v.spec.name = "test_scaled_logreg/" + v.spec.name;
    }
  }

  std::string name() const override { return "test_scaled_logreg"; }
  const std::vector<ModelVariable>& variables() const override {
    return variables_;
  }
  ModelOutput output() const override { return logreg_.output(); }
  int outputs_per_example() const override { return 1; }
  absl::Status SparseIds(
      const Batch& batch,
      std::vector<std::vector<int64_t>>* ids) const override {
    return logreg_.SparseIds(batch, ids);
  }
  absl::Status ComputeOn(Device& device, const Batch& batch,
                         absl::Span<const VariableSlice> values,
                         bool with_gradients,
                         const DenseGradientBuffer* dense_gradients,
                         ModelStepResult* result) const override {
    // Gradients come back on the host (Compute), scaled by the chain rule.
    std::vector<VariableSlice> halved(values.begin(), values.end());
    for (VariableSlice& slice : halved) {
      for (float& v : slice.dense) v *= kScale;
      for (float& v : slice.rows) v *= kScale;
    }
    if (absl::Status s = logreg_.ComputeOn(device, batch, halved,
                                           with_gradients, nullptr, result);
        !s.ok()) {
      return s;
    }
    for (VariableSlice& g : result->gradients) {
      for (float& v : g.dense) v *= kScale;
      for (float& v : g.rows) v *= kScale;
    }
    if (dense_gradients == nullptr || !with_gradients) {
      return absl::OkStatus();
    }
    return MoveDenseGradientsTo(device, *dense_gradients, variables_,
                                &result->gradients);
  }

 private:
  static constexpr float kScale = 0.5f;
  const LogRegModel logreg_;
  std::vector<ModelVariable> variables_;
};

DISTRT_REGISTER_MODEL(
    "test_scaled_logreg",
    [](const ModelConfig& config) -> absl::StatusOr<std::unique_ptr<Model>> {
      ModelVariableOptions options;
      options.optimizer = config.optimizer;
      options.partition = config.partition;
      options.seed = config.seed;
      return std::make_unique<ScaledLogReg>(config.num_features, options);
    });

}  // namespace
}  // namespace distrt::testing
