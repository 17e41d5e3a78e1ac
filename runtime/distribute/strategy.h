#ifndef DISTRT_RUNTIME_DISTRIBUTE_STRATEGY_H_
#define DISTRT_RUNTIME_DISTRIBUTE_STRATEGY_H_

// Strategy: how a training step is spread over this process's devices and
// where the variables live (tf.distribute.Strategy).
//
// Run(fn) calls fn once per replica, concurrently, each on its own thread
// with a ReplicaContext for its device (TF's call_for_each_replica): replica
// 0 on the caller's thread, the others on threads the strategy keeps from
// its first Run to its destruction (replica_threads.h); what
// the replicas return comes back as PerReplica values, which Reduce turns
// into one value. Variables created with CreateVariable are placed by the
// strategy; the subclasses differ only in that placement:
//
//   OneDeviceStrategy       one replica; variables on its device
//   MirroredStrategy        one replica per device; a copy of every
//                           variable on every device, kept in sync by
//                           applying the same all-reduced update to each
//   CentralStorageStrategy  one replica per device; one copy of every
//                           variable on the host
//   ParameterServerStrategy one replica per device; variables on the ps
//                           tasks (PsClient); replicas are reduced in sync
//                           within the worker, workers update asynchronously
//   MultiWorkerMirroredStrategy
//                           MirroredStrategy over several worker processes:
//                           every worker mirrors every variable and reduces
//                           its replicas' values with every other worker's
//
// Sync-on-read variables have one copy per replica under every strategy.
// Methods other than Run are cross-replica context: call them from the
// thread that owns the strategy (or, except Run, a MergeCall's merge_fn).
// Called from inside a replica function, Run, Reduce, BatchReduce,
// Broadcast, ReadVar, Update, Assign*, ApplyGradient and CreateVariable
// return FAILED_PRECONDITION naming the method, as TF raises; so does Run
// from a merge_fn.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/collective/reduce_op.h"
#include "runtime/device/device.h"
#include "runtime/distribute/cross_device_ops.h"
#include "runtime/distribute/replica_context.h"
#include "runtime/distribute/replica_group.h"
#include "runtime/distribute/replica_threads.h"
#include "runtime/distribute/values.h"
#include "runtime/distribute/variable.h"
#include "runtime/input/input_context.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/tensor/tensor.h"

namespace distrt {

struct StrategyOptions {
  // CreateCrossDeviceOps's names: "auto" picks by the devices.
  std::string cross_device_ops = "auto";
  // Or the caller's own object, as TF's
  // MirroredStrategy(cross_device_ops=...): any CrossDeviceOps, e.g. a
  // subclass of the three above; then cross_device_ops must stay "auto".
  // Shared so that the options stay copyable; use it with one strategy at a
  // time (the implementations keep per-group state).
  std::shared_ptr<CrossDeviceOps> cross_device_ops_object;
  // Whether this task checkpoints and writes summaries (the chief, or a
  // single local process).
  bool is_chief = true;
  // How long a replica waits for the others at a collective.
  absl::Duration collective_timeout = absl::Minutes(10);
  // The workers that each read their own share of the input although they
  // do not compute in sync (ParameterServerStrategy's: chief and workers),
  // for input_context(). MultiWorkerMirroredStrategy takes them from its
  // workers' group instead.
  struct InputWorkers {
    int count = 1;
    int index = 0;
  };
  InputWorkers input_workers;
  // ParameterServerStrategy with ps tasks: each step's update goes to the
  // ps tasks on a thread of its own (background_push.h) while the caller
  // goes on to the next step; WaitForUpdates waits for it. A step then
  // learns the global step its increment left as the value the step
  // before left plus its own increment (exact with one worker, a lower
  // bound with several), reads made before the push lands lack it, and a
  // failed push is reported by the next step's update or WaitForUpdates.
  // Other strategies have no round trips to overlap (MakeStrategy refuses
  // it for them; made directly, they ignore it).
  bool push_in_background = false;
};

class Strategy {
 public:
  virtual ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  // "OneDeviceStrategy", "MirroredStrategy", ...
  virtual std::string name() const = 0;
  // E.g. "MirroredStrategy: 4 replicas on CPU:0..CPU:3, cross-device ops
  // cpu_all_reduce", for the start-up log.
  virtual std::string Describe() const;

