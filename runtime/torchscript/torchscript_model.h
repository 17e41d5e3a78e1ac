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
// A module trained on named features (a feature spec's embedding groups,
// runtime/input/feature_spec.h: DLRM's one table per categorical feature)
// takes forward(dense, embeddings): dense the spec's numeric features,
// float32 [batch, num_dense], and one pooled [batch, dim] tensor per group,
// in the spec's order, pooled with the group's combiner (embedding_bag.h).
// Its embedding_dims() must return the groups' dims. Each group's table is
// a hash embedding variable named after the group.
//
// LibTorch (Debian's libtorch-dev) is behind this header: nothing that
// includes it includes torch, so only this library's one source file pays
// torch's compile time.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/feature_spec.h"
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

// One embedding table of a module with feature groups: a feature spec's
// group, with what bounds its ids.
struct TorchScriptGroup {
  // name: the table's variable name; dim: its width (the module's
  // embedding_dims() entry); combiner: how an example's ids pool; policy:
  // the table's admission and eviction. (features and weight_feature are
  // the input pipeline's: unused here.)
  EmbeddingGroup group;
  // identity and hash_bucket groups: their ids are in [0, buckets), and a
  // batch with another is refused; 0 for a hashed group, whose ids are any
  // int64 (FeatureSpec::GroupKey(group).buckets gives both).
  int64_t buckets = 0;
};

// The groups of `spec`, in its order, as TorchScriptModelConfig::groups
// takes them.
std::vector<TorchScriptGroup> TorchScriptGroupsOf(const FeatureSpec& spec);

struct TorchScriptModelConfig {
  // The file torch.jit.save wrote.
  std::string path;
  TorchScriptLoss loss = TorchScriptLoss::kSoftmaxCrossEntropy;
  // Columns of x; >= 1. A module with embedding tables takes no x, and
  // this is then only the feature ids' bound (unused). Unused with groups.
  int64_t num_features = 0;
  // A feature spec's embedding groups, in its order (TorchScriptGroupsOf),
  // for a module whose forward takes (dense, embeddings); empty for one
  // that takes x, or embeddings over LIBSVM ids.
  std::vector<TorchScriptGroup> groups;
  // With groups: dense's columns, the spec's FeatureSpec::num_dense()
  // (>= 0: a spec may have no numeric features).
  int64_t num_dense = 0;
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

// The name of a module's embedding table `index` without groups:
// "embedding.<index>". With groups, a table is named after its group.
std::string TorchScriptEmbeddingName(int index);

// Loads the module and checks it: every parameter float32, forward taking
// x of [1, num_features] (or one row per embedding table; or, with groups,
// dense [1, num_dense] and one row per group) and returning [1, outputs]
// with outputs that fit the loss, no buffer that forward changes in
// training. INVALID_ARGUMENT naming the file and what is wrong (an
// unreadable file, a module that is not TorchScript, a forward that fails;
// with groups, a forward that does not take two arguments, an
// embedding_dims() other than the groups' dims, naming both, a group named
// like a parameter or another group); FAILED_PRECONDITION when the plugin
// (or LibTorch) is missing.
absl::StatusOr<std::unique_ptr<Model>> LoadTorchScriptModel(
    const TorchScriptModelConfig& config);

// The model of ModelConfig's name "torchscript" (registered so in
// ModelRegistry by this library): its torchscript_file, loss (required),
// num_features, feature_spec (its groups and num_dense, when given),
// optimizer, partition, seed and threads_per_replica.
// INVALID_ARGUMENT naming the flag (--torchscript_file, --loss) that is
// missing or wrong, or as LoadTorchScriptModel.
absl::StatusOr<std::unique_ptr<Model>> CreateTorchScriptModel(
    const ModelConfig& config);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TORCHSCRIPT_TORCHSCRIPT_MODEL_H_
