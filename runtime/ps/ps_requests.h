#ifndef DISTRT_RUNTIME_PS_PS_REQUESTS_H_
#define DISTRT_RUNTIME_PS_PS_REQUESTS_H_

// The requests of ParameterServers (parameter_servers.h): what to create,
// what to read and what to update, each as one object, so that a training
// step hands its reads or its updates over together and the implementation
// decides how they travel.
//
// Ownership: a request borrows everything it points to (placements, specs,
// the item lists, ids, values and output buffers) for the duration of the
// call that takes it, and keeps nothing afterwards. Output buffers are
// written only by that call.
//
// Checked before anything is sent or applied, for every item of a request
// (and of an UpdateRequest's then_read): the variable's dtype and the size
// of each buffer (all the variable's elements for a whole-variable item,
// ids.size() rows for an item by id); a mistake is INVALID_ARGUMENT naming
// the variable or hash table. An id that is not a row of its variable is
// INVALID_ARGUMENT naming the variable and the id, also before anything of
// that variable is sent. Any other failure (a ps task that cannot be
// reached, a table that does not exist) is reported when it happens; what
// the rest of the request applied or read is then unspecified.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"

namespace distrt {

// ParameterServers::CreateVariable: places `spec` on the ps tasks and
// creates its parts there.
struct CreateVariableRequest {
  VariableSpec spec;
  // How the variable's rows are split over ps tasks; default unpartitioned
  // (ignored with colocate_with).
  PartitionPolicy partition;
  // When set, the variable is created unpartitioned on the ps task holding
  // the first rows of this existing variable (TF's colocate_vars_with),
  // e.g. an optimizer's state beside its variable; NOT_FOUND when it does
  // not exist. Later variables are placed as if this one were not there.
  std::optional<std::string> colocate_with;
};

// ---- Reads -------------------------------------------------------------

// All the elements of a float32 variable, its rows in order.
struct DenseVariablePull {
  const VariablePlacement* variable;
  absl::Span<float> out;
};
// Rows of a float32 variable by id: `out` holds ids.size() rows, in the
// order of `ids` (a repeated id gets its row at each position).
struct SparseVariablePull {
  const VariablePlacement* variable;
  absl::Span<const int64_t> ids;
  absl::Span<float> out;
};
// All the elements of an int64 variable (e.g. the global step).
struct Int64VariablePull {
  const VariablePlacement* variable;
  absl::Span<int64_t> out;
};
// Rows of a hash embedding table by id (ids.size() rows of table->dim);
// an id not yet in the table reads its initial value.
struct HashTablePull {
  const HashEmbeddingSpec* table;
  absl::Span<const int64_t> ids;
  absl::Span<float> out;
};

// ParameterServers::Read: everything a step (or a tool) reads at once. An
// empty request sends nothing.
struct ReadRequest {
  absl::Span<const DenseVariablePull> dense;
  absl::Span<const SparseVariablePull> sparse;
  absl::Span<const Int64VariablePull> int64;
  absl::Span<const HashTablePull> hash;

  bool empty() const {
    return dense.empty() && sparse.empty() && int64.empty() && hash.empty();
  }
};

// ---- Updates -----------------------------------------------------------

// A gradient of all the elements of a float32 variable, applied by the
// variable's optimizer on the ps tasks, atomically per part.
struct DenseVariablePush {
  const VariablePlacement* variable;
  absl::Span<const float> grad;
};
// Gradients of rows of a float32 variable by id (ids.size() rows); those
// of a repeated id are summed and applied as one update.
struct SparseVariablePush {
  const VariablePlacement* variable;
  absl::Span<const int64_t> ids;
  absl::Span<const float> grads;
};
// Gradients of rows of a hash embedding table by id, as SparseVariablePush.
struct HashTablePush {
  const HashEmbeddingSpec* table;
  absl::Span<const int64_t> ids;
  absl::Span<const float> grads;
};
// A write without the variable's optimizer (TF's assign and assign_add on
// a variable on parameter servers): its slots and step do not change.
enum class VariableWrite { kAssign, kAdd };
// Sets (kAssign) or adds to (kAdd) every element of a float32 variable,
// atomically per part.
struct DenseVariableWrite {
  const VariablePlacement* variable;
  VariableWrite write;
  absl::Span<const float> values;
};
// Sets every element of an int64 variable, atomically per part.
struct Int64VariableAssign {
  const VariablePlacement* variable;
  absl::Span<const int64_t> values;
};
// A fetch-and-add to an int64 variable (e.g. the global step's increment,
// which goes with the step's gradients). When `after` is not empty (then it
// holds every element) it receives the values the add left, read
// atomically with it per part, in the same round trip; a training step
// learns the new global step so, without a read of its own. (When a retry
// finds its add already applied, `after` holds the values then, which
// include the add.)
struct Int64VariableAdd {
  const VariablePlacement* variable;
  absl::Span<const int64_t> delta;
  absl::Span<int64_t> after;
};

// ParameterServers::Update: everything a step (or a tool) updates at once,
// and optionally what it reads next. Every update is applied once, even
// when a request is sent again after a lost reply. No order is promised
// among the items of one request: a caller that needs one update applied
// before another makes two calls. An empty request sends nothing.
struct UpdateRequest {
  // Optimizer gradients.
  absl::Span<const DenseVariablePush> dense;
  absl::Span<const SparseVariablePush> sparse;
  absl::Span<const HashTablePush> hash;
  // Writes without the optimizer.
  absl::Span<const DenseVariableWrite> writes;
  absl::Span<const Int64VariableAssign> int64_assigns;
  absl::Span<const Int64VariableAdd> int64_adds;
  // Reads made after the updates were sent: a step's updates and the next
  // step's reads in one call (see ParameterServers::Update for what they
  // see). Null: no reads.
  const ReadRequest* then_read = nullptr;
  // The global step the sender knows (a training step's, before its own
  // increment); hash tables age their rows by it (TablePolicy's ttl_steps).
  // -1: unknown.
  int64_t global_step = -1;

  bool empty() const {
    return dense.empty() && sparse.empty() && hash.empty() && writes.empty() &&
           int64_assigns.empty() && int64_adds.empty() &&
           (then_read == nullptr || then_read->empty());
  }
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_PS_REQUESTS_H_
