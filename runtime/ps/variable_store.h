#ifndef DISTRT_RUNTIME_PS_VARIABLE_STORE_H_
#define DISTRT_RUNTIME_PS_VARIABLE_STORE_H_

// VariableStore: the variables (or row ranges of partitioned variables) that
// one parameter server holds, with their optimizer slots, and the dense and
// sparse pulls and pushes that workers make on them.
//
// Thread-safe. Each variable has its own lock, so pushes to different
// variables proceed in parallel, and every push is applied atomically: a
// concurrent pull sees the variable before or after it, and no update is
// lost. Transport-free: the RPC layer decodes requests into these calls.

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "runtime/ps/sparse_ids.h"
#include "runtime/ps/variable_spec.h"

namespace distrt {

struct VariableInfo {
  VariableSpec spec;
  RowRange rows_held;  // of the whole variable
  int64_t bytes = 0;   // values and slots
  int64_t step = 0;    // pushes applied so far
};

// Everything that changes in one variable (or its rows held here): what a
// checkpoint saves and restores. Sizes are those of the rows held.
struct VariableState {
  int64_t step = 0;           // pushes applied so far
  std::vector<float> values;  // float32 variables: rows * row width
  std::vector<int64_t> ints;  // int64 variables: rows * row width
  // float32 only: the optimizer's slots in SlotNames order, each the size of
  // `values`.
  std::vector<std::vector<float>> slots;
};

// INVALID_ARGUMENT naming the variable and both ranges unless `rows` is a
// range (begin <= end) within `held`.
absl::Status CheckRowsHeld(const VariableSpec& spec, RowRange held,
                           RowRange rows);

class VariableStore {
 public:
  struct Options {
    // Memory for values and slots across all variables; a create that would
    // exceed it is refused with RESOURCE_EXHAUSTED before allocating.
    int64_t max_bytes = int64_t{64} << 30;
  };

  explicit VariableStore(Options options) : options_(options) {}
  VariableStore() : VariableStore(Options()) {}

  // Creates the rows `rows` of `spec` here, initialised. Asking again with
  // the same spec and rows returns the existing variable unchanged (every
  // worker may ask); with a different spec or rows: ALREADY_EXISTS saying
  // what differs.
  absl::StatusOr<VariableInfo> Create(const VariableSpec& spec, RowRange rows);

  // NOT_FOUND naming the variable when it is not here.
  absl::StatusOr<VariableInfo> Lookup(absl::string_view name) const;
  // Sorted by name.
  std::vector<VariableInfo> List() const;

  // Dense access to float32 variables, `rows` in whole-variable coordinates
  // and within the rows held; `out` / `grad` hold rows.size() * width values.
  absl::Status PullRows(absl::string_view name, RowRange rows,
                        absl::Span<float> out) const;
  // Applies the variable's optimizer to the rows with gradient `grad`.
  absl::Status PushRows(absl::string_view name, RowRange rows,
                        absl::Span<const float> grad);
  // The same with the gradient's float32 bytes in pieces, one after the
  // other, of any length and alignment (a received message's slices): they
  // are read once, through a buffer that stays in cache, and applied as they
  // are read, so a pushed gradient is never copied whole.
  absl::Status PushRows(absl::string_view name, RowRange rows,
                        absl::Span<const absl::Span<const char>> grad_bytes);

  // Without the optimizer (TF's assign and assign_add on a variable on
  // parameter servers): sets the rows of a float32 variable to `values`,
  // adds `delta` to them, or sets the rows of an int64 variable. Atomic
  // like a push; the optimizer's slots and step do not change.
  absl::Status AssignRows(absl::string_view name, RowRange rows,
                          absl::Span<const float> values);
  absl::Status AddRows(absl::string_view name, RowRange rows,
                       absl::Span<const float> delta);
  absl::Status AssignInt64(absl::string_view name, RowRange rows,
                           absl::Span<const int64_t> values);

  // int64 variables (e.g. the global step): pull, and add `delta`. When
  // `after` is not empty (then it holds delta.size() elements) it receives
  // the values the add left, read under the same lock: a fetch-and-add,
  // which saves the caller a pull.
  absl::Status PullInt64(absl::string_view name, RowRange rows,
                         absl::Span<int64_t> out) const;
  absl::Status AddInt64(absl::string_view name, RowRange rows,
                        absl::Span<const int64_t> delta,
                        absl::Span<int64_t> after = {});

  // Sparse access by row id (whole-variable coordinates, each within the
  // rows held): `out` / `grads` hold ids.size() rows. Gradients of repeated
  // ids are summed and the optimizer is applied once per distinct row,
  // unless `ids` says they are distinct (see SparseIds).
  absl::Status PullSparse(absl::string_view name, absl::Span<const int64_t> ids,
                          absl::Span<float> out) const;
  absl::Status PushSparse(absl::string_view name, absl::Span<const int64_t> ids,
                          absl::Span<const float> grads,
                          SparseIds ids_are = SparseIds::kMayRepeat);

  // A copy of the variable's state, taken under its lock: consistent with
  // respect to pushes (each is in it entirely or not at all). NOT_FOUND
  // naming the variable when it is not here.
  absl::StatusOr<VariableState> Snapshot(absl::string_view name) const;
  // Swaps `state` in, atomically with respect to pulls and pushes. Sizes
  // must be exactly those of the rows held (values or ints by dtype, the
  // optimizer's number of slots, each slot as large as the values) and the
  // step non-negative; otherwise INVALID_ARGUMENT naming the variable and
  // both sizes, and the variable is unchanged.
  absl::Status Replace(absl::string_view name, VariableState state);

  int64_t TotalBytes() const;

 private:
  struct Variable;

  absl::StatusOr<std::shared_ptr<Variable>> Find(absl::string_view name) const;
  static VariableInfo InfoOf(const Variable& variable);
  // What a request addresses: a range of rows, or rows by id.
  using Access = std::variant<RowRange, absl::Span<const int64_t>>;
  // The variable `name`, after checking that it has `dtype`, holds what
  // `access` addresses, and that the request's buffer `what` has `values`
  // values for it. Errors name the variable and both sizes.
  absl::StatusOr<std::shared_ptr<Variable>> FindChecked(absl::string_view name,
                                                        DType dtype,
                                                        const Access& access,
                                                        absl::string_view what,
                                                        size_t values) const;

  const Options options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Variable>> variables_
      ABSL_GUARDED_BY(mu_);
  int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_VARIABLE_STORE_H_
