#include "runtime/distribute/replica_context.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/device/copy_into.h"
#include "runtime/distribute/strategy.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/tensor/host_floats.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// INVALID_ARGUMENT naming `variable` and both sizes unless a gradient of
// `size` floats covers its every element.
absl::Status CheckDenseGradient(const DistributedVariable& variable,
                                size_t size) {
  const int64_t elements = NumRows(variable.spec()) * RowWidth(variable.spec());
  if (static_cast<int64_t>(size) == elements) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the gradient of variable \"", variable.name(), "\" has ",
                   size, " elements, the variable has ", elements));
}

// INVALID_ARGUMENT naming `variable` and both sizes unless `grad` holds one
// row of the variable's width for each of its ids.
absl::Status CheckSparseGradient(const DistributedVariable& variable,
                                 const SparseGradient& grad) {
  const int64_t width = RowWidth(variable.spec());
  const int64_t want = static_cast<int64_t>(grad.ids.size()) * width;
  if (static_cast<int64_t>(grad.rows.size()) == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the sparse gradient of variable \"", variable.name(), "\" has ",
      grad.rows.size(), " values for ", grad.ids.size(), " ids, whose rows (",
      width, " wide) are ", want, " values"));
}

// How the replicas' gradients of `variable` combine (GradientAggregation):
// MEAN for a kMean variable, SUM for every other, as TF's optimizer sums.
ReduceOp GradientReduceOp(const DistributedVariable& variable) {
  return variable.options().aggregation == VariableAggregation::kMean
             ? ReduceOp::kMean
             : ReduceOp::kSum;
}

}  // namespace

int ReplicaContext::replica_id_in_sync_group() const {
  return strategy_->worker_rank() * num_local_replicas() + replica_;
}

int ReplicaContext::num_replicas_in_sync() const {
  return strategy_->num_replicas_in_sync();
}

absl::Status ReplicaContext::AllReduce(ReduceOp op, Tensor& value) {
  if (value.dtype() == DType::kFloat32) {
    return ops_->AllReduce(*group_, replica_, op, value);
  }
  // int64 (counts, ids) and float64 (metrics that need the precision):
  // summed on the host in a MergeCall (int64 exactly), then over workers.
  ASSIGN_OR_RETURN(
      std::shared_ptr<const Tensor> reduced,
      MergeCall<const Tensor*>(
          &value,
          [op](Strategy& strategy, PerReplica<const Tensor*>& values)
              -> absl::StatusOr<std::shared_ptr<const Tensor>> {
            ASSIGN_OR_RETURN(Tensor sum,
                             strategy.ReduceOnHost(op, values.Unwrap(),
                                                   /*destination=*/nullptr));
            return std::make_shared<const Tensor>(std::move(sum));
          }));
  return CopyInto(*device(), *reduced, value);
}

absl::StatusOr<Tensor> ReplicaContext::Read(
    const DistributedVariable& variable) const {
  return variable.ReadCopy(variable.CopyOfReplica(replica_));
}

absl::Status ReplicaContext::ReadRows(const DistributedVariable& variable,
                                      absl::Span<const int64_t> ids,
                                      absl::Span<float> out) const {
  return variable.ReadRows(variable.CopyOfReplica(replica_), ids, out);
}

// What ReadMany reads, as this replica's copies.
struct ReplicaContext::CopyReads {
  std::vector<Strategy::VariableCopy> copies;
  std::vector<Strategy::CopyRows> rows;
};

ReplicaContext::CopyReads ReplicaContext::ReadsOfThisReplica(
    absl::Span<const DistributedVariable* const> variables,
    absl::Span<const RowsToRead> rows) const {
  CopyReads reads;
  reads.copies.reserve(variables.size());
  for (const DistributedVariable* variable : variables) {
    reads.copies.push_back({variable, variable->CopyOfReplica(replica_)});
  }
  reads.rows.reserve(rows.size());
  for (const RowsToRead& r : rows) {
    reads.rows.push_back(
        {r.variable, r.variable->CopyOfReplica(replica_), r.ids, r.out});
  }
  return reads;
}

absl::StatusOr<std::vector<Tensor>> ReplicaContext::ReadMany(
    absl::Span<const DistributedVariable* const> variables,
    absl::Span<const RowsToRead> rows) const {
  const CopyReads reads = ReadsOfThisReplica(variables, rows);
  return strategy_->ReadCopies(reads.copies, reads.rows);
}

bool ReplicaContext::UpdatesItsCopy(const DistributedVariable& variable) const {
  const int copy = variable.CopyOfReplica(replica_);
  for (int r = 0; r < replica_; ++r) {
    if (variable.CopyOfReplica(r) == copy) return false;
  }
  return true;
}

