#ifndef DISTRT_RUNTIME_PS_PARAMETER_SERVERS_H_
#define DISTRT_RUNTIME_PS_PARAMETER_SERVERS_H_

// ParameterServers: a job's ps tasks seen as one store of variables, as the
// strategies use them. Transport-free: PsClient (client/ps_client.h) is the
// implementation that reaches ps_server processes over gRPC, and
// InMemoryParameterServers (in_memory_parameter_servers.h) holds the tasks'
// stores in this process, for tests and for ParameterServerStrategy without
// ps tasks.
//
// Variables are placed on ps tasks by the caller's side (placement.h), so
// every worker that creates the same variables in the same order agrees on
// where they live. Buffers hold a variable's rows in order, all elements;
// errors name the variable (and, where there is one, the ps task).
// Implementations are thread-safe.

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
#include "runtime/ps/variable_spec.h"

namespace distrt {

// One variable's buffer in ParameterServers::PullMany / PushMany. The
// placement and the buffer must outlive the call.
struct DenseVariablePull {
  const VariablePlacement* variable;
  absl::Span<float> out;  // all its elements, as Pull takes them
};
struct DenseVariablePush {
  const VariablePlacement* variable;
  absl::Span<const float> grad;  // all its elements, as Push takes them
};
// Rows of one float32 variable by id in ParameterServers::PullStep, as
// PullSparse takes them; the placement and buffers must outlive the call.
struct SparseVariablePull {
  const VariablePlacement* variable;
  absl::Span<const int64_t> ids;
  absl::Span<float> out;  // ids.size() rows
};
// Gradients of rows of one float32 variable by id in
// ParameterServers::PushStep, as PushSparse takes them.
struct SparseVariablePush {
  const VariablePlacement* variable;
  absl::Span<const int64_t> ids;
  absl::Span<const float> grads;  // ids.size() rows
};
// An add to an int64 variable in ParameterServers::PushStep, as AddInt64
// takes it (e.g. the global step's increment, which goes with the step's
// updates); `after` empty when the values after are not wanted.
struct Int64VariableAdd {
  const VariablePlacement* variable;
  absl::Span<const int64_t> delta;
  absl::Span<int64_t> after;
};

// What ParameterServers::Save and Restore did.
struct CheckpointSaved {
  std::string checkpoint;  // the committed checkpoint directory
  int64_t bytes = 0;       // over all shards
  std::vector<std::string> deleted;
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

  // Places `spec` (split by `partition`) and creates its parts on their ps
  // tasks; creating it again with the same spec returns the same placement,
  // with another spec ALREADY_EXISTS saying what differs.
  virtual absl::StatusOr<VariablePlacement> CreateVariable(
      const VariableSpec& spec, const PartitionPolicy& partition) = 0;
  // Unpartitioned. (An implementation brings it into scope with `using
  // ParameterServers::CreateVariable;`.)
  absl::StatusOr<VariablePlacement> CreateVariable(const VariableSpec& spec) {
    return CreateVariable(spec, PartitionPolicy::None());
  }
  // Creates `spec` unpartitioned on the ps task holding the first rows of
  // the existing variable `colocate_with` (TF's colocate_vars_with), e.g. an
  // optimizer's state beside its variable. NOT_FOUND when that variable does
  // not exist. Later variables are placed as if this one were not there.
  virtual absl::StatusOr<VariablePlacement> CreateVariableColocated(
      const VariableSpec& spec, absl::string_view colocate_with) = 0;
  // The placement of a variable created by any worker of the job (as the
  // ps tasks hold it). NOT_FOUND when no task has it.
  virtual absl::StatusOr<VariablePlacement> LookupVariable(
      absl::string_view name) = 0;