  // The replicas that compute each step in sync, over every worker that
  // reduces with this one (TF's num_replicas_in_sync): this process's
  // replicas times num_workers(), since every worker of a synchronous job
  // has as many. Under ParameterServerStrategy workers are not in sync, so
  // it is this process's replicas.
  int num_replicas_in_sync() const {
    return num_local_replicas() * num_workers();
  }
  // The replicas of this process, which Run drives (TF's
  // len(extended.worker_devices)).
  int num_local_replicas() const { return static_cast<int>(devices_.size()); }
  // The worker processes that reduce their values together each step: 1
  // except under MultiWorkerMirroredStrategy.
  virtual int num_workers() const { return 1; }
  // This worker's rank among those num_workers(), 0 when it is alone. Its
  // replicas are replica_id_in_sync_group worker_rank() *
  // num_local_replicas() onwards.
  virtual int worker_rank() const { return 0; }
  // What this worker's input pipeline must know (TF's InputContext, as
  // distribute_datasets_from_function passes it): one pipeline per worker
  // (StrategyOptions::input_workers where the workers are not in sync), and
  // the replicas in sync, which split the global batch.
  InputContext input_context() const;
  // Local replica r runs on devices()[r].
  const std::vector<Device*>& devices() const { return devices_; }
  CrossDeviceOps& cross_device_ops() const { return *cross_device_ops_; }

  // Connects to what the strategy needs (the ps tasks); call once before
  // creating variables. Finalize is its counterpart at the end of training.
  virtual absl::Status Initialize() { return absl::OkStatus(); }
  virtual absl::Status Finalize() { return absl::OkStatus(); }

  // Waits until every update this worker made has landed (with
  // StrategyOptions::push_in_background, the push still in flight), and
  // returns the error of one that failed. Before what must see every
  // update: a checkpoint, the end of training. OK at once elsewhere.
  virtual absl::Status WaitForUpdates() { return absl::OkStatus(); }
  // Whether updates go on in the background after ApplyGradients returns
  // (ParameterServerStrategy with push_in_background and ps tasks).
  virtual bool updates_in_background() const { return false; }

  // TF's extended.should_init / should_checkpoint / should_save_summary:
  // this task initializes (or restores) the variables, which the others
  // then receive (multi-worker broadcast) or wait for (parameter servers),
  // writes checkpoints, and writes summaries. The chief, or a lone task.
  bool should_init() const { return options_.is_chief; }
  bool should_checkpoint() const { return options_.is_chief; }
  bool should_save_summary() const { return options_.is_chief; }

  // Runs fn once per local replica, concurrently; returns when every one has
  // returned. The error of a replica that failed is returned in preference
  // to the collective failures it caused in the others. One Run at a time.
  // Called from a replica function (of any strategy): FAILED_PRECONDITION,
  // as TF refuses it, instead of a deadlock.
  absl::Status Run(const std::function<absl::Status(ReplicaContext&)>& fn);
  // The same, for a fn returning absl::StatusOr<T>: every local replica's
  // T, in local_replica_id order (TF's experimental_local_results).
  template <typename Fn>
  auto RunWithResults(Fn fn) -> absl::StatusOr<PerReplica<
      typename std::invoke_result_t<Fn, ReplicaContext&>::value_type>>;

