#ifndef DISTRT_RUNTIME_DISTRIBUTE_VARIABLE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_VARIABLE_H_

// DistributedVariable: a variable created under a strategy, as TF's
// DistributedVariable. Where its value lives depends on the strategy: one
// copy per device (MirroredStrategy), one copy on the host
// (CentralStorageStrategy), one copy on the single device
// (OneDeviceStrategy), or on the parameter servers (ParameterServerStrategy).
// Sync-on-read variables (metrics, batch statistics) have one copy per
// replica under every strategy.
//
// How replicas' updates combine is the variable's aggregation (TF's
// VariableAggregation): in replica context, ReplicaContext::AssignAdd sums
// or averages the replicas' deltas (kSum, kMean), takes the first
// replica's (kOnlyFirstReplica, e.g. the global step), or refuses when there
// is more than one replica (kNone). For sync-on-read variables the
// aggregation is instead how Strategy::ReadVar combines the copies.
//
// The copies of a variable are numbered 0..num_copies()-1; CopyOfReplica
// says which one a replica computes with. Thread-safe: each copy has its own
// lock, so replicas update their own copies in parallel.
//
// ExportState / ImportState move a variable's whole state (values, optimizer
// slots, step) in and out, for checkpoints written by workers and for
// broadcasting one worker's state to the others (runtime/training/
// model_state.h). Only variables held in this process support them:
// variables on parameter servers are checkpointed by the ps tasks, so the
// defaults are UNIMPLEMENTED.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/distribute/variable_aggregation.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/ps/variable_store.h"
#include "runtime/tensor/tensor.h"

namespace distrt {

struct VariableOptions {
  VariableSpec spec;
  VariableSynchronization synchronization = VariableSynchronization::kOnWrite;
  VariableAggregation aggregation = VariableAggregation::kNone;
  // How a parameter-server strategy splits it by rows; ignored elsewhere.
  PartitionPolicy partition;
};

class DistributedVariable {
 public:
  virtual ~DistributedVariable() = default;

  const VariableOptions& options() const { return options_; }
  const VariableSpec& spec() const { return options_.spec; }
  const std::string& name() const { return options_.spec.name; }

  virtual int num_copies() const = 0;
  virtual int CopyOfReplica(int replica) const = 0;
  // For logs, e.g. "mirrored on 4 devices", "on ps tasks 0, 1".
  virtual std::string DescribePlacement() const = 0;

  // The value of copy `copy` (a float32 or int64 tensor of spec().shape),
  // in host memory: copies kept in this process live in host memory with
  // their optimizer state, whatever device computes with them.
  virtual absl::StatusOr<Tensor> ReadCopy(int copy) const = 0;
  // Rows `ids` of a float32 copy; `out` holds ids.size() rows.
  virtual absl::Status ReadRows(int copy, absl::Span<const int64_t> ids,
                                absl::Span<float> out) const = 0;
  // Sets copy `copy` to `value` (dtype and shape of the spec).
  virtual absl::Status WriteCopy(int copy, const Tensor& value) = 0;
  // Adds `delta` (dtype and shape of the spec) to copy `copy`.
  virtual absl::Status AddToCopy(int copy, const Tensor& delta) = 0;
  // AddToCopy, then the copy's value after it, in host memory. This
  // default reads the copy once the add is in, so another update may come
  // between; on ps tasks an int64 add brings its result back in its own
  // round trip, atomically (a training step learns the global step so).
  virtual absl::StatusOr<Tensor> AddToCopyAndRead(int copy,
                                                  const Tensor& delta);
  // AddToCopy when `after` is null, else AddToCopyAndRead into `after`.
  absl::Status AddToCopyReadingInto(int copy, const Tensor& delta,
                                    Tensor* after);
  // Applies the spec's optimizer to copy `copy` with a gradient for all
  // elements, or for rows `ids` (repeated ids summed first).
  virtual absl::Status ApplyGradient(int copy,
                                     absl::Span<const float> grad) = 0;
  virtual absl::Status ApplySparseGradient(int copy,
                                           absl::Span<const int64_t> ids,
                                           absl::Span<const float> grads) = 0;

  // The whole state of copy `copy`: its values (float32) or ints (int64),
  // the optimizer's slots in SlotNames order, and its step, for every row of
  // the variable. Consistent with respect to updates of that copy (each is
  // in it entirely or not at all). INVALID_ARGUMENT for a bad copy;
  // UNIMPLEMENTED (the default) where the strategy keeps the state
  // elsewhere.
  virtual absl::StatusOr<VariableState> ExportState(int copy) const;
  // Sets EVERY copy to `state`, which must have exactly the sizes of the
  // whole variable (as ExportState returns them) and a non-negative step;
  // otherwise INVALID_ARGUMENT naming the variable and both sizes, and no
  // copy has changed. Each copy changes atomically with respect to its
  // readers and updates, but the copies one after another: call it between
  // steps, when no replica updates the variable. UNIMPLEMENTED (the
  // default) where the strategy keeps the state elsewhere.
  virtual absl::Status ImportState(const VariableState& state);

 protected:
  explicit DistributedVariable(VariableOptions options)
      : options_(std::move(options)) {}

  // INVALID_ARGUMENT naming the variable unless `copy` is a copy of it.
  absl::Status CheckCopy(int copy) const;
  // INVALID_ARGUMENT naming the variable unless `value` has its dtype and
  // shape.
  absl::Status CheckFits(absl::string_view what, const Tensor& value) const;

 private:
  const VariableOptions options_;
};

// A hash embedding table created under a strategy: rows keyed by any int64
// id, created on first use. One copy under every strategy: on the host for
// local strategies (as TF keeps large embedding tables on the CPU), sharded
// over the ps tasks for ParameterServerStrategy.
class DistributedHashTable {
 public:
  virtual ~DistributedHashTable() = default;
  virtual const HashEmbeddingSpec& spec() const = 0;
  virtual std::string DescribePlacement() const = 0;
  // `out` / `grads` hold ids.size() rows of spec().dim.
  virtual absl::Status Pull(absl::Span<const int64_t> ids,
                            absl::Span<float> out) = 0;
  virtual absl::Status Push(absl::Span<const int64_t> ids,
                            absl::Span<const float> grads) = 0;
  // Push, telling the table the global step the pusher knows (a training
  // step's, before its own increment), by which a table whose policy has
  // ttl_steps ages its rows; -1: unknown. The default: Push, the step
  // unused (for tables without rows of their own, such as test fakes).
  virtual absl::Status PushAtStep(absl::Span<const int64_t> ids,
                                  absl::Span<const float> grads,
                                  int64_t global_step) {
    (void)global_step;
    return Push(ids, grads);
  }

  // Every row of the table (ascending ids), with its slots and steps.
  // Consistent: each push is in it entirely or not at all. UNIMPLEMENTED
  // (the default) where the strategy keeps the rows elsewhere.
  virtual absl::StatusOr<HashTableState> ExportState() const;
  // Replaces ALL rows with those of `state` (rows not in it are dropped),
  // atomically with respect to pulls and pushes. INVALID_ARGUMENT naming the
  // table when a size disagrees with the number of ids, dim or the
  // optimizer's slots, an id repeats or a step is negative; the table is
  // then unchanged. UNIMPLEMENTED (the default) where the strategy keeps the
  // rows elsewhere.
  virtual absl::Status ImportState(HashTableState state);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_VARIABLE_H_
