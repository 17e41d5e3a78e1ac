#include "runtime/distribute/strategy.h"

#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/distribute/local_variable.h"
#include "runtime/tensor/host_floats.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

std::string ShortName(const Device* device) {
  return absl::StrCat(device->type(), ":", device->id());
}

// What differs between two variables' options, empty when nothing does.
std::string DescribeOptionsDifference(const VariableOptions& a,
                                      const VariableOptions& b) {
  std::string diff = DescribeSpecDifference(a.spec, b.spec);
  if (!diff.empty()) return diff;
  if (a.synchronization != b.synchronization) {
    return absl::StrCat("synchronization ",
                        VariableSynchronizationName(a.synchronization), " vs ",
                        VariableSynchronizationName(b.synchronization));
  }
  if (a.aggregation != b.aggregation) {
    return absl::StrCat("aggregation ", VariableAggregationName(a.aggregation),
                        " vs ", VariableAggregationName(b.aggregation));
  }
  return "";
}

}  // namespace

namespace {

// The caller's CrossDeviceOps, which the options share, as the strategy's
// own.
class SharedCrossDeviceOps : public CrossDeviceOps {
 public:
  explicit SharedCrossDeviceOps(std::shared_ptr<CrossDeviceOps> ops)
      : ops_(std::move(ops)) {}
  std::string name() const override { return ops_->name(); }
  absl::StatusOr<Tensor> Reduce(ReduceOp op,
                                absl::Span<const Tensor* const> per_replica,
                                Device* destination) override {
    return ops_->Reduce(op, per_replica, destination);
  }
  absl::StatusOr<std::vector<Tensor>> BatchReduce(
      ReduceOp op, absl::Span<const std::vector<const Tensor*>> values,
      Device* destination) override {
    return ops_->BatchReduce(op, values, destination);
  }
  absl::StatusOr<std::vector<Tensor>> Broadcast(
      const Tensor& value, absl::Span<Device* const> devices) override {
    return ops_->Broadcast(value, devices);
  }
  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override {
    return ops_->AllReduce(group, replica, op, value);
  }

 private:
  const std::shared_ptr<CrossDeviceOps> ops_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CrossDeviceOpsFor(
    absl::Span<Device* const> devices, const StrategyOptions& options) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("a strategy needs at least one device");
  }
  if (options.cross_device_ops_object != nullptr) {
    if (options.cross_device_ops != "auto") {
      return absl::InvalidArgumentError(
          absl::StrCat("cross-device ops given both by name (\"",
                       options.cross_device_ops, "\") and as an object (",
                       options.cross_device_ops_object->name(), "): give one"));
    }
    return std::unique_ptr<CrossDeviceOps>(
        new SharedCrossDeviceOps(options.cross_device_ops_object));
  }
  return CreateCrossDeviceOps(options.cross_device_ops, devices);
}

Strategy::Strategy(std::vector<Device*> devices,
                   std::unique_ptr<CrossDeviceOps> cross_device_ops,
                   StrategyOptions options)
    : devices_(std::move(devices)),
      cross_device_ops_(std::move(cross_device_ops)),
      options_(std::move(options)),
      group_(devices_, options_.collective_timeout) {}

Strategy::~Strategy() = default;

std::string Strategy::DescribeDevices() const {
  if (devices_.size() == 1) return ShortName(devices_[0]);
  return absl::StrCat(ShortName(devices_.front()), "..",
                      ShortName(devices_.back()));
}

std::string Strategy::Describe() const {
  return absl::StrCat(name(), ": ", num_local_replicas(), " replica",
                      num_local_replicas() == 1 ? "" : "s", " on ",
                      DescribeDevices(), ", cross-device ops ",
                      cross_device_ops_->name());
}

