#ifndef DISTRT_RUNTIME_PS_HASH_EMBEDDING_TABLE_H_
#define DISTRT_RUNTIME_PS_HASH_EMBEDDING_TABLE_H_

// HashEmbeddingTable: an embedding whose rows are keyed by any int64 id and
// created on first use from the table's initializer, so the id space is
// unbounded (hashed feature crosses, user ids) — what TensorFlow
// Recommenders-Addons' dynamic embedding offers and TensorFlow lacks.
//
// A row's initial values depend only on (seed, id), so every ps task, and
// every run, creates the same row for the same id. Each row keeps its own
// optimizer slots. Thread-safe; each pull or push is atomic.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/initializer.h"

namespace distrt {

struct HashEmbeddingSpec {
  std::string name;
  int64_t dim = 0;  // values per row
  InitializerSpec initializer;
  OptimizerConfig optimizer;
};

// Rows of a table (all the rows this ps task holds of it), one after another:
// what a checkpoint saves and restores.
struct HashTableState {
  std::vector<int64_t> ids;               // distinct
  std::vector<float> values;              // ids.size() * dim
  std::vector<std::vector<float>> slots;  // SlotNames order, each as values
  std::vector<int64_t> steps;             // per row: pushes applied to it
};

class HashEmbeddingTable {
 public:
  // INVALID_ARGUMENT naming the table for a bad spec (dim < 1 or > 2^20,
  // invalid initializer or optimizer).
  static absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> Create(
      const HashEmbeddingSpec& spec);

  const HashEmbeddingSpec& spec() const { return spec_; }

  // Rows of `ids` into `out` (ids.size() * dim values), creating missing
  // rows. INVALID_ARGUMENT naming the table and both sizes on a size
  // mismatch.
  absl::Status Pull(absl::Span<const int64_t> ids, absl::Span<float> out);
  // Sums the gradients of repeated ids, then applies the optimizer once per
  // distinct row, creating missing rows first.
  absl::Status Push(absl::Span<const int64_t> ids,
                    absl::Span<const float> grads);

  // A copy of every row, in ascending id order so that files written from it
  // are deterministic. Consistent: copied under the table's lock, so each
  // push is in it entirely or not at all.
  HashTableState Export() const;
  // Replaces ALL rows with those of `state` (ids in any order); rows not in
  // it are dropped. Atomic with respect to pulls and pushes. INVALID_ARGUMENT
  // naming the table when a size disagrees with the number of ids, dim or the
  // optimizer's slots (both sizes), or an id repeats, or a step is negative;
  // the table is then unchanged.
  absl::Status Replace(HashTableState state);

  int64_t num_rows() const;
  // Memory of values and slots: in all, and of one row.
  int64_t bytes() const;
  int64_t bytes_per_row() const;

 private:
  struct Row {
    std::vector<float> values;
    std::vector<std::vector<float>> slots;
    int64_t step = 0;
  };

  explicit HashEmbeddingTable(HashEmbeddingSpec spec)
      : spec_(std::move(spec)) {}
  absl::Status CheckSize(absl::string_view what, size_t ids,
                         size_t values) const;
  Row& FindOrCreate(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const HashEmbeddingSpec spec_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, Row> rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_HASH_EMBEDDING_TABLE_H_
