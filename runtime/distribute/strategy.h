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
// Called from inside a replica function, Run, scope, Reduce, BatchReduce,
// Broadcast, ReadVar, Update, Assign*, ApplyGradient and CreateVariable
// return FAILED_PRECONDITION naming the method, as TF raises; so does Run
// from a merge_fn, and scope or Run while the thread is in another
// strategy's scope (TF's "Mixing different tf.distribute.Strategy
// objects").

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
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
#include "runtime/util/status_macros.h"

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

// Run's handling of its arguments (below).
namespace strategy_internal {

template <typename U>
std::true_type IsDistributedValues(const DistributedValues<U>*);
std::false_type IsDistributedValues(...);
// Whether A is a PerReplica, a Mirrored or another DistributedValues.
template <typename A>
inline constexpr bool kIsDistributedValues = decltype(IsDistributedValues(
    std::declval<const std::remove_reference_t<A>*>()))::value;

template <typename U>
constexpr const char* DistributedValuesKind(const PerReplica<U>*) {
  return "PerReplica";
}
template <typename U>
constexpr const char* DistributedValuesKind(const Mirrored<U>*) {
  return "Mirrored";
}
template <typename U>
constexpr const char* DistributedValuesKind(const DistributedValues<U>*) {
  return "DistributedValues";
}

// What Strategy::CheckRunArguments checks of one argument: its kind and
// number of components when it is a distributed value, else null and -1.
struct RunArgument {
  const char* kind = nullptr;
  int components = -1;
};
template <typename A>
RunArgument DescribeRunArgument(const A& arg) {
  if constexpr (kIsDistributedValues<A>) {
    return {DistributedValuesKind(&arg), arg.num_replicas()};
  } else {
    return {};
  }
}

// What local replica `replica` gets of `arg`: its component, or `arg`.
template <typename A>
decltype(auto) ReplicaArgument(A& arg, int replica) {
  if constexpr (kIsDistributedValues<A>) {
    return (arg[replica]);
  } else {
    (void)replica;
    return (arg);
  }
}

// What fn returns when Run passes it arguments of types Args.
template <typename Fn, typename... Args>
using RunResult =
    std::invoke_result_t<Fn&, ReplicaContext&,
                         decltype(ReplicaArgument(
                             std::declval<std::remove_reference_t<Args>&>(),
                             0))...>;
// T, where fn returns absl::StatusOr<T>.
template <typename Fn, typename... Args>
using RunValue = typename RunResult<Fn, Args...>::value_type;

}  // namespace strategy_internal

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
  // As TF's strategy.run enters the strategy's scope, Run under another
  // strategy's scope (or ExperimentalSetStrategy) is FAILED_PRECONDITION
  // ("mixing different strategies"), before any replica runs.
  absl::Status Run(const std::function<absl::Status(ReplicaContext&)>& fn);
  // TF's strategy.run(fn, args): fn(context, args...) on every local
  // replica, where an argument that is a PerReplica<T> or Mirrored<T>
  // (values.h) is unwrapped, local replica r getting its component r (a
  // T&, const when the argument is), and any other argument is passed to
  // every replica as the same lvalue, concurrently (only read it, or make
  // it thread-safe). A PerReplica or Mirrored with other than
  // num_local_replicas() components is INVALID_ARGUMENT naming the
  // argument, before any replica runs. fn returns absl::Status, and so does
  // Run; or absl::StatusOr<T>, and Run returns every replica's T as
  // RunWithResults does: a PerReplica<T>, since a strategy cannot tell
  // equal values from per-replica ones (TF returns Mirrored only for the
  // same object on every replica); RunMirrored says the values are the
  // same. With no argument after fn, the Run above.
  template <typename Fn, typename Arg, typename... Args>
  auto Run(Fn fn, Arg&& arg, Args&&... args);
  // Run for a fn returning absl::StatusOr<T>: every local replica's T, in
  // local_replica_id order (TF's experimental_local_results). `args` as
  // Run's.
  template <typename Fn, typename... Args>
  auto RunWithResults(Fn fn, Args&&... args)
      -> absl::StatusOr<PerReplica<strategy_internal::RunValue<Fn, Args...>>>;
  // RunWithResults for a fn whose T is the same on every replica (a value
  // after AllReduce or a MergeCall, a mirrored variable's copy), as a
  // Mirrored<T>. The caller vouches for that: it is not checked (the values
  // may sit in several devices' memory).
  template <typename Fn, typename... Args>
  auto RunMirrored(Fn fn, Args&&... args)
      -> absl::StatusOr<Mirrored<strategy_internal::RunValue<Fn, Args...>>>;

  // The sum or mean of the local replicas' tensors (float32, int64 or
  // float64, one dtype and shape) and, under MultiWorkerMirroredStrategy, of
  // every other worker's (a collective), on `destination` (TF's reduce_to;
  // null: the first device). MEAN divides by num_replicas_in_sync() (int64:
  // rounding toward zero).
  absl::StatusOr<Tensor> Reduce(ReduceOp op, const PerReplica<Tensor>& value,
                                Device* destination = nullptr);
  // TF's reduce(op, value, axis): each replica's tensor (float32, int64 or
  // float64, one dtype) summed along `axis` (negative: from the end, as in
  // TF), then summed across the replicas in sync (and workers, as above: a
  // collective under MultiWorkerMirroredStrategy). MEAN divides by the
  // number of elements along `axis` over all of them, so per-example losses
  // of shape [batch] give the global batch's mean (GetLossReduction,
  // distribution_context.h), also when replicas' batches differ in size;
  // the other dimensions must match. Computed in host memory (float32
  // summed in double), then put on `destination` (null: the first device).
  // INVALID_ARGUMENT for an axis out of range, mismatched tensors, or a MEAN
  // over no elements; Reduce(op, value, 0) is axis 0, not a null
  // destination.
  absl::StatusOr<Tensor> Reduce(ReduceOp op, const PerReplica<Tensor>& value,
                                int axis, Device* destination = nullptr);
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
  // (TF's strategy.extended.update): a read, fn, then an assign. On
  // parameter servers that would overwrite an update another worker pushes
  // in between, so ParameterServerStrategy refuses it for variables on its
  // ps tasks (FAILED_PRECONDITION naming the variable); use Assign,
  // AssignAdd, AssignSub or ApplyGradient there, which the servers apply
  // atomically.
  virtual absl::Status Update(DistributedVariable& variable,
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

  // TF's `with strategy.scope():` on the calling thread:
  //
  //   ASSIGN_OR_RETURN(Strategy::Scope scope, strategy.scope());
  //
  // While the Scope lives, GetStrategy() (distribution_context.h) returns
  // this strategy, the thread is in its cross-replica context, and
  // variables created without naming a strategy (distribution_context.h's
  // CreateVariable) are this strategy's. The same strategy's scope nests.
  // As TF raises "Mixing different tf.distribute.Strategy objects",
  // entering it while the thread is in another strategy's (a scope,
  // ExperimentalSetStrategy, a merge_fn) is FAILED_PRECONDITION naming
  // both; and, as in TF, from a replica function too. A Scope ends on the
  // thread that entered it, innermost first; moving one moves the duty to
  // end it.
  class Scope {
   public:
    Scope(Scope&& other) noexcept
        : previous_(other.previous_), active_(other.active_) {
      other.active_ = false;
    }
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class Strategy;
    explicit Scope(Strategy* strategy);
    Strategy* previous_;
    bool active_ = true;
  };
  [[nodiscard]] absl::StatusOr<Scope> scope();

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
  // FAILED_PRECONDITION naming `method` and both strategies when the
  // calling thread is in another strategy's scope (or set strategy).
  absl::Status RequireNoOtherStrategy(absl::string_view method) const;

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
  // then see the updates, or as ParameterServers::Update says. Where
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

  // INVALID_ARGUMENT unless every PerReplica or Mirrored argument of Run
  // has one component per local replica.
  absl::Status CheckRunArguments(
      absl::Span<const strategy_internal::RunArgument> arguments) const;

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
// Whether the thread runs a MergeCall's merge_fn (a CrossReplicaSection).
bool InCrossReplicaSection();
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

template <typename Fn, typename Arg, typename... Args>
auto Strategy::Run(Fn fn, Arg&& arg, Args&&... args) {
  using Result = strategy_internal::RunResult<Fn, Arg, Args...>;
  if constexpr (std::is_same_v<Result, absl::Status>) {
    RETURN_IF_ERROR(
        CheckRunArguments({strategy_internal::DescribeRunArgument(arg),
                           strategy_internal::DescribeRunArgument(args)...}));
    return Run([&](ReplicaContext& context) -> absl::Status {
      const int r = context.local_replica_id();
      return fn(context, strategy_internal::ReplicaArgument(arg, r),
                strategy_internal::ReplicaArgument(args, r)...);
    });
  } else {
    return RunWithResults(std::move(fn), std::forward<Arg>(arg),
                          std::forward<Args>(args)...);
  }
}

template <typename Fn, typename... Args>
auto Strategy::RunWithResults(Fn fn, Args&&... args)
    -> absl::StatusOr<PerReplica<strategy_internal::RunValue<Fn, Args...>>> {
  using T = strategy_internal::RunValue<Fn, Args...>;
  RETURN_IF_ERROR(
      CheckRunArguments({strategy_internal::DescribeRunArgument(args)...}));
  std::vector<std::optional<T>> results(num_local_replicas());
  absl::Status s = Run([&](ReplicaContext& context) -> absl::Status {
    const int r = context.local_replica_id();
    auto result = fn(context, strategy_internal::ReplicaArgument(args, r)...);
    if (!result.ok()) return result.status();
    results[r].emplace(*std::move(result));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  std::vector<T> values;
  values.reserve(results.size());
  for (std::optional<T>& result : results) values.push_back(*std::move(result));
  return PerReplica<T>(std::move(values));
}

template <typename Fn, typename... Args>
auto Strategy::RunMirrored(Fn fn, Args&&... args)
    -> absl::StatusOr<Mirrored<strategy_internal::RunValue<Fn, Args...>>> {
  using T = strategy_internal::RunValue<Fn, Args...>;
  ASSIGN_OR_RETURN(PerReplica<T> values,
                   RunWithResults(std::move(fn), std::forward<Args>(args)...));
  return Mirrored<T>(std::move(values.Unwrap()));
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_STRATEGY_H_