  // The sum or mean of the local replicas' tensors (float32, int64 or
  // float64, one dtype and shape) and, under MultiWorkerMirroredStrategy, of
  // every other worker's (a collective), on `destination` (TF's reduce_to;
  // null: the first device). MEAN divides by num_replicas_in_sync() (int64:
  // rounding toward zero).
  absl::StatusOr<Tensor> Reduce(ReduceOp op, const PerReplica<Tensor>& value,
                                Device* destination = nullptr);
  // Several reductions at once (TF's batch_reduce_to).
  absl::StatusOr<std::vector<Tensor>> BatchReduce(
      ReduceOp op, absl::Span<const PerReplica<Tensor>* const> values,
      Device* destination = nullptr);
  // Appends every other worker's sparse gradient to `gathered`, which holds
  // this worker's replicas' (ReplicaContext::AllGather), so that every
  // worker ends with the same rows in the same order (worker rank order).
  // Nothing to do with one worker. Every worker must call it in step.
  virtual absl::Status GatherFromOtherWorkers(SparseGradient& gathered) {
    return absl::OkStatus();
  }

  // A copy of `value` (any dtype) on each of `destinations` (TF's
  // broadcast_to; empty: every local replica's device, in replica order).
  absl::StatusOr<Mirrored<Tensor>> Broadcast(
      const Tensor& value, absl::Span<Device* const> destinations = {});

  // Creates a variable placed by the strategy, owned by it. Creating a name
  // again with an identical spec and options returns the same variable;
  // different ones are ALREADY_EXISTS saying what differs.
  absl::StatusOr<DistributedVariable*> CreateVariable(
      const VariableOptions& options);
  absl::StatusOr<DistributedHashTable*> CreateHashTable(
      const HashEmbeddingSpec& spec);

  // The variable's value in cross-replica context: a sync-on-write
  // variable's (first) copy; for a sync-on-read variable, its copies
  // combined by its aggregation (SUM or MEAN over every replica in sync;
  // otherwise the first copy). Under MultiWorkerMirroredStrategy, reading a
  // SUM or MEAN sync-on-read variable is a collective: every worker reads
  // it in step, as in TF.
  absl::StatusOr<Tensor> ReadVar(const DistributedVariable& variable);
  // Calls fn on each copy of the variable in turn and stores the result
  // (TF's strategy.extended.update). A read, fn, then an assign: on
  // parameter servers an update another worker makes in between is
  // overwritten; use AssignAdd there for increments.
  absl::Status Update(DistributedVariable& variable,
                      const std::function<absl::Status(Tensor&)>& fn);
  // TF's variable.assign / assign_add / assign_sub in cross-replica
  // context: every copy set to `value`, or `delta` (the variable's dtype and
  // shape, in any device's memory) added to or subtracted from every copy,
  // without the optimizer. FAILED_PRECONDITION for a SUM sync-on-read
  // variable, whose copies ReadVar sums.
  // On parameter servers each is applied by the servers, atomically per
  // part, so concurrent pushes and other workers' updates are never lost.
  absl::Status Assign(DistributedVariable& variable, const Tensor& value);
  absl::Status AssignAdd(DistributedVariable& variable, const Tensor& delta);
  absl::Status AssignSub(DistributedVariable& variable, const Tensor& delta);
  // Applies the variable's optimizer to every copy.
  absl::Status ApplyGradient(DistributedVariable& variable,
                             absl::Span<const float> grad);

  // While the returned scope lives, variables created are placed with
  // `variable` (on parameter servers: on the ps task holding its first
  // rows, unpartitioned). Local strategies keep all variables together
  // anyway.
  class ColocationScope {
   public:
    ~ColocationScope() { strategy_->colocate_with_ = previous_; }
    ColocationScope(const ColocationScope&) = delete;
    ColocationScope& operator=(const ColocationScope&) = delete;

   private:
    friend class Strategy;
    ColocationScope(Strategy* strategy, const DistributedVariable* variable)
        : strategy_(strategy), previous_(strategy->colocate_with_) {
      strategy->colocate_with_ = variable;
    }
    Strategy* strategy_;
    const DistributedVariable* previous_;
  };
  [[nodiscard]] ColocationScope ColocateVarsWith(
      const DistributedVariable& variable) {
    return ColocationScope(this, &variable);
  }

