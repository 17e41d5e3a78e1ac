#ifndef DISTRT_RUNTIME_DISTRIBUTE_REPLICA_CONTEXT_H_
#define DISTRT_RUNTIME_DISTRIBUTE_REPLICA_CONTEXT_H_

// ReplicaContext: what a replica's function sees while Strategy::Run runs it
// (tf.distribute.ReplicaContext): which replica it is, collectives with the
// other replicas, MergeCall into cross-replica context, and variable updates
// that follow each variable's aggregation.
//
// Every collective (AllReduce, MergeCall, AssignAdd, AllGather, and the
// Apply* calls: they aggregate the gradients unless told the caller did,
// and wait for each other on variables shared by several replicas) must be
// made by every replica in the same order. A replica that returns early, or
// errs, makes the others' next collective fail at once (see ReplicaBarrier)
// rather than hang.

#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
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

// Whether ReplicaContext's Apply* calls combine the replicas' gradients
// before applying them: TF's optimizer.apply_gradients(...,
// experimental_aggregate_gradients=True / False).
enum class GradientAggregation {
  // The default, as in TF: each replica passes the gradient of its own part
  // of the batch, and the call first combines them over every replica in
  // sync (every worker's, under MultiWorkerMirroredStrategy). Dense
  // gradients are all-reduced with MEAN for a variable whose aggregation is
  // kMean and with SUM for every other (kSum, kNone, kOnlyFirstReplica: TF's
  // optimizer sums every gradient, all_reduce_sum_gradients, whatever the
  // variable's aggregation; kMean is honoured as the one that asks for
  // something else). Sparse gradients are gathered (AllGather: repeated ids
  // add up, so a sum), their rows first divided by num_replicas_in_sync()
  // for a kMean variable. Nothing to exchange with one replica in sync.
  kAggregate,
  // The caller already made the gradients the same on every replica (its
  // own AllReduce, e.g. fused with the loss into one collective, or
  // AllGather): they are applied as given (experimental_aggregate_gradients
  // = False).
  kAlreadyAggregated,
};

