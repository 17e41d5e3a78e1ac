#ifndef DISTRT_RUNTIME_TORCHSCRIPT_TORCHSCRIPT_MODEL_H_
#define DISTRT_RUNTIME_TORCHSCRIPT_TORCHSCRIPT_MODEL_H_

// TorchScriptModel: a model written in PyTorch and saved with
// torch.jit.script(model).save(path), trained by the strategies like a
// built-in model (docs/torchscript.md). Its parameters become the model's
// variables, named after them ("fc1.weight") and starting from the values
// saved in the file (ModelVariable::initial_values); the strategy places
// them, runs the optimizers, checkpoints them. Each step hands the module
// this replica's variable values, runs forward(x) with x a float32
// [batch, num_features] tensor, applies the loss (summed over the batch),
// and autograd gives the gradients.
//
// A module with embedding tables (an exported embedding_dims() -> List[int])
// gets, instead of x, one [batch, dim] tensor per table: each example's
// sparse feature ids' rows, weighted by the features' values and summed (TF's
// embedding_column with combiner "sum"). The tables are hash embedding
// variables ("embedding.0", ...), so on ps tasks only a batch's rows are
// pulled and only their gradients pushed; the rows are gathered and their
// gradients scattered here, and LibTorch sees only the pooled tensors.
//
// LibTorch (Debian's libtorch-dev) is behind this header: nothing that
// includes it includes torch, so only this library's one source file pays
// torch's compile time.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/models/model.h"
#include "runtime/models/model_config.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/placement.h"

namespace distrt {

// What the module's output is trained against (--loss).
enum class TorchScriptLoss {
  // Labels are class ids 0..outputs-1; outputs >= 2 logits per example.
  kSoftmaxCrossEntropy,
  // Labels are 0 or 1; one logit per example.
  kSigmoidCrossEntropy,
  // Labels are real values; one output per example.
  kMeanSquaredError,
};

// "softmax_cross_entropy", "sigmoid_cross_entropy", "mean_squared_error";
// INVALID_ARGUMENT listing them otherwise.
absl::StatusOr<TorchScriptLoss> ParseTorchScriptLoss(absl::string_view name);
absl::string_view TorchScriptLossName(TorchScriptLoss loss);

struct TorchScriptModelConfig {
  // The file torch.jit.save wrote.
  std::string path;
  TorchScriptLoss loss = TorchScriptLoss::kSoftmaxCrossEntropy;
  // Columns of x; >= 1. A module with embedding tables takes no x, and
  // this is then only the feature ids' bound (unused).
  int64_t num_features = 0;
  // Applied to every parameter.
  OptimizerConfig optimizer;
  // Of large parameters on ps tasks (partitioned by rows along dim 0).
  PartitionPolicy partition =
      PartitionPolicy::MinSize(256 << 10, /*max_shards=*/0);
  // The embedding tables' initializer seeds derive from it.
  uint64_t seed = 0;
  // LibTorch's intra-op threads (process-wide); 0 leaves LibTorch's
  // default. Replicas step concurrently, so the worker gives
  // cores / replicas.
  int intra_op_threads = 0;
};

// The name of a module's embedding table `index`: "embedding.<index>".
std::string TorchScriptEmbeddingName(int index);

// Loads the module and checks it: every parameter float32, forward taking
// x of [1, num_features] (or one row per embedding table) and returning
// [1, outputs] with outputs that fit the loss, no buffer that forward
// changes in training. INVALID_ARGUMENT naming the file and what is wrong
// (an unreadable file, a module that is not TorchScript, a forward that
// fails); FAILED_PRECONDITION when the plugin (or LibTorch) is missing.
absl::StatusOr<std::unique_ptr<Model>> LoadTorchScriptModel(
    const TorchScriptModelConfig& config);

// The model of ModelConfig's name "torchscript" (registered so in
// ModelRegistry by this library): its torchscript_file, loss (required),
// num_features, optimizer, partition, seed and threads_per_replica.
// INVALID_ARGUMENT naming the flag (--torchscript_file, --loss) that is
// missing or wrong, or as LoadTorchScriptModel.
absl::StatusOr<std::unique_ptr<Model>> CreateTorchScriptModel(
    const ModelConfig& config);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TORCHSCRIPT_TORCHSCRIPT_MODEL_H_
