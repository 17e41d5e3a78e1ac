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
//                          (one CPU device) and HasStrategy() false.
//
// One difference from TF: in the default context TF's
// get_replica_context() returns the default strategy's replica context;
// here GetReplicaContext() is null there too, since a ReplicaContext exists
// only while its replica function runs. Call DefaultStrategy().Run to get
// one.

#include "runtime/distribute/replica_context.h"
#include "runtime/distribute/strategy.h"

namespace distrt {

// The current strategy: the replica function's, the innermost scope's, the
// one set by ExperimentalSetStrategy, or DefaultStrategy().
Strategy& GetStrategy();
// Whether the current strategy is not the default one.
bool HasStrategy();
// The calling replica function's context; null in cross-replica context
// and in the default context.
ReplicaContext* GetReplicaContext();
// Whether the thread is in a strategy's cross-replica context (a scope, a
// set strategy or a merge_fn, not inside a replica function).
bool InCrossReplicaContext();
// Makes `strategy` the thread's strategy outside any scope, as if its
// scope were entered for good (tf.distribute.experimental_set_strategy);
// null goes back to the default strategy. `strategy` must outlive that.
void ExperimentalSetStrategy(Strategy* strategy);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_DISTRIBUTION_CONTEXT_H_