namespace {

// The calling thread's distribution context (see CurrentReplicaContext).
thread_local ReplicaContext* current_replica_context = nullptr;
thread_local Strategy* scoped_strategy = nullptr;
thread_local Strategy* set_strategy = nullptr;

// How many Runs the calling thread is inside (it runs replica 0 of each).
thread_local int runs_on_this_thread = 0;
// How many CrossReplicaSections (merge_fns) the calling thread is inside.
thread_local int cross_replica_sections = 0;

class RunOnThisThread {
 public:
  RunOnThisThread() { ++runs_on_this_thread; }
  ~RunOnThisThread() { --runs_on_this_thread; }
  RunOnThisThread(const RunOnThisThread&) = delete;
  RunOnThisThread& operator=(const RunOnThisThread&) = delete;
};

// Puts the thread in `context`'s replica context while it lives.
class InReplicaContext {
 public:
  explicit InReplicaContext(ReplicaContext* context)
      : previous_(current_replica_context) {
    current_replica_context = context;
  }
  ~InReplicaContext() { current_replica_context = previous_; }
  InReplicaContext(const InReplicaContext&) = delete;
  InReplicaContext& operator=(const InReplicaContext&) = delete;

 private:
  ReplicaContext* const previous_;
};

}  // namespace

ReplicaContext* CurrentReplicaContext() { return current_replica_context; }

CrossReplicaSection::CrossReplicaSection()
    : previous_(current_replica_context) {
  current_replica_context = nullptr;
  ++cross_replica_sections;
}

CrossReplicaSection::~CrossReplicaSection() {
  --cross_replica_sections;
  current_replica_context = previous_;
}

bool InCrossReplicaSection() { return cross_replica_sections > 0; }

Strategy* CurrentScopedStrategy() {
  return scoped_strategy != nullptr ? scoped_strategy : set_strategy;
}

void SetThreadStrategy(Strategy* strategy) { set_strategy = strategy; }

Strategy::Scope::Scope(Strategy* strategy) : previous_(scoped_strategy) {
  scoped_strategy = strategy;
}

Strategy::Scope::~Scope() {
  if (active_) scoped_strategy = previous_;
}

absl::StatusOr<Strategy::Scope> Strategy::scope() {
  RETURN_IF_ERROR(RequireCrossReplicaContext("scope"));
  RETURN_IF_ERROR(RequireNoOtherStrategy("scope"));
  return Scope(this);
}

absl::Status Strategy::RequireNoOtherStrategy(absl::string_view method) const {
  const Strategy* current = CurrentScopedStrategy();
  if (current == nullptr || current == this) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "mixing different strategies: ", name(), "::", method,
      " called while this thread is in the scope of another strategy (",
      current->Describe(), "; this one: ", Describe(),
      "), as TF raises \"Mixing different tf.distribute.Strategy "
      "objects\"; end that scope (or ExperimentalSetStrategy(nullptr)) "
      "first"));
}

absl::Status Strategy::CheckRunArguments(
    absl::Span<const strategy_internal::RunArgument> arguments) const {
  for (size_t i = 0; i < arguments.size(); ++i) {
    const strategy_internal::RunArgument& a = arguments[i];
    if (a.kind == nullptr || a.components == num_local_replicas()) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        name(), "::Run: argument ", i, " after fn is a ", a.kind, " of ",
        a.components, " values, but the strategy has ", num_local_replicas(),
        " local replica", num_local_replicas() == 1 ? "" : "s",
        " (one value each)"));
  }
  return absl::OkStatus();
}

absl::Status Strategy::RequireCrossReplicaContext(
    absl::string_view method) const {
  const ReplicaContext* replica = CurrentReplicaContext();
  if (replica == nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      name(), "::", method, " called from replica ",
      replica->local_replica_id(), "'s function of ",
      replica->strategy().name(), "::Run: ", method,
      " is a cross-replica call; call it outside the replica function, or "
      "(except Run) from a MergeCall's merge_fn"));
}

