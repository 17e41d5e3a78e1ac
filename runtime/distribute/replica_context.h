#ifndef DISTRT_RUNTIME_DISTRIBUTE_REPLICA_CONTEXT_H_
#define DISTRT_RUNTIME_DISTRIBUTE_REPLICA_CONTEXT_H_

// ReplicaContext: what a replica's function sees while Strategy::Run runs it
// (tf.distribute.ReplicaContext): which replica it is, collectives with the
// other replicas, MergeCall into cross-replica context, and variable updates
// that follow each variable's aggregation.
//
// Every collective (AllReduce, MergeCall, AssignAdd, and the Apply* calls
// on variables shared by several replicas) must be made by every replica in
// the same order. A replica that returns early, or errs, makes the others'
// next collective fail at once (see ReplicaBarrier) rather than hang.

#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/collective/reduce_op.h"
#include "runtime/device/device.h"
#include "runtime/distribute/cross_device_ops.h"
#include "runtime/distribute/replica_group.h"
#include "runtime/distribute/values.h"
#include "runtime/distribute/variable.h"
#include "runtime/tensor/tensor.h"
#include "runtime/util/status_macros.h"

namespace distrt {

class ReplicaContext;
class Strategy;

// While it lives, the calling thread is in cross-replica context, as in a
// MergeCall's merge_fn: CurrentReplicaContext() (strategy.h) is null.
class CrossReplicaSection {
 public:
  CrossReplicaSection();
  ~CrossReplicaSection();
  CrossReplicaSection(const CrossReplicaSection&) = delete;
  CrossReplicaSection& operator=(const CrossReplicaSection&) = delete;

 private:
  ReplicaContext* const previous_;
};

// Rows of a sparse gradient: ids.size() rows of `width` floats in `rows`
// (TF's IndexedSlices). Repeated ids add up.
struct SparseGradient {
  std::vector<int64_t> ids;
  std::vector<float> rows;
};

class ReplicaContext {
 public:
  ReplicaContext(Strategy* strategy, ReplicaGroup* group, CrossDeviceOps* ops,
                 int replica)
      : strategy_(strategy), group_(group), ops_(ops), replica_(replica) {}

  // This replica among every replica in sync (every worker's, under
  // MultiWorkerMirroredStrategy: worker w's are w * num_local_replicas()
  // onwards), as in TF.
  int replica_id_in_sync_group() const;
  int num_replicas_in_sync() const;
  // This replica among this process's, which Run drives: the index of its
  // value in Run's PerReplica results and in a MergeCall's.
  int local_replica_id() const { return replica_; }
  int num_local_replicas() const { return group_->num_replicas(); }
  Device* device() const { return group_->device(replica_); }
  Strategy& strategy() const { return *strategy_; }

  // Replaces `value` (float32, int64 or float64, the same dtype and shape
  // on every replica) with the sum or mean over every replica in sync:
  // float32 with the strategy's CrossDeviceOps, int64 exactly (MEAN
  // rounding toward zero) and float64 in double precision, on the host.
  absl::Status AllReduce(ReduceOp op, Tensor& value);

  // Every local replica pauses here; merge_fn(strategy, per_replica_values)
  // runs once, in cross-replica context, on one replica's thread, with this
  // worker's replicas' values (as in TF); its result is copied to every
  // local replica, which go on. merge_fn returns
  // absl::StatusOr<R> with R copyable (a shared_ptr for big or move-only
  // results); an error is returned to every replica.
  template <typename T, typename MergeFn>
  std::invoke_result_t<MergeFn, Strategy&, PerReplica<T>&> MergeCall(
      T value, MergeFn merge_fn);

  // Waits for the other replicas, e.g. before reading what another replica
  // wrote.
  absl::Status Barrier() { return group_->barrier().Wait("barrier"); }

  // This replica's copy of `variable` (for a parameter-server variable, its
  // current value on the servers).
  absl::StatusOr<Tensor> Read(const DistributedVariable& variable) const;
  absl::Status ReadRows(const DistributedVariable& variable,
                        absl::Span<const int64_t> ids,
                        absl::Span<float> out) const;
  // Rows `ids` of a float32 variable, for ReadMany: ids.size() rows into
  // `out`.
  struct RowsToRead {
    const DistributedVariable* variable;
    absl::Span<const int64_t> ids;
    absl::Span<float> out;
  };
  // Read for each of `variables`, in order, and ReadRows for each of `rows`,
  // at once: on parameter servers, the small variables of each ps task come
  // in one request, and all the requests go out together (one round trip
  // for a step's dense and sparse reads). The first error (with Read's or
  // ReadRows' message, for a variable read one at a time).
  absl::StatusOr<std::vector<Tensor>> ReadMany(
      absl::Span<const DistributedVariable* const> variables,
      absl::Span<const RowsToRead> rows = {}) const;

  // variable += delta, with the variable's aggregation: kSum / kMean
  // combine the delta of every replica in sync (every worker's, under
  // MultiWorkerMirroredStrategy), kOnlyFirstReplica takes this worker's
  // first replica's (as TF's, without a cross-worker broadcast: every
  // worker computes the same), and kNone is FAILED_PRECONDITION with more
  // than one replica in sync (as in TF). Sync-on-read variables add to this
  // replica's copy only; ReadVar combines them. `after`, when not null,
  // receives the value the add left in the copy, if this replica made the
  // add (replica 0 always does; a replica sharing its copy with an earlier
  // one does not, and gets an empty tensor): a training step learns the
  // new global step from it without another read (on ps tasks, from the
  // add's own round trip).
  absl::Status AssignAdd(DistributedVariable& variable, Tensor delta,
                         Tensor* after = nullptr);

