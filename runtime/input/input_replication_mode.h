#ifndef DISTRT_RUNTIME_INPUT_INPUT_REPLICATION_MODE_H_
#define DISTRT_RUNTIME_INPUT_INPUT_REPLICATION_MODE_H_

// InputReplicationMode (tf.distribute.InputReplicationMode): how input
// pipelines map to replicas. PER_WORKER: one pipeline per worker, whose
// batches are split over the worker's replicas; the only mode here (TF's
// PER_REPLICA, a pipeline per replica, is not offered: the replicas of a
// worker share one reader and one shuffle).

namespace distrt {

enum class InputReplicationMode { kPerWorker };

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INPUT_REPLICATION_MODE_H_