absl::Status Strategy::Run(
    const std::function<absl::Status(ReplicaContext&)>& fn) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("Run"));
  RETURN_IF_ERROR(RequireNoOtherStrategy("Run"));
  // A MergeCall's merge_fn runs on replica 0's thread, the one that called
  // Run: a Run from there would wait for itself.
  if (runs_on_this_thread > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        name(),
        "::Run called while this thread runs another Run's replicas (from a "
        "MergeCall's merge_fn): Run is a cross-replica call; call it after "
        "the Run in progress returns"));
  }
  RunOnThisThread running;
  absl::MutexLock lock(&run_mu_);
  group_.barrier().Reset();
  const int n = num_local_replicas();
  std::vector<absl::Status> statuses(n);
  auto run_replica = [&](int replica) {
    ReplicaContext context(this, &group_, cross_device_ops_.get(), replica);
    InReplicaContext in_context(&context);
    // The replica's threads are in this strategy's scope too (entered
    // unchecked: the caller's thread was checked above, the others are in
    // none).
    Scope scope(this);
    statuses[replica] = group_.device(replica)->MakeCurrent();
    if (statuses[replica].ok()) statuses[replica] = fn(context);
    group_.barrier().Leave(replica, statuses[replica]);
    // A kept thread carries no strategy a replica function set on it
    // (ExperimentalSetStrategy) into the next Run.
    if (replica > 0) SetThreadStrategy(nullptr);
  };
  if (replica_threads_ == nullptr || replica_threads_->num_replicas() != n) {
    replica_threads_ = std::make_unique<ReplicaThreads>(n);
  }
  replica_threads_->RunEach(run_replica);

  // A replica's own error explains the collective failures of the others.
  const absl::Status collective_failure = group_.barrier().failure();
  for (const absl::Status& s : statuses) {
    if (!s.ok() && s != collective_failure) return s;
  }
  for (const absl::Status& s : statuses) {
    RETURN_IF_ERROR(s);
  }
  return absl::OkStatus();
}

namespace {

// Whether any of `tensors` is of a dtype that CrossDeviceOps do not reduce
// (they reduce float32): int64 and float64 are reduced on the host.
bool AnyReducedOnHost(absl::Span<const Tensor* const> tensors) {
  for (const Tensor* t : tensors) {
    if (t->dtype() != DType::kFloat32) return true;
  }
  return false;
}

template <typename T>
void AddInto(Tensor& sum, const Tensor& addend) {
  auto to = sum.flat<T>();
  auto from = addend.flat<T>();
  for (size_t i = 0; i < to.size(); ++i) to[i] += from[i];
}

template <typename T>
void DivideBy(Tensor& value, int64_t n) {
  for (T& v : value.flat<T>()) v /= static_cast<T>(n);
}

// A copy of `value` in host memory, wherever it lives: variables keep their
// copies on the host and read what they are given there.
absl::StatusOr<Tensor> HostCopy(const Tensor& value) {
  if (value.is_null()) {
    return absl::InvalidArgumentError("a null tensor has no values");
  }
  ASSIGN_OR_RETURN(Tensor host, Tensor::Create(value.dtype(), value.shape()));
  RETURN_IF_ERROR(value.allocator()->CopyToHost(
      value.raw_data(), host.raw_data(), value.bytes()));
  return host;
}

// Adds `value` (host memory, of `outer` x `length` x `inner` elements)
// summed along its middle dimension into `sums` (outer x inner).
template <typename T, typename Sum>
void AddSumAlongAxis(const Tensor& value, int64_t outer, int64_t length,
                     int64_t inner, std::vector<Sum>& sums) {
  const auto flat = value.flat<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < length; ++k) {
      const T* row = flat.data() + (o * length + k) * inner;
      Sum* sum = sums.data() + o * inner;
      for (int64_t i = 0; i < inner; ++i) sum[i] += static_cast<Sum>(row[i]);
    }
  }
}

// The replicas' tensors summed along `axis` and over the replicas, in host
// memory.
template <typename T, typename Sum>
absl::StatusOr<Tensor> SumAlongAxisAndReplicas(
    const PerReplica<Tensor>& value, int axis,
    const std::vector<int64_t>& reduced_shape) {
  const std::vector<int64_t>& shape = value[0].shape();
  int64_t outer = 1;
  int64_t inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<Sum> sums(outer * inner, Sum{0});
  for (const Tensor& t : value.Unwrap()) {
    ASSIGN_OR_RETURN(Tensor host, HostCopy(t));
    AddSumAlongAxis<T>(host, outer, t.dim(axis), inner, sums);
  }
  ASSIGN_OR_RETURN(Tensor result,
                   Tensor::Create(value[0].dtype(), reduced_shape));
  auto out = result.flat<T>();
  for (size_t i = 0; i < sums.size(); ++i) out[i] = static_cast<T>(sums[i]);
  return result;
}

}  // namespace

