#include "runtime/distribute/parameter_server_strategy.h"

#include "absl/strings/str_cat.h"
#include "runtime/distribute/local_variable.h"
#include "runtime/distribute/ps_variable.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// `variable` as a float32 variable on `servers` whose copy
// `copy` exists, which a Read / Update request can carry; null for anything
// else, which goes through the variable's own methods (and their errors).
const PsVariable* BatchablePsVariable(const DistributedVariable* variable,
                                      int copy, const ParameterServers* servers,
                                      DType dtype = DType::kFloat32) {
  const auto* ps = dynamic_cast<const PsVariable*>(variable);
  if (ps == nullptr || ps->servers() != servers || ps->spec().dtype != dtype ||
      copy < 0 || copy >= ps->num_copies()) {
    return nullptr;
  }
  return ps;
}

// The ps variable that an add of `delta` to copy `copy` of `variable` goes
// to, when it can go in an Update: an int64 variable of `servers` and a
// delta of its dtype and shape (any other goes through the variable, which
// says what is wrong).
const PsVariable* BatchableAdd(const DistributedVariable* variable, int copy,
                               const Tensor& delta,
                               const ParameterServers* servers) {
  const PsVariable* ps =
      BatchablePsVariable(variable, copy, servers, DType::kInt64);
  if (ps == nullptr || delta.is_null() || delta.dtype() != DType::kInt64 ||
      delta.shape() != ps->spec().shape) {
    return nullptr;
  }
  return ps;
}

// An add of `delta` to `added` as an Update takes it, with `after` (when
// not null) made to receive the value it leaves.
absl::StatusOr<Int64VariableAdd> StepAdd(const Tensor& delta, Tensor* after,
                                         const PsVariable& added) {
  Int64VariableAdd step_add;
  step_add.variable = &added.placement();
  step_add.delta = delta.flat<int64_t>();
  if (after != nullptr) {
    ASSIGN_OR_RETURN(*after, Tensor::Create(DType::kInt64, added.spec().shape));
    step_add.after = after->flat<int64_t>();
  }
  return step_add;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
ParameterServerStrategy::Create(std::vector<Device*> devices,
                                ParameterServers* servers,
                                StrategyOptions options,
                                absl::Duration wait_for_servers) {
  if (servers != nullptr && servers->num_ps_tasks() == 0) servers = nullptr;
  ASSIGN_OR_RETURN(std::unique_ptr<CrossDeviceOps> ops,
                   CrossDeviceOpsFor(devices, options));
  return std::unique_ptr<ParameterServerStrategy>(new ParameterServerStrategy(
      std::move(devices), std::move(ops), std::move(options), servers,
      wait_for_servers));
}

std::string ParameterServerStrategy::Describe() const {
  if (has_ps_tasks()) return Strategy::Describe();
  return absl::StrCat(
      Strategy::Describe(),
      "; no ps tasks, so the variables are on this "
      "worker's host (TF's local fallback, as central storage)");
}

absl::Status ParameterServerStrategy::Initialize() {
  if (!has_ps_tasks()) return absl::OkStatus();
  if (options().push_in_background && background_ == nullptr) {
    background_ = std::make_unique<BackgroundPush>();
  }
  return servers_->WaitForServers(wait_for_servers_);
}

absl::Status ParameterServerStrategy::WaitForUpdates() {
  if (background_ == nullptr) return absl::OkStatus();
  absl::Status pushed = background_->Wait();
  if (pushed.ok()) return pushed;
  return absl::Status(pushed.code(),
                      absl::StrCat("the last step's update, pushed in the "
                                   "background, failed: ",
                                   pushed.message()));
}

absl::Status ParameterServerStrategy::Finalize() { return WaitForUpdates(); }

absl::Status ParameterServerStrategy::Update(
    DistributedVariable& variable,
    const std::function<absl::Status(Tensor&)>& fn) {
  RETURN_IF_ERROR(RequireCrossReplicaContext("Update"));
  if (dynamic_cast<const PsVariable*>(&variable) != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Update of variable \"", variable.name(),
        "\", which lives on the ps "
        "tasks (",
        variable.DescribePlacement(),
        "): a read, fn, then an assign would overwrite what other workers "
        "push in between; use Assign, AssignAdd, AssignSub or ApplyGradient, "
        "which the ps tasks apply atomically"));
  }
  return Strategy::Update(variable, fn);
}