bool ReplicaContext::SharesCopies(const DistributedVariable& variable) const {
  return variable.num_copies() < num_local_replicas();
}

absl::Status ReplicaContext::AssignAdd(DistributedVariable& variable,
                                       Tensor delta, Tensor* after) {
  if (after != nullptr) *after = Tensor();
  ASSIGN_OR_RETURN(const bool adds, AggregateAdd(variable, delta));
  if (adds) {
    RETURN_IF_ERROR(variable.AddToCopyReadingInto(
        variable.CopyOfReplica(replica_), delta, after));
  }
  return WaitsAfterAdd(variable) ? group_->barrier().Wait("AssignAdd")
                                 : absl::OkStatus();
}

bool ReplicaContext::WaitsAfterAdd(const DistributedVariable& variable) const {
  return variable.options().synchronization !=
             VariableSynchronization::kOnRead &&
         SharesCopies(variable);
}

absl::StatusOr<bool> ReplicaContext::AggregateAdd(DistributedVariable& variable,
                                                  Tensor& delta) {
  const VariableOptions& options = variable.options();
  // Sync-on-read variables: each replica adds to its own copy.
  if (options.synchronization == VariableSynchronization::kOnRead) return true;
  const int n = num_replicas_in_sync();
  switch (options.aggregation) {
    case VariableAggregation::kNone:
      if (n > 1) {
        // Every replica sees the same variable and count, so all return
        // this error and nobody waits in a collective.
        return absl::FailedPreconditionError(absl::StrCat(
            "variable \"", variable.name(),
            "\" has aggregation NONE, so it cannot be updated in replica "
            "context with ",
            n, " replicas: create it with SUM, MEAN or ONLY_FIRST_REPLICA"));
      }
      break;
    case VariableAggregation::kSum:
    case VariableAggregation::kMean: {
      const ReduceOp op = options.aggregation == VariableAggregation::kSum
                              ? ReduceOp::kSum
                              : ReduceOp::kMean;
      if (delta.dtype() == DType::kInt64 && op == ReduceOp::kMean) {
        // Every replica sees the same variable, so all return this error
        // and nobody waits in a collective.
        return absl::InvalidArgumentError(
            absl::StrCat("variable \"", variable.name(),
                         "\": MEAN aggregation of int64 values"));
      }
      // float32 through the cross-device ops; int64 counters summed exactly
      // (AllReduce), over every worker too.
      if (absl::Status s = AllReduce(op, delta); !s.ok()) {
        return absl::Status(
            s.code(),
            absl::StrCat("variable \"", variable.name(), "\": ", s.message()));
      }
      break;
    }
    case VariableAggregation::kOnlyFirstReplica:
      if (SharesCopies(variable) && variable.num_copies() == 1) {
        // Only replica 0 updates the single copy: nothing to exchange.
        break;
      }
      {
        auto first = MergeCall<std::shared_ptr<Tensor>>(
            std::make_shared<Tensor>(std::move(delta)),
            [](Strategy&, PerReplica<std::shared_ptr<Tensor>>& deltas)
                -> absl::StatusOr<std::shared_ptr<Tensor>> {
              return deltas[0];
            });
        RETURN_IF_ERROR(first.status());
        ASSIGN_OR_RETURN(Tensor copy, (*first)->Clone());
        delta = std::move(copy);
      }
      break;
  }
  return UpdatesItsCopy(variable);
}

// The gradients an Apply* call applies, the same on every replica: the
// caller's own (kAlreadyAggregated, or one replica in sync) or their
// aggregation, which points into `reduced` and `gathered`.
struct ReplicaContext::AggregatedGradients {
  std::vector<absl::Span<const float>> dense;
  std::vector<SparseUpdate> sparse;
  // One all-reduced buffer per ReduceOp used, and its values on the host.
  std::vector<Tensor> reduced;
  std::vector<HostFloats> reduced_values;
  std::vector<std::shared_ptr<const SparseGradient>> gathered;
};