absl::StatusOr<Tensor> Strategy::ReduceOnHost(
    ReduceOp op, absl::Span<const Tensor* const> per_replica,
    Device* destination) {
  if (per_replica.empty()) {
    return absl::InvalidArgumentError("reduce: no values");
  }
  const DType dtype = per_replica[0]->dtype();
  for (size_t r = 0; r < per_replica.size(); ++r) {
    const Tensor& t = *per_replica[r];
    if (t.is_null() || t.dtype() != dtype || dtype == DType::kFloat32 ||
        t.shape() != per_replica[0]->shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("reduce: replica ", r, " has ", DescribeTensor(t),
                       ", replica 0 has ", DescribeTensor(*per_replica[0]),
                       " (all must be of one dtype and shape)"));
    }
  }
  // Summed on the host (int64 exactly); values in device memory are read
  // back.
  ASSIGN_OR_RETURN(Tensor sum, Tensor::Zeros(dtype, per_replica[0]->shape()));
  ASSIGN_OR_RETURN(Tensor one, Tensor::Create(dtype, per_replica[0]->shape()));
  for (const Tensor* t : per_replica) {
    RETURN_IF_ERROR(
        t->allocator()->CopyToHost(t->raw_data(), one.raw_data(), t->bytes()));
    if (dtype == DType::kInt64) {
      AddInto<int64_t>(sum, one);
    } else {
      AddInto<double>(sum, one);
    }
  }
  RETURN_IF_ERROR(SumOverWorkers(sum));
  if (op == ReduceOp::kMean) {
    if (dtype == DType::kInt64) {
      DivideBy<int64_t>(sum, num_replicas_in_sync());
    } else {
      DivideBy<double>(sum, num_replicas_in_sync());
    }
  }
  if (destination == nullptr || destination->type() == "CPU") return sum;
  return destination->CopyFrom(sum);
}

absl::StatusOr<Tensor> Strategy::Reduce(ReduceOp op,
                                        const PerReplica<Tensor>& value,
                                        Device* destination) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("Reduce"));
  if (destination == nullptr) destination = devices_[0];
  std::vector<const Tensor*> tensors;
  for (const Tensor& t : value.Unwrap()) tensors.push_back(&t);
  if (AnyReducedOnHost(tensors)) return ReduceOnHost(op, tensors, destination);
  return cross_device_ops_->Reduce(op, tensors, destination);
}

absl::StatusOr<Tensor> Strategy::Reduce(ReduceOp op,
                                        const PerReplica<Tensor>& value,
                                        int axis, Device* destination) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("Reduce"));
  if (value.num_replicas() == 0) {
    return absl::InvalidArgumentError("reduce: no values");
  }
  const Tensor& first = value[0];
  const DType dtype = first.dtype();
  if (first.is_null() || (dtype != DType::kFloat32 && dtype != DType::kInt64 &&
                          dtype != DType::kFloat64)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reduce along axis ", axis, ": replica 0 has ", DescribeTensor(first),
        " (it reduces float32, int64 or float64)"));
  }
  const int rank = first.rank();
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reduce along axis ", axis, ": replica 0 has ", DescribeTensor(first),
        ", whose axes are ", -rank, " to ", rank - 1));
  }
  if (axis < 0) axis += rank;
  // Dimensions other than `axis` must match; `axis` may differ.
  std::vector<int64_t> reduced_shape = first.shape();
  reduced_shape.erase(reduced_shape.begin() + axis);
  int64_t count = 0;
  for (int r = 0; r < value.num_replicas(); ++r) {
    const Tensor& t = value[r];
    std::vector<int64_t> other;
    if (!t.is_null() && t.rank() == rank) {
      other = t.shape();
      other.erase(other.begin() + axis);
    }
    if (t.is_null() || t.dtype() != dtype || t.rank() != rank ||
        other != reduced_shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reduce along axis ", axis, ": replica ", r, " has ",
          DescribeTensor(t), ", replica 0 has ", DescribeTensor(first),
          " (all must be of one dtype and match but along the axis)"));
    }
    count += t.dim(axis);
  }
  absl::StatusOr<Tensor> reduced;
  if (dtype == DType::kFloat32) {
    reduced =
        SumAlongAxisAndReplicas<float, double>(value, axis, reduced_shape);
  } else if (dtype == DType::kInt64) {
    reduced =
        SumAlongAxisAndReplicas<int64_t, int64_t>(value, axis, reduced_shape);
  } else {
    reduced =
        SumAlongAxisAndReplicas<double, double>(value, axis, reduced_shape);
  }
  RETURN_IF_ERROR(reduced.status());
  Tensor sum = *std::move(reduced);
  RETURN_IF_ERROR(SumOverWorkers(sum));
  if (op == ReduceOp::kMean) {
    // The number of elements along the axis over every worker.
    ASSIGN_OR_RETURN(Tensor total, Tensor::FromValues<int64_t>({count}, {}));
    RETURN_IF_ERROR(SumOverWorkers(total));
    const int64_t n = total.flat<int64_t>()[0];
    if (n == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reduce MEAN along axis ", axis,
          ": no replica has any element along it, so there is no mean"));
    }
    if (dtype == DType::kFloat32) {
      DivideBy<float>(sum, n);
    } else if (dtype == DType::kInt64) {
      DivideBy<int64_t>(sum, n);
    } else {
      DivideBy<double>(sum, n);
    }
  }
  if (destination == nullptr) destination = devices_[0];
  if (destination->type() == "CPU") return sum;
  return destination->CopyFrom(sum);
}