  // Dense float32 access. A push applies the variable's optimizer on the
  // ps tasks, atomically per part.
  virtual absl::Status Pull(const VariablePlacement& variable,
                            absl::Span<float> out) = 0;
  virtual absl::Status Push(const VariablePlacement& variable,
                            absl::Span<const float> grad) = 0;
  // Several float32 variables at once, as one step reads and updates a
  // model. INVALID_ARGUMENT naming the variable, before anything is sent or
  // applied, for a variable that is not float32 or a buffer of the wrong
  // size. An empty list does nothing.
  virtual absl::Status PullMany(absl::Span<const DenseVariablePull> pulls) = 0;
  virtual absl::Status PushMany(absl::Span<const DenseVariablePush> pushes) = 0;
  // A training step's reads at once: PullMany of `dense` and PullSparse of
  // each of `sparse`, with their checks and errors. PsClient sends them all
  // in one round of requests (one round trip where a step made one per
  // kind); this default makes the calls one after another.
  virtual absl::Status PullStep(absl::Span<const DenseVariablePull> dense,
                                absl::Span<const SparseVariablePull> sparse) {
    if (!dense.empty()) {
      if (absl::Status s = PullMany(dense); !s.ok()) return s;
    }
    for (const SparseVariablePull& pull : sparse) {
      absl::Status s = PullSparse(*pull.variable, pull.ids, pull.out);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // A training step's updates at once: PushMany of `dense`, PushSparse of
  // each of `sparse` and AddInt64 of each of `adds`, sent together by
  // PsClient (this default: one after another). When one fails, which of
  // the others were applied is unspecified.
  virtual absl::Status PushStep(absl::Span<const DenseVariablePush> dense,
                                absl::Span<const SparseVariablePush> sparse,
                                absl::Span<const Int64VariableAdd> adds) {
    if (!dense.empty()) {
      if (absl::Status s = PushMany(dense); !s.ok()) return s;
    }
    for (const SparseVariablePush& push : sparse) {
      absl::Status s = PushSparse(*push.variable, push.ids, push.grads);
      if (!s.ok()) return s;
    }
    for (const Int64VariableAdd& add : adds) {
      absl::Status s = AddInt64(*add.variable, add.delta, add.after);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // A step's updates, then the next step's reads: PushStep of the first
  // three, then PullStep of the last two. PsClient sends them in one round
  // (one round trip where the two took one each); a ps task serves the
  // parts of one bundle in order, so reads bundled with updates see them.
  // What goes apart may be served in either order, and a read of it may
  // lack this update (as with read-ahead, see runtime/training/read_ahead.h):
  // a request over PsClient::Options::bundle_below_bytes (a large
  // variable's pieces, a batch of many small variables, a sparse push of
  // many rows), a task's small requests beyond one bundle (2 x
  // bundle_below_bytes, 64 parts), and every request where bundles are off
  // or the task refuses them. This default makes the two calls one after
  // the other. When one fails, what was applied and read is unspecified,
  // and the call fails.
  virtual absl::Status PushPullStep(
      absl::Span<const DenseVariablePush> dense_pushes,
      absl::Span<const SparseVariablePush> sparse_pushes,
      absl::Span<const Int64VariableAdd> adds,
      absl::Span<const DenseVariablePull> dense_pulls,
      absl::Span<const SparseVariablePull> sparse_pulls) {
    if (absl::Status s = PushStep(dense_pushes, sparse_pushes, adds); !s.ok()) {
      return s;
    }
    return PullStep(dense_pulls, sparse_pulls);
  }
  // Without the variable's optimizer (TF's assign and assign_add on a
  // variable on parameter servers), on the ps tasks, atomically per part:
  // Assign sets every element of a float32 variable, Add adds to them, and
  // AssignInt64 sets an int64 variable's (AddInt64 adds). The optimizer's
  // slots and step do not change. INVALID_ARGUMENT naming the variable,
  // before anything is sent, for another dtype or a buffer of the wrong
  // size. A request sent again after a lost reply is applied once.
  virtual absl::Status Assign(const VariablePlacement& variable,
                              absl::Span<const float> values) = 0;
  virtual absl::Status Add(const VariablePlacement& variable,
                           absl::Span<const float> delta) = 0;
  virtual absl::Status AssignInt64(const VariablePlacement& variable,
                                   absl::Span<const int64_t> values) = 0;
  // int64 variables (e.g. the global step). AddInt64 is a fetch-and-add:
  // when `after` is not empty (then it holds every element) it receives the
  // values the add left, read atomically with it per part, in the same
  // round trip; a training step learns the new global step so, without a
  // pull of its own. (When a retry finds its add already applied, `after`
  // holds the values then, which include the add.)
  virtual absl::Status PullInt64(const VariablePlacement& variable,
                                 absl::Span<int64_t> out) = 0;
  virtual absl::Status AddInt64(const VariablePlacement& variable,
                                absl::Span<const int64_t> delta,
                                absl::Span<int64_t> after) = 0;
  // Without the values after. (An implementation brings it into scope with
  // `using ParameterServers::AddInt64;`.)
  absl::Status AddInt64(const VariablePlacement& variable,
                        absl::Span<const int64_t> delta) {
    return AddInt64(variable, delta, {});
  }

  // Rows by id; `out` / `grads` hold ids.size() rows, in the order of
  // `ids`. Gradients of a repeated id are summed and applied as one update.
  // INVALID_ARGUMENT naming the variable and the id for an id that is not
  // one of its rows.
  virtual absl::Status PullSparse(const VariablePlacement& variable,
                                  absl::Span<const int64_t> ids,
                                  absl::Span<float> out) = 0;
  virtual absl::Status PushSparse(const VariablePlacement& variable,
                                  absl::Span<const int64_t> ids,
                                  absl::Span<const float> grads) = 0;

  // Hash embedding tables: a shard on every ps task, ids spread by
  // HashShardOf(id, num_ps_tasks()). Repeated ids as in PullSparse.
  virtual absl::Status CreateHashTable(const HashEmbeddingSpec& spec) = 0;
  virtual absl::Status PullHash(const HashEmbeddingSpec& table,
                                absl::Span<const int64_t> ids,
                                absl::Span<float> out) = 0;
  virtual absl::Status PushHash(const HashEmbeddingSpec& table,
                                absl::Span<const int64_t> ids,
                                absl::Span<const float> grads) = 0;

  // Checkpoints (runtime/checkpoint/ps_checkpoint.h): every ps task writes
  // its shard of checkpoint `step` under `directory`, then one commits it
  // and keeps the newest `keep_last` (0: all). Errors name the directory
  // or the ps task; a failed save leaves earlier checkpoints as they were.
  virtual absl::StatusOr<CheckpointSaved> Save(const std::string& directory,
                                               int64_t step, int keep_last) = 0;
  // Restores every variable and hash table that exists on the ps tasks from
  // `directory` (a checkpoint, or a directory of them: the latest). First
  // every task verifies that it can, then every task loads, so a bad
  // checkpoint changes nothing anywhere.
  virtual absl::StatusOr<CheckpointRestored> Restore(
      const std::string& directory) = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_PARAMETER_SERVERS_H_