  // TF's `with strategy.scope():` on the calling thread: while the Scope
  // lives, GetStrategy() (distribution_context.h) returns this strategy and
  // the thread is in its cross-replica context. Scopes nest.
  class Scope {
   public:
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    friend class Strategy;
    explicit Scope(Strategy* strategy);
    Strategy* const previous_;
  };
  [[nodiscard]] Scope scope() { return Scope(this); }

 protected:
  // `devices` (not owned, non-empty) must outlive the strategy.
  Strategy(std::vector<Device*> devices,
           std::unique_ptr<CrossDeviceOps> cross_device_ops,
           StrategyOptions options);

  const StrategyOptions& options() const { return options_; }

  // Creates a sync-on-write variable where the strategy keeps them;
  // `colocate_with` is set inside a ColocateVarsWith scope.
  virtual absl::StatusOr<std::unique_ptr<DistributedVariable>>
  MakeSyncOnWriteVariable(const VariableOptions& options,
                          const DistributedVariable* colocate_with) = 0;
  virtual absl::StatusOr<std::unique_ptr<DistributedHashTable>> MakeHashTable(
      const HashEmbeddingSpec& spec);

  // "CPU:0..CPU:3" or "CPU:0" for the devices.
  std::string DescribeDevices() const;
  // Reduce for int64 and float64 values (CrossDeviceOps reduce float32):
  // summed on the host (int64 exactly), then over the workers, then put on
  // `destination` (null: left in host memory).
  absl::StatusOr<Tensor> ReduceOnHost(
      ReduceOp op, absl::Span<const Tensor* const> per_replica,
      Device* destination);
  // FAILED_PRECONDITION naming `method` when the calling thread is in a
  // replica context (inside a replica function of Run).
  absl::Status RequireCrossReplicaContext(absl::string_view method) const;

  // Copy `copy` of `variable`, for the batched hooks below.
  struct VariableCopy {
    const DistributedVariable* variable;
    int copy;
  };
  // Rows `ids` of copy `copy` of a float32 variable, read into `out`
  // (ids.size() rows).
  struct CopyRows {
    const DistributedVariable* variable;
    int copy;
    absl::Span<const int64_t> ids;
    absl::Span<float> out;
  };
  // A gradient for all elements of copy `copy` of `variable`.
  struct CopyGradient {
    DistributedVariable* variable;
    int copy;
    absl::Span<const float> grad;
  };
  // Gradients of rows `ids` of copy `copy` of a float32 variable.
  struct CopySparseGradient {
    DistributedVariable* variable;
    int copy;
    absl::Span<const int64_t> ids;
    absl::Span<const float> grads;  // ids.size() rows
  };
  // An add of `delta` to copy `copy` of `variable` that goes with the
  // gradients (the step's global step), as AddToCopy does it; AddToCopyAndRead
  // into `after` when that is not null (left empty when the call fails). A
  // strategy may send it together with the gradients: it is not ordered
  // after them.
  struct CopyAdd {
    DistributedVariable* variable;
    int copy;
    const Tensor* delta;
    Tensor* after;
  };
  // What ReplicaContext::ReadMany and ApplyGradients do once they know
  // which copies this replica reads or updates: the value of each copy, in
  // order (as ReadCopy gives it), with the rows of `rows` read into their
  // buffers (as ReadRows), and each copy's optimizer applied with
  // its gradient (as ApplyGradient, or ApplySparseGradient for `sparse`),
  // and `add` made when it is not null. The
  // defaults call the variables one after another and stop at the first error.
  // A strategy whose variables are remote overrides them to move many variables
  // in few requests; the values and the variables' states afterwards must be
  // the same; when an update fails, which of the others were applied is
  // unspecified.
  virtual absl::StatusOr<std::vector<Tensor>> ReadCopies(
      absl::Span<const VariableCopy> copies,
      absl::Span<const CopyRows> rows) const;
  virtual absl::Status ApplyGradientsToCopies(
      absl::Span<const CopyGradient> updates,
      absl::Span<const CopySparseGradient> sparse, const CopyAdd* add);
  // What ReplicaContext::ApplyGradientsThenRead does once it knows the
  // copies: ApplyGradientsToCopies (when there is anything to update), then
  // ReadCopies, which this default calls one after the other. A strategy
  // whose variables are remote may send both in one round trip; its reads
  // then see the updates, or as ParameterServers::PushPullStep says. Where
  // ApplyGradientsToCopies only starts the updates (pushes in the
  // background), the reads may lack them.
  virtual absl::StatusOr<std::vector<Tensor>> ApplyGradientsToCopiesThenRead(
      absl::Span<const CopyGradient> updates,
      absl::Span<const CopySparseGradient> sparse, const CopyAdd* add,
      absl::Span<const VariableCopy> copies, absl::Span<const CopyRows> rows);