absl::StatusOr<std::vector<Tensor>> Strategy::BatchReduce(
    ReduceOp op, absl::Span<const PerReplica<Tensor>* const> values,
    Device* destination) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("BatchReduce"));
  if (destination == nullptr) destination = devices_[0];
  std::vector<std::vector<const Tensor*>> tensors;
  bool any_on_host = false;
  for (const PerReplica<Tensor>* value : values) {
    tensors.emplace_back();
    for (const Tensor& t : value->Unwrap()) tensors.back().push_back(&t);
    any_on_host = any_on_host || AnyReducedOnHost(tensors.back());
  }
  if (!any_on_host) {
    return cross_device_ops_->BatchReduce(op, tensors, destination);
  }
  // The int64 and float64 values one by one, the float32 ones together, in
  // order.
  std::vector<std::vector<const Tensor*>> floats;
  for (const auto& per_replica : tensors) {
    if (!AnyReducedOnHost(per_replica)) floats.push_back(per_replica);
  }
  ASSIGN_OR_RETURN(std::vector<Tensor> float_results,
                   cross_device_ops_->BatchReduce(op, floats, destination));
  std::vector<Tensor> results;
  size_t next_float = 0;
  for (const auto& per_replica : tensors) {
    if (AnyReducedOnHost(per_replica)) {
      ASSIGN_OR_RETURN(Tensor reduced,
                       ReduceOnHost(op, per_replica, destination));
      results.push_back(std::move(reduced));
    } else {
      results.push_back(std::move(float_results[next_float++]));
    }
  }
  return results;
}

absl::StatusOr<Mirrored<Tensor>> Strategy::Broadcast(
    const Tensor& value, absl::Span<Device* const> destinations) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("Broadcast"));
  ASSIGN_OR_RETURN(
      std::vector<Tensor> copies,
      cross_device_ops_->Broadcast(value, destinations.empty()
                                              ? absl::MakeConstSpan(devices_)
                                              : destinations));
  return Mirrored<Tensor>(std::move(copies));
}

absl::StatusOr<DistributedVariable*> Strategy::CreateVariable(
    const VariableOptions& options) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("CreateVariable"));
  RETURN_IF_ERROR(ValidateVariableSpec(options.spec));
  if (auto it = variables_.find(options.spec.name); it != variables_.end()) {
    std::string diff =
        DescribeOptionsDifference(it->second->options(), options);
    if (!diff.empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("variable \"", options.spec.name,
                       "\" already exists with different options: ", diff));
    }
    return it->second.get();
  }
  absl::StatusOr<std::unique_ptr<DistributedVariable>> variable;
  if (options.synchronization == VariableSynchronization::kOnRead) {
    // One copy per replica, each on its replica's device, whatever the
    // strategy: these hold per-replica state (metrics) that only reading
    // combines.
    std::vector<int> copy_of_replica;
    for (int r = 0; r < num_local_replicas(); ++r) copy_of_replica.push_back(r);
    variable = LocalVariable::Create(
        options, devices_, std::move(copy_of_replica),
        absl::StrCat("one copy per replica on ", DescribeDevices()));
  } else {
    variable = MakeSyncOnWriteVariable(options, colocate_with_);
  }
  RETURN_IF_ERROR(variable.status());
  DistributedVariable* raw = variable->get();
  variables_[options.spec.name] = *std::move(variable);
  return raw;
}