absl::StatusOr<ReplicaContext::AggregatedGradients>
ReplicaContext::AggregateGradients(
    absl::Span<DistributedVariable* const> variables,
    absl::Span<const absl::Span<const float>> grads,
    absl::Span<const SparseUpdate> sparse, GradientAggregation aggregation) {
  // Every replica passes the same variables and counts, so all return these
  // errors (unless a replica's gradient alone is wrong, whose error then
  // fails the others' collectives at once) and nobody waits.
  if (variables.size() != grads.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ApplyGradients: ", variables.size(), " variables but ",
                     grads.size(), " gradients"));
  }
  for (size_t i = 0; i < variables.size(); ++i) {
    RETURN_IF_ERROR(CheckDenseGradient(*variables[i], grads[i].size()));
  }
  for (const SparseUpdate& u : sparse) {
    RETURN_IF_ERROR(CheckSparseGradient(*u.variable, *u.grad));
  }
  AggregatedGradients aggregated;
  if (aggregation == GradientAggregation::kAlreadyAggregated ||
      num_replicas_in_sync() == 1) {
    aggregated.dense.assign(grads.begin(), grads.end());
    aggregated.sparse.assign(sparse.begin(), sparse.end());
    return aggregated;
  }
  RETURN_IF_ERROR(AllReduceDense(variables, grads, aggregated));
  const float inverse_n = 1.0f / static_cast<float>(num_replicas_in_sync());
  for (const SparseUpdate& u : sparse) {
    SparseGradient mine = *u.grad;
    if (GradientReduceOp(*u.variable) == ReduceOp::kMean) {
      for (float& g : mine.rows) g *= inverse_n;
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const SparseGradient> all,
                     AllGather(std::move(mine)));
    aggregated.sparse.push_back({u.variable, all.get()});
    aggregated.gathered.push_back(std::move(all));
  }
  return aggregated;
}

absl::Status ReplicaContext::AllReduceDense(
    absl::Span<DistributedVariable* const> variables,
    absl::Span<const absl::Span<const float>> grads,
    AggregatedGradients& aggregated) {
  aggregated.dense.assign(grads.size(), {});
  aggregated.reduced.reserve(2);
  aggregated.reduced_values.reserve(2);
  // One all-reduce for the SUM variables' gradients, packed in one buffer
  // on this replica's device, and one for the MEAN ones: the same on every
  // replica, which sees the same variables.
  for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    int64_t size = 0;
    for (size_t i = 0; i < variables.size(); ++i) {
      if (GradientReduceOp(*variables[i]) == op) size += grads[i].size();
    }
    if (size == 0) continue;
    ASSIGN_OR_RETURN(Tensor packed, Tensor::Create(DType::kFloat32, {size},
                                                   device()->allocator()));
    float* const base = static_cast<float*>(packed.raw_data());
    int64_t offset = 0;
    for (size_t i = 0; i < variables.size(); ++i) {
      if (GradientReduceOp(*variables[i]) != op) continue;
      RETURN_IF_ERROR(packed.allocator()->CopyFromHost(
          grads[i].data(), base + offset, grads[i].size() * sizeof(float)));
      offset += grads[i].size();
    }
    if (absl::Status s = AllReduce(op, packed); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("aggregating gradients: ", s.message()));
    }
    aggregated.reduced.push_back(std::move(packed));
    ASSIGN_OR_RETURN(HostFloats values,
                     HostFloats::Read(aggregated.reduced.back()));
    aggregated.reduced_values.push_back(std::move(values));
    const absl::Span<const float> reduced =
        aggregated.reduced_values.back().values();
    offset = 0;
    for (size_t i = 0; i < variables.size(); ++i) {
      if (GradientReduceOp(*variables[i]) != op) continue;
      aggregated.dense[i] = reduced.subspan(offset, grads[i].size());
      offset += grads[i].size();
    }
  }
  return absl::OkStatus();
}

absl::Status ReplicaContext::ApplyGradient(DistributedVariable& variable,
                                           absl::Span<const float> grad,
                                           GradientAggregation aggregation) {
  DistributedVariable* const variables[] = {&variable};
  const absl::Span<const float> grads[] = {grad};
  ASSIGN_OR_RETURN(AggregatedGradients aggregated,
                   AggregateGradients(variables, grads, {}, aggregation));
  if (UpdatesItsCopy(variable)) {
    RETURN_IF_ERROR(variable.ApplyGradient(variable.CopyOfReplica(replica_),
                                           aggregated.dense[0]));
  }
  return SharesCopies(variable) ? group_->barrier().Wait("ApplyGradient")
                                : absl::OkStatus();
}

struct ReplicaContext::CopyUpdates {
  std::vector<Strategy::CopyGradient> dense;
  std::vector<Strategy::CopySparseGradient> sparse;
  std::optional<Strategy::CopyAdd> add;
  bool shares_copies = false;
  bool empty() const {
    return dense.empty() && sparse.empty() && !add.has_value();
  }
};