struct ParameterServerStrategy::OwnedPush {
  // Copies too: the variables (and their placements) belong to the caller,
  // who may destroy them while a failed step's push is still in flight.
  std::vector<VariablePlacement> placements;
  std::vector<std::vector<float>> dense_grads;
  std::vector<DenseVariablePush> pushes;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<float>> row_grads;
  std::vector<SparseVariablePush> row_pushes;
  int64_t delta = 0;
  int64_t after = 0;
  std::vector<Int64VariableAdd> adds;  // at most one, of delta and after
};

absl::Status ParameterServerStrategy::PushInBackground(
    absl::Span<const CopyGradient> updates,
    absl::Span<const CopySparseGradient> sparse, const CopyAdd* add,
    const PsVariable* added) {
  // The push before this one first: its error is this step's to report
  // (the step that made it has returned), and its add's value is where
  // this one's counts from.
  RETURN_IF_ERROR(WaitForUpdates());
  // The global step the caller learns: `value`, in the variable's shape.
  const auto tell_after = [add, added](int64_t value) -> absl::Status {
    ASSIGN_OR_RETURN(*add->after,
                     Tensor::Create(DType::kInt64, added->spec().shape));
    add->after->flat<int64_t>()[0] = value;
    return absl::OkStatus();
  };
  if (add != nullptr && add->after != nullptr) {
    *add->after = Tensor();
    if (last_added_value_ < 0) {
      // Nothing to count from yet: this push goes in the foreground and
      // learns the value.
      std::vector<int64_t> after(1);
      const Int64VariableAdd step_add = {&added->placement(),
                                         add->delta->flat<int64_t>(),
                                         absl::MakeSpan(after)};
      UpdateRequest request;
      request.int64_adds = {&step_add, 1};
      RETURN_IF_ERROR(servers_->Update(request));
      last_added_value_ = after[0];
      RETURN_IF_ERROR(tell_after(after[0]));
      add = nullptr;  // done; the gradients still go in the background
      if (updates.empty() && sparse.empty()) return absl::OkStatus();
    }
  }
  auto push = std::make_shared<OwnedPush>();
  // Reserved: the pushes below point into these vectors' elements.
  push->placements.reserve(updates.size() + sparse.size() + 1);
  const auto placement_of = [&push](const PsVariable& ps) {
    push->placements.push_back(ps.placement());
    return &push->placements.back();
  };
  push->dense_grads.reserve(updates.size());
  for (const CopyGradient& u : updates) {
    push->dense_grads.emplace_back(u.grad.begin(), u.grad.end());
    const auto* ps = BatchablePsVariable(u.variable, u.copy, servers_);
    push->pushes.push_back({placement_of(*ps), push->dense_grads.back()});
  }
  push->ids.reserve(sparse.size());
  push->row_grads.reserve(sparse.size());
  for (const CopySparseGradient& u : sparse) {
    push->ids.emplace_back(u.ids.begin(), u.ids.end());
    push->row_grads.emplace_back(u.grads.begin(), u.grads.end());
    const auto* ps = BatchablePsVariable(u.variable, u.copy, servers_);
    push->row_pushes.push_back(
        {placement_of(*ps), push->ids.back(), push->row_grads.back()});
  }
  if (add != nullptr) {
    push->delta = add->delta->flat<int64_t>()[0];
    push->adds.push_back({placement_of(*added),
                          absl::MakeConstSpan(&push->delta, 1),
                          absl::MakeSpan(&push->after, 1)});
    if (add->after != nullptr) {
      // What this push will leave, as far as this worker knows.
      RETURN_IF_ERROR(tell_after(last_added_value_ + push->delta));
    }
  }
  return background_->Start([this, push]() -> absl::Status {
    UpdateRequest request;
    request.dense = push->pushes;
    request.sparse = push->row_pushes;
    request.int64_adds = push->adds;
    RETURN_IF_ERROR(servers_->Update(request));
    if (!push->adds.empty()) last_added_value_ = push->after;
    return absl::OkStatus();
  });
}

absl::StatusOr<std::unique_ptr<DistributedVariable>>
ParameterServerStrategy::MakeSyncOnWriteVariable(
    const VariableOptions& options, const DistributedVariable* colocate_with) {
  if (!has_ps_tasks()) {
    // A null device is host memory; every replica reads copy 0.
    ASSIGN_OR_RETURN(
        std::unique_ptr<LocalVariable> variable,
        LocalVariable::Create(options, {nullptr},
                              std::vector<int>(num_local_replicas(), 0),
                              "on the host (no ps tasks)"));
    return std::unique_ptr<DistributedVariable>(std::move(variable));
  }
  ASSIGN_OR_RETURN(
      VariablePlacement placement,
      colocate_with != nullptr
          ? servers_->CreateVariableColocated(options.spec,
                                              colocate_with->name())
          : servers_->CreateVariable(options.spec, options.partition));
  return std::unique_ptr<DistributedVariable>(
      new PsVariable(options, servers_, std::move(placement)));
}