absl::StatusOr<std::unique_ptr<DistributedHashTable>> Strategy::MakeHashTable(
    const HashEmbeddingSpec& spec) {
  ASSIGN_OR_RETURN(std::unique_ptr<LocalHashTable> table,
                   LocalHashTable::Create(spec));
  return std::unique_ptr<DistributedHashTable>(std::move(table));
}

absl::StatusOr<DistributedHashTable*> Strategy::CreateHashTable(
    const HashEmbeddingSpec& spec) {
  if (auto it = hash_tables_.find(spec.name); it != hash_tables_.end()) {
    return it->second.get();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<DistributedHashTable> table,
                   MakeHashTable(spec));
  DistributedHashTable* raw = table.get();
  hash_tables_[spec.name] = std::move(table);
  return raw;
}

absl::StatusOr<Tensor> Strategy::ReadVar(const DistributedVariable& variable) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("ReadVar"));
  const VariableAggregation aggregation = variable.options().aggregation;
  if (variable.options().synchronization == VariableSynchronization::kOnWrite ||
      aggregation == VariableAggregation::kNone ||
      aggregation == VariableAggregation::kOnlyFirstReplica) {
    return variable.ReadCopy(0);
  }
  ASSIGN_OR_RETURN(Tensor total, variable.ReadCopy(0));
  for (int c = 1; c < variable.num_copies(); ++c) {
    ASSIGN_OR_RETURN(Tensor copy, variable.ReadCopy(c));
    if (total.dtype() == DType::kInt64) {
      auto sum = total.flat<int64_t>();
      auto add = copy.flat<int64_t>();
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += add[i];
    } else {
      auto sum = total.flat<float>();
      auto add = copy.flat<float>();
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += add[i];
    }
  }
  RETURN_IF_ERROR(SumOverWorkers(total));
  if (aggregation == VariableAggregation::kMean) {
    // One copy per local replica on every worker.
    const int64_t copies = int64_t{variable.num_copies()} * num_workers();
    if (total.dtype() == DType::kInt64) {
      for (int64_t& v : total.flat<int64_t>()) v /= copies;
    } else {
      for (float& v : total.flat<float>()) v /= static_cast<float>(copies);
    }
  }
  return total;
}

InputContext Strategy::input_context() const {
  InputContext context;
  if (num_workers() > 1) {
    context.num_input_pipelines = num_workers();
    context.input_pipeline_id = worker_rank();
  } else {
    context.num_input_pipelines = options_.input_workers.count;
    context.input_pipeline_id = options_.input_workers.index;
  }
  context.num_replicas_in_sync = num_replicas_in_sync();
  return context;
}

absl::Status Strategy::Update(DistributedVariable& variable,
                              const std::function<absl::Status(Tensor&)>& fn) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("Update"));
  for (int c = 0; c < variable.num_copies(); ++c) {
    ASSIGN_OR_RETURN(Tensor value, variable.ReadCopy(c));
    RETURN_IF_ERROR(fn(value));
    RETURN_IF_ERROR(variable.WriteCopy(c, value));
  }
  return absl::OkStatus();
}

namespace {

// Writing every copy of a SUM sync-on-read variable would multiply what
// ReadVar (the sum of the copies) gives.
absl::Status CheckCrossReplicaWrite(const DistributedVariable& variable,
                                    absl::string_view method) {
  if (variable.options().synchronization != VariableSynchronization::kOnRead ||
      variable.options().aggregation != VariableAggregation::kSum) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      method, " of variable \"", variable.name(),
      "\": it is sync-on-read with aggregation SUM, whose value is the sum "
      "of one copy per replica, so writing every copy would multiply it; "
      "update it in replica context (ReplicaContext::AssignAdd)"));
}

}  // namespace

