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
//
// Memory: rows are numbered in the order they are created, and their values
// and each optimizer slot lie in "arenas" of fixed-size blocks (by default as
// many rows as make 4 MiB of values), so a row costs its floats plus 27-55
// bytes of index and step, not a heap allocation per array. Growing adds
// one block per arena: rows never move and are never held twice. Up to one
// block per arena is allocated ahead of the rows; bytes() leaves it out (its
// untouched pages are not resident either).

#include <cstdint>
#include <functional>
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
#include "runtime/ps/sparse_ids.h"
#include "runtime/util/huge_pages.h"

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

  struct Options {
    // Rows per block of every arena. 0 (the default) picks as many as make
    // 4 MiB of values, and at least 1: a fixed row count would make blocks of
    // wide rows enormous (16384 rows of dim 2^20 are 64 GiB). Tests shrink it
    // so that a few rows span several blocks.
    int64_t rows_per_block = 0;
  };
  // As above; also INVALID_ARGUMENT naming the table for rows_per_block
  // outside 0..2^24.
  static absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> Create(
      const HashEmbeddingSpec& spec, const Options& options);

  const HashEmbeddingSpec& spec() const { return spec_; }

  // Rows of `ids` into `out` (ids.size() * dim values), creating missing
  // rows. INVALID_ARGUMENT naming the table and both sizes on a size
  // mismatch.
  absl::Status Pull(absl::Span<const int64_t> ids, absl::Span<float> out);
  // Sums the gradients of repeated ids (unless `ids_are` says they are
  // distinct, see SparseIds), then applies the optimizer once per distinct
  // row, creating missing rows first.
  absl::Status Push(absl::Span<const int64_t> ids,
                    absl::Span<const float> grads,
                    SparseIds ids_are = SparseIds::kMayRepeat);

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
  // Memory of values and slots: in all (of the rows held, not counting the
  // blocks allocated ahead), and of one row (dim * 4 * (1 + slots)).
  int64_t bytes() const;
  int64_t bytes_per_row() const;

 private:
  // One array of dim floats per row (the values, or one optimizer slot), in
  // blocks of rows_per_block_ rows: row r starts at element
  // (r % rows_per_block_) * dim of block r / rows_per_block_. A block is
  // allocated when its first row is created and never moves, so a pointer
  // into a row stays valid while rows are added.
  // Blocks and the index come from AllocateForRandomAccess: on huge pages,
  // since rows are looked up and read at random.
  using Arena = std::vector<std::unique_ptr<float[], FreeRandomAccess>>;

  // The rows: each row's data at its row number in the arenas, and an index
  // from id to row number. Rows are only appended; Replace builds a new Rows
  // and swaps it in.
  struct Rows {
    // A uint32_t row number would pad to the same 16-byte slot.
    absl::flat_hash_map<
        int64_t, int64_t, absl::Hash<int64_t>, std::equal_to<int64_t>,
        RandomAccessAllocator<std::pair<const int64_t, int64_t>>>
        index;
    // [0]: the values; [1 + s]: slot s, in SlotNames order.
    std::vector<Arena> arenas;
    // Per row number: the pushes applied to the row. Its size is the number
    // of rows.
    std::vector<int64_t> steps;
  };

  HashEmbeddingTable(HashEmbeddingSpec spec, int64_t rows_per_block);
  absl::Status CheckSize(absl::string_view what, size_t ids,
                         size_t values) const;
  Rows EmptyRows() const;
  float* RowIn(Arena& arena, int64_t row) const;
  // Adds a row after the last, allocating a block in every arena when the
  // last ones are full, with step 0 and its data unset; returns its number.
  int64_t AppendRow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The row number of `id`, created from the initializer if missing.
  int64_t FindOrCreate(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const HashEmbeddingSpec spec_;
  const int64_t rows_per_block_;
  const std::vector<float> slot_initial_values_;  // SlotNames order

  mutable absl::Mutex mu_;
  Rows rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_HASH_EMBEDDING_TABLE_H_
