#ifndef DISTRT_RUNTIME_DISTRIBUTE_DISTRIBUTION_CONTEXT_H_
#define DISTRT_RUNTIME_DISTRIBUTE_DISTRIBUTION_CONTEXT_H_

// TF's distribution context functions (tf.distribute.get_strategy and
// friends), per thread. A thread is in one of three contexts:
//
//   replica context        inside a replica function of Strategy::Run:
//                          GetReplicaContext() is that replica's context
//                          and GetStrategy() its strategy;
//   cross-replica context  inside a Strategy::Scope (strategy.scope()), or
//                          after ExperimentalSetStrategy, or in a
//                          MergeCall's merge_fn: GetReplicaContext() is
//                          null and GetStrategy() that strategy;
//   the default context    otherwise: GetStrategy() is DefaultStrategy()
//                          (one CPU device), HasStrategy() false, and
//                          GetReplicaContext() the default replica context,
//                          replica 0 of the default strategy's one, as in
//                          TF.
//
// Code that creates variables without being handed a strategy calls
// CreateVariable below, which asks GetStrategy(): inside a strategy's scope
// the variable is that strategy's, placed by it (mirrored on every replica's
// device under MirroredStrategy, on the ps tasks under
// ParameterServerStrategy), as a tf.Variable made inside strategy.scope()
// is; outside any scope it is the default strategy's.

#include "absl/status/statusor.h"
#include "runtime/collective/reduce_op.h"
#include "runtime/distribute/replica_context.h"
#include "runtime/distribute/strategy.h"
#include "runtime/distribute/variable.h"
#include "runtime/ps/hash_embedding_table.h"

namespace distrt {

// The current strategy: the replica function's, the innermost scope's, the
// one set by ExperimentalSetStrategy, or DefaultStrategy().
Strategy& GetStrategy();
// Whether the current strategy is not the default one.
bool HasStrategy();
// The calling replica function's context; in the default context,
// DefaultReplicaContext(); null in cross-replica context (a scope, a set
// strategy, a merge_fn), as in TF.
ReplicaContext* GetReplicaContext();
// TF's default replica context, for code that runs outside any strategy:
// replica 0 of 1 of DefaultStrategy(), so replica_id_in_sync_group() is 0,
// num_replicas_in_sync() 1, collectives return at once with the one
// replica's value (MergeCall runs merge_fn on it, in cross-replica
// context), and variable updates go to the default strategy's variables.
// One per thread, alive until the thread exits.
ReplicaContext& DefaultReplicaContext();
// Whether the thread is in a strategy's cross-replica context (a scope, a
// set strategy or a merge_fn, not inside a replica function).
bool InCrossReplicaContext();
// Makes `strategy` the thread's strategy outside any scope, as if its
// scope were entered for good (tf.distribute.experimental_set_strategy);
// null goes back to the default strategy. `strategy` must outlive that.
// Like a scope, it is the strategy the thread is in: another strategy's
// scope() or Run is then FAILED_PRECONDITION (strategy.h).
void ExperimentalSetStrategy(Strategy* strategy);

// A variable (hash table) created by GetStrategy(), owned by it, as
// Strategy::CreateVariable (CreateHashTable) does: TF's tf.Variable made
// without naming a strategy, which belongs to the strategy whose scope it
// is made in (or the default strategy). In a replica function,
// FAILED_PRECONDITION as Strategy::CreateVariable is.
absl::StatusOr<DistributedVariable*> CreateVariable(
    const VariableOptions& options);
absl::StatusOr<DistributedHashTable*> CreateHashTable(
    const HashEmbeddingSpec& spec);

// How a loss function reduces its per-example losses over a batch (Keras's
// tf.keras.losses.Reduction and TF1's MEAN).
enum class LossReduction {
  kSumOverBatchSize,  // the mean over the batch: Keras's default
  kMean,              // the same, by TF1's name
  kSum,
};
// TF's tf.distribute.get_loss_reduction(): the ReduceOp that combines the
// replicas' losses reduced with `reduction` into the global batch's (SUM for
// kSum; MEAN otherwise, the default being Keras's kSumOverBatchSize). With
// per-example losses, Strategy::Reduce(GetLossReduction(r), losses,
// /*axis=*/0) gives the global batch's loss.
ReduceOp GetLossReduction(
    LossReduction reduction = LossReduction::kSumOverBatchSize);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_DISTRIBUTION_CONTEXT_H_