absl::StatusOr<std::unique_ptr<DistributedHashTable>>
ParameterServerStrategy::MakeHashTable(const HashEmbeddingSpec& spec) {
  if (!has_ps_tasks()) return Strategy::MakeHashTable(spec);
  RETURN_IF_ERROR(servers_->CreateHashTable(spec));
  return std::unique_ptr<DistributedHashTable>(new PsHashTable(spec, servers_));
}

absl::StatusOr<std::vector<Tensor>> ParameterServerStrategy::ReadCopies(
    absl::Span<const VariableCopy> copies,
    absl::Span<const CopyRows> rows) const {
  std::vector<Tensor> values;
  values.reserve(copies.size());
  std::vector<DenseVariablePull> pulls;
  for (const VariableCopy& c : copies) {
    const PsVariable* ps = BatchablePsVariable(c.variable, c.copy, servers_);
    ASSIGN_OR_RETURN(Tensor value,
                     ps == nullptr
                         ? c.variable->ReadCopy(c.copy)
                         : Tensor::Create(DType::kFloat32, ps->spec().shape));
    values.push_back(std::move(value));
    // The buffer stays put when `values` grows: a Tensor owns it.
    if (ps != nullptr) {
      pulls.push_back({&ps->placement(), values.back().flat<float>()});
    }
  }
  std::vector<SparseVariablePull> row_pulls;
  for (const CopyRows& r : rows) {
    const PsVariable* ps = BatchablePsVariable(r.variable, r.copy, servers_);
    if (ps == nullptr) {
      RETURN_IF_ERROR(r.variable->ReadRows(r.copy, r.ids, r.out));
      continue;
    }
    row_pulls.push_back({&ps->placement(), r.ids, r.out});
  }
  // Nothing on ps tasks (or none at all: training locally): no round trip.
  if (pulls.empty() && row_pulls.empty()) return values;
  // The step's reads in one request: the servers send them together.
  ReadRequest request;
  request.dense = pulls;
  request.sparse = row_pulls;
  RETURN_IF_ERROR(servers_->Read(request));
  return values;
}

absl::Status ParameterServerStrategy::ApplyGradientsToCopies(
    absl::Span<const CopyGradient> updates,
    absl::Span<const CopySparseGradient> sparse, const CopyAdd* add) {
  if (background_ != nullptr) {
    // In the background when everything goes to the ps tasks in one
    // Update, and the add is one value (the global step's); anything
    // else in the foreground, after the push before it.
    bool batchable = true;
    for (const CopyGradient& u : updates) {
      batchable = batchable &&
                  BatchablePsVariable(u.variable, u.copy, servers_) != nullptr;
    }
    for (const CopySparseGradient& u : sparse) {
      batchable = batchable &&
                  BatchablePsVariable(u.variable, u.copy, servers_) != nullptr;
    }
    const PsVariable* added =
        add == nullptr
            ? nullptr
            : BatchableAdd(add->variable, add->copy, *add->delta, servers_);
    if (batchable && (add == nullptr ||
                      (added != nullptr && add->delta->num_elements() == 1))) {
      return PushInBackground(updates, sparse, add, added);
    }
    RETURN_IF_ERROR(WaitForUpdates());
  }
  std::vector<DenseVariablePush> pushes;
  for (const CopyGradient& u : updates) {
    if (const PsVariable* ps =
            BatchablePsVariable(u.variable, u.copy, servers_);
        ps != nullptr) {
      pushes.push_back({&ps->placement(), u.grad});
      continue;
    }
    RETURN_IF_ERROR(u.variable->ApplyGradient(u.copy, u.grad));
  }
  std::vector<SparseVariablePush> row_pushes;
  for (const CopySparseGradient& u : sparse) {
    const PsVariable* ps = BatchablePsVariable(u.variable, u.copy, servers_);
    if (ps == nullptr) {
      RETURN_IF_ERROR(u.variable->ApplySparseGradient(u.copy, u.ids, u.grads));
      continue;
    }
    row_pushes.push_back({&ps->placement(), u.ids, u.grads});
  }
  const PsVariable* added =
      add == nullptr
          ? nullptr
          : BatchableAdd(add->variable, add->copy, *add->delta, servers_);
  // The step's updates, with the add when it goes to the ps tasks, in one
  // request: the servers send them together.
  UpdateRequest request;
  request.dense = pushes;
  request.sparse = row_pushes;
  Int64VariableAdd step_add{};
  if (added != nullptr) {
    ASSIGN_OR_RETURN(step_add, StepAdd(*add->delta, add->after, *added));
    request.int64_adds = {&step_add, 1};
  }
  // Nothing on ps tasks (or none at all: training locally): no round trip.
  const absl::Status pushed =
      pushes.empty() && row_pushes.empty() && added == nullptr
          ? absl::OkStatus()
          : servers_->Update(request);
  if (added == nullptr) {
    RETURN_IF_ERROR(pushed);
    return Strategy::ApplyGradientsToCopies({}, {}, add);
  }
  if (!pushed.ok() && add->after != nullptr) *add->after = Tensor();
  if (pushed.ok() && add->after != nullptr && step_add.after.size() == 1) {
    last_added_value_ = step_add.after[0];
  }
  return pushed;
}