absl::Status Strategy::Assign(DistributedVariable& variable,
                              const Tensor& value) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("Assign"));
  RETURN_IF_ERROR(CheckCrossReplicaWrite(variable, "Assign"));
  ASSIGN_OR_RETURN(Tensor host, HostCopy(value));
  for (int c = 0; c < variable.num_copies(); ++c) {
    RETURN_IF_ERROR(variable.WriteCopy(c, host));
  }
  return absl::OkStatus();
}

absl::Status Strategy::AssignAdd(DistributedVariable& variable,
                                 const Tensor& delta) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("AssignAdd"));
  RETURN_IF_ERROR(CheckCrossReplicaWrite(variable, "AssignAdd"));
  ASSIGN_OR_RETURN(Tensor host, HostCopy(delta));
  for (int c = 0; c < variable.num_copies(); ++c) {
    RETURN_IF_ERROR(variable.AddToCopy(c, host));
  }
  return absl::OkStatus();
}

absl::Status Strategy::AssignSub(DistributedVariable& variable,
                                 const Tensor& delta) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("AssignSub"));
  RETURN_IF_ERROR(CheckCrossReplicaWrite(variable, "AssignSub"));
  // Subtracting is adding the negation, which is exact for both dtypes
  // except for the one int64 that has no negation.
  ASSIGN_OR_RETURN(Tensor negated, HostCopy(delta));
  if (negated.dtype() != variable.options().spec.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AssignSub of variable \"", variable.name(), "\": the value is ",
        DTypeName(negated.dtype()), ", the variable ",
        DTypeName(variable.options().spec.dtype)));
  }
  if (negated.dtype() == DType::kInt64) {
    for (int64_t& v : negated.flat<int64_t>()) {
      if (v == std::numeric_limits<int64_t>::min()) {
        return absl::OutOfRangeError(
            absl::StrCat("variable \"", variable.name(), "\": subtracting ", v,
                         " overflows int64"));
      }
      v = -v;
    }
  } else {
    for (float& v : negated.flat<float>()) v = -v;
  }
  return AssignAdd(variable, negated);
}

absl::StatusOr<std::vector<Tensor>> Strategy::ReadCopies(
    absl::Span<const VariableCopy> copies,
    absl::Span<const CopyRows> rows) const {
  std::vector<Tensor> values;
  values.reserve(copies.size());
  for (const VariableCopy& c : copies) {
    ASSIGN_OR_RETURN(Tensor value, c.variable->ReadCopy(c.copy));
    values.push_back(std::move(value));
  }
  for (const CopyRows& r : rows) {
    RETURN_IF_ERROR(r.variable->ReadRows(r.copy, r.ids, r.out));
  }
  return values;
}

absl::Status Strategy::ApplyGradientsToCopies(
    absl::Span<const CopyGradient> updates,
    absl::Span<const CopySparseGradient> sparse, const CopyAdd* add) {
  for (const CopyGradient& u : updates) {
    RETURN_IF_ERROR(u.variable->ApplyGradient(u.copy, u.grad));
  }
  for (const CopySparseGradient& u : sparse) {
    RETURN_IF_ERROR(u.variable->ApplySparseGradient(u.copy, u.ids, u.grads));
  }
  if (add == nullptr) return absl::OkStatus();
  return add->variable->AddToCopyReadingInto(add->copy, *add->delta,
                                             add->after);
}

absl::StatusOr<std::vector<Tensor>> Strategy::ApplyGradientsToCopiesThenRead(
    absl::Span<const CopyGradient> updates,
    absl::Span<const CopySparseGradient> sparse, const CopyAdd* add,
    absl::Span<const VariableCopy> copies, absl::Span<const CopyRows> rows) {
  if (!updates.empty() || !sparse.empty() || add != nullptr) {
    RETURN_IF_ERROR(ApplyGradientsToCopies(updates, sparse, add));
  }
  return ReadCopies(copies, rows);
}

absl::Status Strategy::ApplyGradient(DistributedVariable& variable,
                                     absl::Span<const float> grad) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("ApplyGradient"));
  for (int c = 0; c < variable.num_copies(); ++c) {
    RETURN_IF_ERROR(variable.ApplyGradient(c, grad));
  }
  return absl::OkStatus();
}

}  // namespace distrt