// What MergeCall returns to each replica for a merge_fn that returns R: R
// itself, copied, except that a per-replica result is unwrapped (below).
template <typename R, typename = void>
struct MergeCallResult {
  using type = R;
  static constexpr bool kUnwraps = false;
};
// absl::StatusOr<PerReplica<U>> or absl::StatusOr<Mirrored<U>>: replica r
// gets absl::StatusOr<U> with component r.
template <typename V>
struct MergeCallResult<absl::StatusOr<V>,
                       std::enable_if_t<IsDistributedValues<V>::value>> {
  using type = absl::StatusOr<typename ComponentOf<V>::type>;
  static constexpr bool kUnwraps = true;
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
  // worker's replicas' values (as in TF), and the replicas go on with its
  // result. merge_fn returns absl::StatusOr<R>; an error is returned to
  // every replica. What each replica gets (MergeCallResult):
  // - R = PerReplica<U> or Mirrored<U>: unwrapped, as TF does: replica r
  //   gets absl::StatusOr<U> holding component r (moved out, so U may be
  //   move-only, e.g. a Tensor). A result with other than
  //   num_local_replicas() components is INVALID_ARGUMENT, on every
  //   replica.
  // - any other R: a copy on every replica, so R must be copyable (a
  //   shared_ptr for big or move-only results).
  template <typename T, typename MergeFn>
  typename MergeCallResult<
      std::invoke_result_t<MergeFn, Strategy&, PerReplica<T>&>>::type
  MergeCall(T value, MergeFn merge_fn);

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

  // Applies the variable's optimizer with `grad`, a gradient for all of its
  // elements: by default this replica's own, which the call first combines
  // with every other replica's (GradientAggregation::kAggregate; each
  // replica must call it); with kAlreadyAggregated, one that is already the
  // same on every replica (after AllReduce). Each copy is then updated
  // once, by the first replica that computes with it. INVALID_ARGUMENT
  // naming the variable and both sizes, before any collective, when `grad`
  // does not have the variable's element count.
  absl::Status ApplyGradient(
      DistributedVariable& variable, absl::Span<const float> grad,
      GradientAggregation aggregation = GradientAggregation::kAggregate);
  // A gradient of some rows of a float32 variable for ApplyGradients: this
  // replica's own, or with kAlreadyAggregated, the same on every replica
  // (after AllGather). `grad` must live until the call returns.
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
  // which of the other variables were updated is unspecified. The
  // gradients are aggregated as `aggregation` says, the dense ones in one
  // all-reduce for each of SUM and MEAN. INVALID_ARGUMENT, on every
  // replica and before any collective or update, when the counts differ or
  // a gradient does not fit its variable (as ApplyGradient's, and
  // ApplySparseGradient's).
  absl::Status ApplyGradients(
      absl::Span<DistributedVariable* const> variables,
      absl::Span<const absl::Span<const float>> grads,
      absl::Span<const SparseUpdate> sparse = {}, AddUpdate* add = nullptr,
      GradientAggregation aggregation = GradientAggregation::kAggregate);
  // ApplyGradient for rows `grad.ids` of a float32 variable; by default the
  // replicas' gradients are first gathered into one (AllGather).
  // INVALID_ARGUMENT naming the variable and both sizes when `grad.rows`
  // does not hold ids.size() rows of the variable's row width.
  absl::Status ApplySparseGradient(
      DistributedVariable& variable, const SparseGradient& grad,
      GradientAggregation aggregation = GradientAggregation::kAggregate);
  // ApplyGradients, then ReadMany of `read` and `rows`: a step's updates and
  // the next step's reads, in one round trip where the strategy can (on
  // parameter servers without push_in_background: one bundle per ps task,
  // whose reads see its updates). Where replicas share copies, every
  // replica's updates must be in before anyone reads: the two go one after
  // the other, as the separate calls would. With pushes in the background
  // (StrategyOptions::push_in_background) the reads follow the push's
  // start, not its end, and may lack it. The gradients are aggregated (or
  // not) and checked as ApplyGradients'.
  absl::StatusOr<std::vector<Tensor>> ApplyGradientsThenRead(
      absl::Span<DistributedVariable* const> variables,
      absl::Span<const absl::Span<const float>> grads,
      absl::Span<const SparseUpdate> sparse, AddUpdate* add,
      absl::Span<const DistributedVariable* const> read,
      absl::Span<const RowsToRead> rows,
      GradientAggregation aggregation = GradientAggregation::kAggregate);

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
  // The gradients the Apply* calls apply, the same on every replica, and
  // what they point into (defined there too).
  struct AggregatedGradients;
  // Checks the gradients against their variables, then aggregates them as
  // `aggregation` says (the same collectives on every replica).
  absl::StatusOr<AggregatedGradients> AggregateGradients(
      absl::Span<DistributedVariable* const> variables,
      absl::Span<const absl::Span<const float>> grads,
      absl::Span<const SparseUpdate> sparse, GradientAggregation aggregation);
  // The dense gradients in `aggregated`, each all-reduced with its
  // variable's op.
  absl::Status AllReduceDense(absl::Span<DistributedVariable* const> variables,
                              absl::Span<const absl::Span<const float>> grads,
                              AggregatedGradients& aggregated);
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
typename MergeCallResult<
    std::invoke_result_t<MergeFn, Strategy&, PerReplica<T>&>>::type
ReplicaContext::MergeCall(T value, MergeFn merge_fn) {
  using Merged = std::invoke_result_t<MergeFn, Strategy&, PerReplica<T>&>;
  using Result = MergeCallResult<Merged>;
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
    auto merged = std::make_shared<Merged>(merge_fn(*strategy_, per_replica));
    if constexpr (Result::kUnwraps) {
      if (merged->ok() && (*merged)->num_replicas() != num_local_replicas()) {
        *merged = absl::InvalidArgumentError(
            absl::StrCat("MergeCall: merge_fn returned ",
                         (*merged)->num_replicas(), " per-replica values for ",
                         num_local_replicas(), " local replicas"));
      }
    }
    group_->merge_result() = std::move(merged);
  }
  RETURN_IF_ERROR(barrier.Wait("MergeCall"));
  Merged& merged = *static_cast<Merged*>(group_->merge_result().get());
  typename Result::type mine = [&]() -> typename Result::type {
    if constexpr (Result::kUnwraps) {
      if (!merged.ok()) return merged.status();
      // Each replica moves out only its own component.
      return std::move((*merged)[replica_]);
    } else {
      return merged;
    }
  }();
  // Nobody starts the next MergeCall (overwriting the result) before every
  // replica has its own.
  RETURN_IF_ERROR(barrier.Wait("MergeCall"));
  return mine;
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_REPLICA_CONTEXT_H_