  // Replaces `value` (float32, int64 or float64, this worker's share) with
  // its sum over num_workers(): the cross-worker step of the reductions that
  // do not go through CrossDeviceOps (ReadVar, AssignAdd on int64, int64 and
  // float64 reductions). A collective:
  // every worker calls it in step. Nothing to do with one worker.
  virtual absl::Status SumOverWorkers(Tensor& value) {
    return absl::OkStatus();
  }

 private:
  // ReplicaContext reads and updates variables through the hooks above.
  friend class ReplicaContext;

  const std::vector<Device*> devices_;
  const std::unique_ptr<CrossDeviceOps> cross_device_ops_;
  const StrategyOptions options_;
  ReplicaGroup group_;
  absl::Mutex run_mu_;  // one Run at a time
  // Run's threads, started by the first Run.
  std::unique_ptr<ReplicaThreads> replica_threads_ ABSL_GUARDED_BY(run_mu_);
  const DistributedVariable* colocate_with_ = nullptr;
  std::map<std::string, std::unique_ptr<DistributedVariable>> variables_;
  std::map<std::string, std::unique_ptr<DistributedHashTable>> hash_tables_;
};

// The calling thread's distribution context, for distribution_context.h,
// which gives it TF's names. The replica context of the replica function
// running on this thread (inside Strategy::Run), or null.
ReplicaContext* CurrentReplicaContext();
// The strategy of the innermost Strategy::Scope on this thread, else the one
// ExperimentalSetStrategy set, else null.
Strategy* CurrentScopedStrategy();
// ExperimentalSetStrategy's storage: the thread's strategy outside any
// Scope; null clears it.
void SetThreadStrategy(Strategy* strategy);

// Makes the strategy's cross-device ops from options (the caller's object,
// or by name: INVALID_ARGUMENT for an unknown name or both) and checks the
// device list, for the subclasses' factories.
absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CrossDeviceOpsFor(
    absl::Span<Device* const> devices, const StrategyOptions& options);

template <typename Fn>
auto Strategy::RunWithResults(Fn fn) -> absl::StatusOr<PerReplica<
    typename std::invoke_result_t<Fn, ReplicaContext&>::value_type>> {
  using T = typename std::invoke_result_t<Fn, ReplicaContext&>::value_type;
  std::vector<std::optional<T>> results(num_local_replicas());
  absl::Status s = Run([&](ReplicaContext& context) -> absl::Status {
    auto result = fn(context);
    if (!result.ok()) return result.status();
    results[context.local_replica_id()].emplace(*std::move(result));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  std::vector<T> values;
  values.reserve(results.size());
  for (std::optional<T>& result : results) values.push_back(*std::move(result));
  return PerReplica<T>(std::move(values));
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_STRATEGY_H_
