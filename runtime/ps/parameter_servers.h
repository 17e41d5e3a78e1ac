#ifndef DISTRT_RUNTIME_PS_PARAMETER_SERVERS_H_
#define DISTRT_RUNTIME_PS_PARAMETER_SERVERS_H_

// ParameterServers: a job's ps tasks seen as one store of variables, as the
// strategies use them. Transport-free: PsClient (client/ps_client.h) is the
// implementation that reaches ps_server processes over gRPC, and
// InMemoryParameterServers (runtime/in_memory_ps/) holds the tasks'
// stores in this process, for tests and for ParameterServerStrategy without
// ps tasks.
//
// Variables are placed on ps tasks by the caller's side (placement.h), so
// every worker that creates the same variables in the same order agrees on
// where they live. Buffers hold a variable's rows in order, all elements;
// errors name the variable (and, where there is one, the ps task).
// Implementations are thread-safe.
//
// The interface is a handful of operations that take request objects
// (ps_requests.h): a step hands all its reads to one Read and all its
// updates to one Update, and the implementation decides how they travel.
// The one-variable methods at the end (Pull, Push, PullSparse, ...) build
// such a request for callers that handle a variable at a time.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/ps_requests.h"
#include "runtime/ps/variable_spec.h"

namespace distrt {

// What ParameterServers::Save and Restore did.
struct CheckpointSaved {
  std::string checkpoint;  // the committed checkpoint directory
  int64_t bytes = 0;       // over all shards
  std::vector<std::string> deleted;
  // Hash-table rows written (in a delta: changed rows plus removed ids) and
  // held, over all ps tasks.
  int64_t table_rows_written = 0;
  int64_t table_rows_held = 0;
};

// What a delta checkpoint follows (docs/checkpoint_format.md): checkpoint
// directory names (ckpt-<step>) in the same directory.
struct DeltaSaveOf {
  std::string previous;  // the save it follows, full or delta
  std::string base;      // the full save its chain starts from
};

struct CheckpointRestored {
  std::string checkpoint;
  int64_t step = 0;
  int64_t variables_restored = 0;  // parts, over all ps tasks
  int64_t hash_table_rows_restored = 0;
};

class ParameterServers {
 public:
  virtual ~ParameterServers() = default;

  virtual int num_ps_tasks() const = 0;

  // Waits until every ps task answers, up to `timeout`; UNAVAILABLE naming
  // the tasks that did not.
  virtual absl::Status WaitForServers(absl::Duration timeout) = 0;

  // Places `request.spec` (split by its partition, or beside colocate_with)
  // and creates its parts on their ps tasks. Creating it again with the
  // same spec returns the same placement; with another spec ALREADY_EXISTS
  // saying what differs. INVALID_ARGUMENT for a spec that is not valid.
  virtual absl::StatusOr<VariablePlacement> CreateVariable(
      const CreateVariableRequest& request) = 0;
  // The placement of a variable created by any worker of the job (as the
  // ps tasks hold it). NOT_FOUND when no task has it.
  virtual absl::StatusOr<VariablePlacement> LookupVariable(
      absl::string_view name) = 0;
  // Creates hash embedding table `spec`: a shard on every ps task, ids
  // spread by HashShardOf(id, num_ps_tasks()).
  virtual absl::Status CreateHashTable(const HashEmbeddingSpec& spec) = 0;

  // Reads every item of `request` into its buffer (ps_requests.h: what is
  // checked before anything is sent). Items may be read in any order and
  // in parallel; each part of a variable is read atomically, but a request
  // is not a snapshot across parts or variables. PsClient sends the dense
  // and sparse items in one round of requests (small requests to one ps
  // task bundled into one call); the int64 and hash-table items each as an
  // operation of its own. On failure, which buffers were written is
  // unspecified.
  virtual absl::Status Read(const ReadRequest& request) = 0;

  // Applies every update of `request` on the ps tasks, each atomically per
  // part (ps_requests.h: what is checked before anything is sent, and that
  // no order is promised among its items), then makes `then_read`'s reads.
  // PsClient sends the optimizer gradients (dense and sparse) and the
  // int64 adds in one round of requests, small ones to the same ps task
  // bundled into one call; with then_read, its dense and sparse reads go in
  // that same round, after the updates (one round trip where an update and
  // a read took one each). A ps task serves the parts of one bundle in
  // order, so reads bundled with updates see them. What goes apart may be
  // served in either order, and a read of it may lack this update (as with
  // read-ahead, see runtime/training/read_ahead.h): a request over
  // PsClient::Options::bundle_below_bytes (a large variable's pieces, a
  // batch of many small variables, a sparse push of many rows), a task's
  // small requests beyond one bundle (2 x bundle_below_bytes, 64 parts),
  // and every request where bundles are off or the task refuses them. The
  // writes without the optimizer and the hash-table gradients go before
  // that round, each as an operation of its own, and then_read's int64 and
  // hash-table reads after it, so those see every update. When anything
  // fails, what was applied and read is unspecified, and the call fails.
  virtual absl::Status Update(const UpdateRequest& request) = 0;

