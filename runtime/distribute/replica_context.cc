#include "runtime/distribute/replica_context.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/device/copy_into.h"
#include "runtime/distribute/strategy.h"
#include "runtime/util/status_macros.h"

namespace distrt {

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

absl::Status ReplicaContext::ApplyGradient(DistributedVariable& variable,
                                           absl::Span<const float> grad) {
  if (UpdatesItsCopy(variable)) {
    RETURN_IF_ERROR(
        variable.ApplyGradient(variable.CopyOfReplica(replica_), grad));
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
  if (variables.size() != grads.size()) {
    // Every replica passes the same counts, so all return this error and
    // nobody waits in a collective.
    return absl::InvalidArgumentError(
        absl::StrCat("ApplyGradients: ", variables.size(), " variables but ",
                     grads.size(), " gradients"));
  }
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
    absl::Span<const SparseUpdate> sparse, AddUpdate* add) {
  ASSIGN_OR_RETURN(CopyUpdates updates,
                   UpdatesOfThisReplica(variables, grads, sparse, add));
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
    absl::Span<const RowsToRead> rows) {
  ASSIGN_OR_RETURN(CopyUpdates updates,
                   UpdatesOfThisReplica(variables, grads, sparse, add));
  if (updates.shares_copies) {
    RETURN_IF_ERROR(ApplyCopyUpdates(updates));
    return ReadMany(read, rows);
  }
  const CopyReads reads = ReadsOfThisReplica(read, rows);
  return strategy_->ApplyGradientsToCopiesThenRead(
      updates.dense, updates.sparse, updates.add ? &*updates.add : nullptr,
      reads.copies, reads.rows);
}

absl::Status ReplicaContext::ApplySparseGradient(DistributedVariable& variable,
                                                 const SparseGradient& grad) {
  if (UpdatesItsCopy(variable)) {
    RETURN_IF_ERROR(variable.ApplySparseGradient(
        variable.CopyOfReplica(replica_), grad.ids, grad.rows));
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
