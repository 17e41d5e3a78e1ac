#ifndef DISTRT_RUNTIME_DISTRIBUTE_MULTI_WORKER_MIRRORED_STRATEGY_H_
#define DISTRT_RUNTIME_DISTRIBUTE_MULTI_WORKER_MIRRORED_STRATEGY_H_

// MultiWorkerMirroredStrategy: MirroredStrategy over several worker
// processes, without parameter servers (TF's
// tf.distribute.MultiWorkerMirroredStrategy). Every worker holds a copy of
// every variable on each of its devices; each step, every replica of every
// worker computes on its share of the global batch, the gradients are summed
// over all of them, and every copy applies the same update, so all copies
// on all workers stay identical without ever being sent.
//
// The reductions are hierarchical (MultiWorkerAllReduce): this worker's
// replicas first, then across workers through a CrossWorkerCollective
// (GlooGroup: TCP between the processes), then back to the local replicas.
// Sparse gradients are gathered: the rows of every replica of every worker,
// in worker order, so that every worker applies the same rows in the same
// order.
//
// Every worker must create the same variables in the same order and run the
// same number of steps: each step is a set of collectives that every worker
// joins. A worker that leaves (dies, or stops calling) fails the others'
// next collective within the collective's timeout; the group stays failed.
//
// Keeping the copies identical from the start is the caller's job: the
// chief restores or initialises the variables and broadcasts them
// (runtime/training/model_state.h, BroadcastModelState).

#include <memory>
#include <string>
#include <vector>

#include "runtime/collective/cross_worker_collective.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/multi_worker_all_reduce.h"

namespace distrt {

class MultiWorkerMirroredStrategy : public MirroredStrategy {
 public:
  // `devices` (non-empty) and `workers` (this worker's connections to the
  // others; its rank is this worker's) must outlive the strategy.
  // `bucket_bytes` bounds each cross-worker all-reduce (gradient fusion:
  // MultiWorkerAllReduce).
  static absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> Create(
      std::vector<Device*> devices, CrossWorkerCollective* workers,
      StrategyOptions options = {},
      int64_t bucket_bytes = MultiWorkerAllReduce::kDefaultBucketBytes);

  std::string name() const override { return "MultiWorkerMirroredStrategy"; }
  // "MultiWorkerMirroredStrategy: worker 1 of 3, 2 replicas on
  // CPU:0..CPU:1 (6 in sync over all workers), cross-device ops ..."
  std::string Describe() const override;
  int num_workers() const override { return workers_->size(); }
  int worker_rank() const override { return workers_->rank(); }

  // Checks with every other worker (a collective: all call it) that all
  // have the same number of local replicas, which the reductions' MEAN and
  // the split of the global batch assume: FAILED_PRECONDITION naming the
  // workers and their counts otherwise.
  absl::Status Initialize() override;

  absl::Status GatherFromOtherWorkers(SparseGradient& gathered) override;

 protected:
  absl::Status SumOverWorkers(Tensor& value) override;

 private:
  MultiWorkerMirroredStrategy(std::vector<Device*> devices,
                              std::unique_ptr<CrossDeviceOps> ops,
                              StrategyOptions options,
                              CrossWorkerCollective* workers)
      : MirroredStrategy(std::move(devices), std::move(ops),
                         std::move(options)),
        workers_(workers) {}

  CrossWorkerCollective* const workers_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_MULTI_WORKER_MIRRORED_STRATEGY_H_