  // Checkpoints (runtime/checkpoint/ps_checkpoint.h): every ps task writes
  // its shard of checkpoint `step` under `directory`, then one commits it
  // and keeps the newest `keep_last` (0: all). Errors name the directory
  // or the ps task; a failed save leaves earlier checkpoints as they were.
  virtual absl::StatusOr<CheckpointSaved> Save(const std::string& directory,
                                               int64_t step, int keep_last) = 0;
  // As Save, but a delta checkpoint: each ps task writes only the hash-table
  // rows changed (and ids removed) since checkpoint `delta.previous`, which
  // must be what every task last saved or restored in `directory`;
  // FAILED_PRECONDITION otherwise (a task restarted, or a save failed), and
  // the caller should then save in full. After any failure the next save
  // should be full. UNIMPLEMENTED where deltas are not supported (the
  // default).
  virtual absl::StatusOr<CheckpointSaved> SaveDelta(
      const std::string& directory, int64_t step, int keep_last,
      const DeltaSaveOf& delta) {
    (void)directory, (void)step, (void)keep_last, (void)delta;
    return absl::UnimplementedError("delta checkpoints are not supported");
  }
  // Restores every variable and hash table that exists on the ps tasks from
  // `directory` (a checkpoint, or a directory of them: the latest). First
  // every task verifies that it can, then every task loads, so a bad
  // checkpoint changes nothing anywhere.
  virtual absl::StatusOr<CheckpointRestored> Restore(
      const std::string& directory) = 0;

  // ---- One variable at a time -----------------------------------------
  // Conveniences that build a request of one item and take its contract.
  // (An implementation that overrides CreateVariable brings these into
  // scope with `using ParameterServers::CreateVariable;`.)

  absl::StatusOr<VariablePlacement> CreateVariable(
      const VariableSpec& spec,
      const PartitionPolicy& partition = PartitionPolicy::None()) {
    CreateVariableRequest request;
    request.spec = spec;
    request.partition = partition;
    return CreateVariable(request);
  }
  // Unpartitioned, beside the existing variable `colocate_with`.
  absl::StatusOr<VariablePlacement> CreateVariableColocated(
      const VariableSpec& spec, absl::string_view colocate_with) {
    CreateVariableRequest request;
    request.spec = spec;
    request.colocate_with = std::string(colocate_with);
    return CreateVariable(request);
  }

  // A float32 variable's elements, and a gradient of them.
  absl::Status Pull(const VariablePlacement& variable, absl::Span<float> out) {
    const DenseVariablePull pull = {&variable, out};
    ReadRequest request;
    request.dense = {&pull, 1};
    return Read(request);
  }
  absl::Status Push(const VariablePlacement& variable,
                    absl::Span<const float> grad) {
    const DenseVariablePush push = {&variable, grad};
    UpdateRequest request;
    request.dense = {&push, 1};
    return Update(request);
  }
  // Without the optimizer: sets or adds to every element.
  absl::Status Assign(const VariablePlacement& variable,
                      absl::Span<const float> values) {
    return Write(variable, VariableWrite::kAssign, values);
  }
  absl::Status Add(const VariablePlacement& variable,
                   absl::Span<const float> delta) {
    return Write(variable, VariableWrite::kAdd, delta);
  }

  // int64 variables (e.g. the global step). AddInt64 is a fetch-and-add
  // (Int64VariableAdd): `after`, when not empty, gets the values it left.
  absl::Status PullInt64(const VariablePlacement& variable,
                         absl::Span<int64_t> out) {
    const Int64VariablePull pull = {&variable, out};
    ReadRequest request;
    request.int64 = {&pull, 1};
    return Read(request);
  }
  absl::Status AssignInt64(const VariablePlacement& variable,
                           absl::Span<const int64_t> values) {
    const Int64VariableAssign assign = {&variable, values};
    UpdateRequest request;
    request.int64_assigns = {&assign, 1};
    return Update(request);
  }
  absl::Status AddInt64(const VariablePlacement& variable,
                        absl::Span<const int64_t> delta,
                        absl::Span<int64_t> after = {}) {
    const Int64VariableAdd add = {&variable, delta, after};
    UpdateRequest request;
    request.int64_adds = {&add, 1};
    return Update(request);
  }

  // Rows of a float32 variable by id, and gradients of them.
  absl::Status PullSparse(const VariablePlacement& variable,
                          absl::Span<const int64_t> ids,
                          absl::Span<float> out) {
    const SparseVariablePull pull = {&variable, ids, out};
    ReadRequest request;
    request.sparse = {&pull, 1};
    return Read(request);
  }
  absl::Status PushSparse(const VariablePlacement& variable,
                          absl::Span<const int64_t> ids,
                          absl::Span<const float> grads) {
    const SparseVariablePush push = {&variable, ids, grads};
    UpdateRequest request;
    request.sparse = {&push, 1};
    return Update(request);
  }

  // Rows of a hash embedding table by id, and gradients of them.
  absl::Status PullHash(const HashEmbeddingSpec& table,
                        absl::Span<const int64_t> ids, absl::Span<float> out) {
    const HashTablePull pull = {&table, ids, out};
    ReadRequest request;
    request.hash = {&pull, 1};
    return Read(request);
  }
  absl::Status PushHash(const HashEmbeddingSpec& table,
                        absl::Span<const int64_t> ids,
                        absl::Span<const float> grads) {
    const HashTablePush push = {&table, ids, grads};
    UpdateRequest request;
    request.hash = {&push, 1};
    return Update(request);
  }

 private:
  absl::Status Write(const VariablePlacement& variable, VariableWrite write,
                     absl::Span<const float> values) {
    const DenseVariableWrite item = {&variable, write, values};
    UpdateRequest request;
    request.writes = {&item, 1};
    return Update(request);
  }
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_PARAMETER_SERVERS_H_