  // Applies the variable's optimizer with a gradient that is already the
  // same on every replica (after AllReduce or a MergeCall gather): each
  // copy is updated once, by the first replica that computes with it.
  absl::Status ApplyGradient(DistributedVariable& variable,
                             absl::Span<const float> grad);
  // A gradient of some rows of a float32 variable for ApplyGradients, the
  // same on every replica (after AllGather).
  struct SparseUpdate {
    DistributedVariable* variable;
    const SparseGradient* grad;
  };
  // An AssignAdd(variable, delta, after) that goes with ApplyGradients'
  // updates: a training step's global step. ApplyGradients aggregates
  // `delta` in place (as AssignAdd does its copy), so an AddUpdate is made
  // anew for each call.
  struct AddUpdate {
    DistributedVariable* variable;
    Tensor delta;
    Tensor* after = nullptr;
  };
  // ApplyGradient for each of `variables` with grads[i], ApplySparseGradient
  // for each of `sparse`, then `add` when it is not null, at once (on
  // parameter servers, the small variables of each ps task in one request,
  // and every request sent together: one round trip for a step's updates
  // and its global step), waiting for the other replicas once at the end
  // instead of once per variable that replicas share. When an update fails,
  // which of the other variables were updated is unspecified.
  // INVALID_ARGUMENT, on every replica and before any update, when the
  // counts differ.
  absl::Status ApplyGradients(absl::Span<DistributedVariable* const> variables,
                              absl::Span<const absl::Span<const float>> grads,
                              absl::Span<const SparseUpdate> sparse = {},
                              AddUpdate* add = nullptr);
  absl::Status ApplySparseGradient(DistributedVariable& variable,
                                   const SparseGradient& grad);
  // ApplyGradients, then ReadMany of `read` and `rows`: a step's updates and
  // the next step's reads, in one round trip where the strategy can (on
  // parameter servers without push_in_background: one bundle per ps task,
  // whose reads see its updates). Where replicas share copies, every
  // replica's updates must be in before anyone reads: the two go one after
  // the other, as the separate calls would. With pushes in the background
  // (StrategyOptions::push_in_background) the reads follow the push's
  // start, not its end, and may lack it.
  absl::StatusOr<std::vector<Tensor>> ApplyGradientsThenRead(
      absl::Span<DistributedVariable* const> variables,
      absl::Span<const absl::Span<const float>> grads,
      absl::Span<const SparseUpdate> sparse, AddUpdate* add,
      absl::Span<const DistributedVariable* const> read,
      absl::Span<const RowsToRead> rows);

  // Gathers every replica's sparse gradient into one (replica order; with
  // several workers, then worker order), the same on every replica: the
  // all-reduce of sparse gradients.
  absl::StatusOr<std::shared_ptr<const SparseGradient>> AllGather(
      SparseGradient grad);

 private:
  // What ApplyGradients sends from this replica: the copies it updates,
  // and whether it must wait for the other replicas afterwards (defined in
  // replica_context.cc, where Strategy is complete).
  struct CopyUpdates;
  // What ReadMany reads, as this replica's copies (defined there too).
  struct CopyReads;
  CopyReads ReadsOfThisReplica(
      absl::Span<const DistributedVariable* const> variables,
      absl::Span<const RowsToRead> rows) const;
  absl::StatusOr<CopyUpdates> UpdatesOfThisReplica(
      absl::Span<DistributedVariable* const> variables,
      absl::Span<const absl::Span<const float>> grads,
      absl::Span<const SparseUpdate> sparse, AddUpdate* add);
  // Sends `updates` to the strategy (when there are any), then waits for the
  // other replicas where they share copies.
  absl::Status ApplyCopyUpdates(const CopyUpdates& updates);

  // Whether this replica is the one that updates its copy of `variable`.
  bool UpdatesItsCopy(const DistributedVariable& variable) const;
  // Whether replicas share copies, so updates need a barrier before anyone
  // reads again.
  bool SharesCopies(const DistributedVariable& variable) const;
  // AssignAdd's aggregation: makes `delta` what this replica adds to its
  // copy, with the collectives the variable's aggregation needs (the same
  // on every replica). Whether this replica makes the add.
  absl::StatusOr<bool> AggregateAdd(DistributedVariable& variable,
                                    Tensor& delta);
  // Whether the replicas wait for each other after an add to `variable`.
  bool WaitsAfterAdd(const DistributedVariable& variable) const;

  Strategy* const strategy_;
  ReplicaGroup* const group_;
  CrossDeviceOps* const ops_;
  const int replica_;
};

template <typename T, typename MergeFn>
std::invoke_result_t<MergeFn, Strategy&, PerReplica<T>&>
ReplicaContext::MergeCall(T value, MergeFn merge_fn) {
  using Result = std::invoke_result_t<MergeFn, Strategy&, PerReplica<T>&>;
  ReplicaBarrier& barrier = group_->barrier();
  group_->Put(replica_, std::make_shared<T>(std::move(value)));
  RETURN_IF_ERROR(barrier.Wait("MergeCall"));
  if (replica_ == 0) {
    std::vector<T> values;
    values.reserve(num_local_replicas());
    for (int r = 0; r < num_local_replicas(); ++r) {
      values.push_back(std::move(*group_->Get<T>(r)));
    }
    PerReplica<T> per_replica(std::move(values));
    CrossReplicaSection cross_replica;
    group_->merge_result() =
        std::make_shared<Result>(merge_fn(*strategy_, per_replica));
  }
  RETURN_IF_ERROR(barrier.Wait("MergeCall"));
  Result mine = *static_cast<const Result*>(group_->merge_result().get());
  // Nobody starts the next MergeCall (overwriting the result) before every
  // replica has its copy.
  RETURN_IF_ERROR(barrier.Wait("MergeCall"));
  return mine;
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_REPLICA_CONTEXT_H_