absl::StatusOr<ReplicaContext::CopyUpdates>
ReplicaContext::UpdatesOfThisReplica(
    absl::Span<DistributedVariable* const> variables,
    absl::Span<const absl::Span<const float>> grads,
    absl::Span<const SparseUpdate> sparse, AddUpdate* add) {
  CopyUpdates updates;
  for (size_t i = 0; i < variables.size(); ++i) {
    DistributedVariable& variable = *variables[i];
    if (UpdatesItsCopy(variable)) {
      updates.dense.push_back(
          {&variable, variable.CopyOfReplica(replica_), grads[i]});
    }
    updates.shares_copies = updates.shares_copies || SharesCopies(variable);
  }
  for (const SparseUpdate& u : sparse) {
    DistributedVariable& variable = *u.variable;
    if (UpdatesItsCopy(variable)) {
      updates.sparse.push_back({&variable, variable.CopyOfReplica(replica_),
                                u.grad->ids, u.grad->rows});
    }
    updates.shares_copies = updates.shares_copies || SharesCopies(variable);
  }
  if (add != nullptr) {
    if (add->after != nullptr) *add->after = Tensor();
    DistributedVariable& variable = *add->variable;
    ASSIGN_OR_RETURN(const bool adds, AggregateAdd(variable, add->delta));
    if (adds) {
      updates.add = Strategy::CopyAdd{
          &variable, variable.CopyOfReplica(replica_), &add->delta, add->after};
    }
    updates.shares_copies = updates.shares_copies || WaitsAfterAdd(variable);
  }
  return updates;
}

absl::Status ReplicaContext::ApplyGradients(
    absl::Span<DistributedVariable* const> variables,
    absl::Span<const absl::Span<const float>> grads,
    absl::Span<const SparseUpdate> sparse, AddUpdate* add,
    GradientAggregation aggregation) {
  ASSIGN_OR_RETURN(AggregatedGradients aggregated,
                   AggregateGradients(variables, grads, sparse, aggregation));
  ASSIGN_OR_RETURN(CopyUpdates updates,
                   UpdatesOfThisReplica(variables, aggregated.dense,
                                        aggregated.sparse, add));
  return ApplyCopyUpdates(updates);
}

absl::Status ReplicaContext::ApplyCopyUpdates(const CopyUpdates& updates) {
  if (!updates.empty()) {
    RETURN_IF_ERROR(strategy_->ApplyGradientsToCopies(
        updates.dense, updates.sparse, updates.add ? &*updates.add : nullptr));
  }
  // One barrier for all: nobody reads a shared copy before every update of
  // this call is in.
  return updates.shares_copies ? group_->barrier().Wait("ApplyGradient")
                               : absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> ReplicaContext::ApplyGradientsThenRead(
    absl::Span<DistributedVariable* const> variables,
    absl::Span<const absl::Span<const float>> grads,
    absl::Span<const SparseUpdate> sparse, AddUpdate* add,
    absl::Span<const DistributedVariable* const> read,
    absl::Span<const RowsToRead> rows, GradientAggregation aggregation) {
  ASSIGN_OR_RETURN(AggregatedGradients aggregated,
                   AggregateGradients(variables, grads, sparse, aggregation));
  ASSIGN_OR_RETURN(CopyUpdates updates,
                   UpdatesOfThisReplica(variables, aggregated.dense,
                                        aggregated.sparse, add));
  if (updates.shares_copies) {
    RETURN_IF_ERROR(ApplyCopyUpdates(updates));
    return ReadMany(read, rows);
  }
  const CopyReads reads = ReadsOfThisReplica(read, rows);
  return strategy_->ApplyGradientsToCopiesThenRead(
      updates.dense, updates.sparse, updates.add ? &*updates.add : nullptr,
      reads.copies, reads.rows);
}

absl::Status ReplicaContext::ApplySparseGradient(
    DistributedVariable& variable, const SparseGradient& grad,
    GradientAggregation aggregation) {
  const SparseUpdate updates[] = {{&variable, &grad}};
  ASSIGN_OR_RETURN(AggregatedGradients aggregated,
                   AggregateGradients({}, {}, updates, aggregation));
  if (UpdatesItsCopy(variable)) {
    const SparseGradient& all = *aggregated.sparse[0].grad;
    RETURN_IF_ERROR(variable.ApplySparseGradient(
        variable.CopyOfReplica(replica_), all.ids, all.rows));
  }
  return SharesCopies(variable) ? group_->barrier().Wait("ApplyGradient")
                                : absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const SparseGradient>> ReplicaContext::AllGather(
    SparseGradient grad) {
  return MergeCall<SparseGradient>(
      std::move(grad),
      [](Strategy& strategy, PerReplica<SparseGradient>& grads)
          -> absl::StatusOr<std::shared_ptr<const SparseGradient>> {
        auto all = std::make_shared<SparseGradient>();
        for (const SparseGradient& g : grads.Unwrap()) {
          all->ids.insert(all->ids.end(), g.ids.begin(), g.ids.end());
          all->rows.insert(all->rows.end(), g.rows.begin(), g.rows.end());
        }
        RETURN_IF_ERROR(strategy.GatherFromOtherWorkers(*all));
        return std::shared_ptr<const SparseGradient>(std::move(all));
      });
}

}  // namespace distrt
