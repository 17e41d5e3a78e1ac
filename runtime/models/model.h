#ifndef DISTRT_RUNTIME_MODELS_MODEL_H_
#define DISTRT_RUNTIME_MODELS_MODEL_H_

// Model: what a strategy trains. A model declares its variables (dense,
// row-sparse, or hash-embedding) and computes, for one batch and the values
// of its variables, the loss, the predictions and the gradients. It holds no
// variable values itself: strategies own those (on devices, on the host, or
// on parameter servers) and hand the model what a batch needs, so one model
// object serves every replica concurrently (Compute is const and
// thread-safe).
//
// Losses and gradients are SUMS over the batch's examples, not means: the
// strategy divides by the global batch size after reducing over replicas,
// which gives the same update whether a global batch is computed on one
// device or split over many (TF's compute_average_loss convention).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/device/device.h"
#include "runtime/input/batch.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"

namespace distrt {

struct ModelVariable {
  enum class Kind {
    // Every step reads and updates the whole variable.
    kDense,
    // A [rows, width] float32 variable of which a batch reads and updates
    // only the rows its ids name (a large sparse linear layer); on parameter
    // servers it is partitioned by rows with `partition`.
    kRowSparse,
    // Rows keyed by any int64 id, created on first use (hash_spec).
    kHashEmbedding,
  };
  Kind kind = Kind::kDense;
  VariableSpec spec;            // kDense and kRowSparse
  PartitionPolicy partition;    // kRowSparse (and large kDense) on ps tasks
  HashEmbeddingSpec hash_spec;  // kHashEmbedding
  // kDense and kRowSparse: the values the variable starts from, when they
  // are not a function of spec.initializer (a TorchScript module's saved
  // parameters): every element, row-major. The chief assigns them after
  // creating the variables unless it restored a checkpoint or the job is
  // past global step 0
  // (runtime/training/model_variables.h, AssignInitialValues).
  std::vector<float> initial_values;

  const std::string& name() const {
    return kind == Kind::kHashEmbedding ? hash_spec.name : spec.name;
  }
  // Floats per row: RowWidth(spec), or hash_spec.dim.
  int64_t row_width() const;
};

// One variable's values (or gradient) as a step sees them. For kDense, all
// elements in `dense`. For the sparse kinds, the rows of `ids` (sorted,
// distinct) in `rows`, ids.size() * row_width floats.
struct VariableSlice {
  std::vector<float> dense;
  std::vector<int64_t> ids;
  std::vector<float> rows;
};

// What a model predicts, which decides the metrics that make sense.
enum class ModelOutput {
  kRegression,  // one real value per example
  kBinary,      // one probability of label 1 per example
  kMulticlass,  // num_classes probabilities per example
};

// Where ComputeOn writes the gradients of the dense variables when the
// caller wants them in one buffer in device memory, to all-reduce them
// there without a copy: variable i's at base + offsets[i] (offsets has one
// entry per variable; those of the sparse kinds are unused).
struct DenseGradientBuffer {
  float* base = nullptr;
  std::vector<int64_t> offsets;
};

struct ModelStepResult {
  double loss_sum = 0;             // sum over the batch's examples
  std::vector<float> predictions;  // size * outputs_per_example
  // Per variable, in variables() order, in the same layout as the values
  // given (the same ids for the sparse kinds). Empty when not asked for.
  std::vector<VariableSlice> gradients;
};

class Model {
 public:
  virtual ~Model() = default;

  // What --model names it by: "linear", "logreg", "mlp", "wide_deep",
  // "torchscript", or a name a program registered (model_registry.h).
  virtual std::string name() const = 0;
  virtual const std::vector<ModelVariable>& variables() const = 0;
  virtual ModelOutput output() const = 0;
  // 1, or num_classes for kMulticlass.
  virtual int outputs_per_example() const = 0;

  // Per variable (in variables() order): the sorted distinct ids of the
  // rows `batch` uses, for the sparse kinds; empty for kDense.
  // INVALID_ARGUMENT when the batch does not fit the model (e.g. a feature
  // id beyond a row-sparse variable's rows, missing dense features).
  virtual absl::Status SparseIds(
      const Batch& batch, std::vector<std::vector<int64_t>>* ids) const = 0;

  // Forward pass, and the backward pass when `with_gradients`, on `device`:
  // with its math, scratch arrays in its memory. `values` has one slice per
  // variable, filled as SparseIds asked; values and results are in host
  // memory, except that with `dense_gradients` (and with_gradients) the
  // dense variables' gradients go there and their result->gradients stay
  // empty. INVALID_ARGUMENT when the batch or the values do not fit the
  // model; a device failure as the device reports it.
  virtual absl::Status ComputeOn(Device& device, const Batch& batch,
                                 absl::Span<const VariableSlice> values,
                                 bool with_gradients,
                                 const DenseGradientBuffer* dense_gradients,
                                 ModelStepResult* result) const = 0;

  // ComputeOn on the host, every gradient in `result`.
  absl::Status Compute(const Batch& batch,
                       absl::Span<const VariableSlice> values,
                       bool with_gradients, ModelStepResult* result) const;
};

// For a model that computes its gradients on the host (a TorchScript
// module, a user's model) when ComputeOn is given a DenseGradientBuffer:
// copies each dense gradient of `gradients` (host memory, one per variable
// of `variables`) to its place in `buffer` on `device`, and empties it
// there, as ComputeOn documents. INVALID_ARGUMENT when a gradient's size
// is not its variable's, or the counts do not match.
absl::Status MoveDenseGradientsTo(Device& device,
                                  const DenseGradientBuffer& buffer,
                                  absl::Span<const ModelVariable> variables,
                                  std::vector<VariableSlice>* gradients);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_MODEL_H_