absl::StatusOr<std::vector<Tensor>>
ParameterServerStrategy::ApplyGradientsToCopiesThenRead(
    absl::Span<const CopyGradient> updates,
    absl::Span<const CopySparseGradient> sparse, const CopyAdd* add,
    absl::Span<const VariableCopy> copies, absl::Span<const CopyRows> rows) {
  const auto separately = [&]() -> absl::StatusOr<std::vector<Tensor>> {
    return Strategy::ApplyGradientsToCopiesThenRead(updates, sparse, add,
                                                    copies, rows);
  };
  if (servers_ == nullptr || background_ != nullptr) return separately();
  std::vector<DenseVariablePush> pushes;
  for (const CopyGradient& u : updates) {
    const PsVariable* ps = BatchablePsVariable(u.variable, u.copy, servers_);
    if (ps == nullptr) return separately();
    pushes.push_back({&ps->placement(), u.grad});
  }
  std::vector<SparseVariablePush> row_pushes;
  for (const CopySparseGradient& u : sparse) {
    const PsVariable* ps = BatchablePsVariable(u.variable, u.copy, servers_);
    if (ps == nullptr) return separately();
    row_pushes.push_back({&ps->placement(), u.ids, u.grads});
  }
  const PsVariable* added =
      add == nullptr
          ? nullptr
          : BatchableAdd(add->variable, add->copy, *add->delta, servers_);
  if (add != nullptr && added == nullptr) return separately();
  std::vector<const PsVariable*> read;
  for (const VariableCopy& c : copies) {
    const PsVariable* ps = BatchablePsVariable(c.variable, c.copy, servers_);
    if (ps == nullptr) return separately();
    read.push_back(ps);
  }
  std::vector<SparseVariablePull> row_pulls;
  for (const CopyRows& r : rows) {
    const PsVariable* ps = BatchablePsVariable(r.variable, r.copy, servers_);
    if (ps == nullptr) return separately();
    row_pulls.push_back({&ps->placement(), r.ids, r.out});
  }
  std::vector<Tensor> values;
  values.reserve(read.size());
  std::vector<DenseVariablePull> pulls;
  for (const PsVariable* ps : read) {
    ASSIGN_OR_RETURN(Tensor value,
                     Tensor::Create(DType::kFloat32, ps->spec().shape));
    values.push_back(std::move(value));
    // The buffer stays put when `values` grows: a Tensor owns it.
    pulls.push_back({&ps->placement(), values.back().flat<float>()});
  }
  // The updates and the reads after them in one request: the servers send
  // them in one round.
  ReadRequest then_read;
  then_read.dense = pulls;
  then_read.sparse = row_pulls;
  UpdateRequest request;
  request.dense = pushes;
  request.sparse = row_pushes;
  request.then_read = &then_read;
  Int64VariableAdd step_add{};
  if (added != nullptr) {
    ASSIGN_OR_RETURN(step_add, StepAdd(*add->delta, add->after, *added));
    request.int64_adds = {&step_add, 1};
  }
  const absl::Status done = servers_->Update(request);
  if (added != nullptr && add->after != nullptr) {
    if (!done.ok()) {
      *add->after = Tensor();
    } else if (step_add.after.size() == 1) {
      last_added_value_ = step_add.after[0];
    }
  }
  RETURN_IF_ERROR(done);
  return values;
}

}  // namespace distrt
