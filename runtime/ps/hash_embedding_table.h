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
// The spec's TablePolicy bounds the rows: admission decides at a pull
// whether an id without a row gets one (until then it reads the unknown row
// and its pushes are dropped); eviction removes rows past the TTL or over
// max_rows. Eviction is a sweep over the rows, a bounded stretch of it at
// the end of each pull and push (at least 8192 visits or evictions, and 8
// per row the call touched), so no call stops the table for a pass over all
// of it. A table swept whole by one call (up to 4096 rows, with those the
// call adds) holds exactly what the policy says after each call; a larger one
// reaches it within one sweep, and never holds more than max_rows + max(4096,
// max_rows / 16) rows (past that, new ids are treated as not admitted).
//
// Memory: rows are numbered in the order they are created, and their values
// and each optimizer slot lie in "arenas" of fixed-size blocks (by default as
// many rows as make 4 MiB of values), so a row costs its floats plus 40-60
// bytes of index (19-39: a hash map 44-87% full), id, step, last update and
// changed bit (20 and 1 bit, in blocks too), not a heap allocation per
// array.
// Growing adds one block per arena: rows are never held twice. Eviction
// moves the last row into the evicted one's place and frees blocks the rows
// no longer reach, but one. Up to one block per arena is allocated ahead of
// the rows; bytes() leaves it out (its untouched pages are not resident
// either).

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/admission_sketch.h"
#include "runtime/ps/initializer.h"
#include "runtime/ps/sparse_ids.h"
#include "runtime/ps/table_policy.h"
#include "runtime/util/block_vector.h"
#include "runtime/util/huge_pages.h"

namespace distrt {

struct HashEmbeddingSpec {
  std::string name;
  int64_t dim = 0;  // values per row
  InitializerSpec initializer;
  OptimizerConfig optimizer;
  TablePolicy policy;  // admission and eviction
};

// Rows of a table (all the rows this ps task holds of it), one after another:
// what a checkpoint saves and restores.
struct HashTableState {
  std::vector<int64_t> ids;               // distinct
  std::vector<float> values;              // ids.size() * dim
  std::vector<std::vector<float>> slots;  // SlotNames order, each as values
  std::vector<int64_t> steps;             // per row: pushes applied to it
  // Per row: the global step of its last update (or of its creation). Empty
  // in Replace: every row at `clock`.
  std::vector<int64_t> last_updated;
  // The table's global step (the latest a push reported).
  int64_t clock = 0;
};

// What changed in a table since its last save mark (SaveKind below): the
// rows created or updated since, whole, and the ids removed since (evicted,
// or dropped by Replace) that it does not hold now. What a delta checkpoint
// saves of a table.
struct HashTableDelta {
  HashTableState changed;        // ascending ids, as Export
  std::vector<int64_t> removed;  // ascending, none of them in `changed`
};

// What a table has done since it was created (or restored: Replace keeps
// them), for metrics and `distctl stats`.
struct HashTableCounters {
  int64_t rows = 0;                 // held now
  int64_t admitted = 0;             // rows created (on first use, admitted)
  int64_t evicted_by_ttl = 0;       // rows evicted for age
  int64_t evicted_by_capacity = 0;  // rows evicted for max_rows
  // Pulled ids that had no row and were not admitted (each got the unknown
  // row), and pushed ids dropped for having no row.
  int64_t unknown_lookups = 0;
  int64_t dropped_pushes = 0;
  int64_t clock = 0;  // the table's global step
};

// What a lookup of an id without a row gets (dim floats): zeros, or under
// UnknownRow::kSharedRow the initializer's values for a reserved index, the
// same on every ps task and in every run (`distctl export` writes it too).
std::vector<float> UnknownRowValues(const HashEmbeddingSpec& spec);

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
  // rows that the admission policy admits; the others read the unknown row.
  // INVALID_ARGUMENT naming the table and both sizes on a size mismatch.
  absl::Status Pull(absl::Span<const int64_t> ids, absl::Span<float> out);
  // Sums the gradients of repeated ids (unless `ids_are` says they are
  // distinct, see SparseIds), then applies the optimizer once per distinct
  // row, creating missing rows first when the policy admits every id (else
  // the gradients of ids without a row are dropped, and counted).
  // `global_step`: the global step the pushing worker knows (the table's
  // clock becomes the largest seen; rows updated get it as last_updated);
  // -1: unknown, the clock advances by one.
  absl::Status Push(absl::Span<const int64_t> ids,
                    absl::Span<const float> grads,
                    SparseIds ids_are = SparseIds::kMayRepeat,
                    int64_t global_step = -1);

  // A copy of every row, in ascending id order so that files written from it
  // are deterministic. Consistent: copied under the table's lock, so each
  // push is in it entirely or not at all.
  HashTableState Export() const;
  // As Export, and sets the save mark at the same instant (under the lock):
  // what a full checkpoint saves. The mark is what ExportChangesAndMark
  // reports changes since.
  HashTableState ExportAndMark();
  // The rows changed and ids removed since the save mark, and moves the mark
  // to now, atomically: what a delta checkpoint saves. A caller whose save
  // of it then fails has lost those changes from the next delta: it must
  // make the next save a full one.
  HashTableDelta ExportChangesAndMark();
  // Replaces ALL rows with those of `state` (ids in any order); rows not in
  // it are dropped (and count as removed since the save mark; the restored
  // rows count as changed, so a delta after a restore holds them all unless
  // the caller marks the table saved: MarkSaved). Atomic with respect to
  // pulls and pushes. INVALID_ARGUMENT
  // naming the table when a size disagrees with the number of ids, dim or the
  // optimizer's slots (both sizes), or an id repeats, or a step is negative;
  // the table is then unchanged.
  absl::Status Replace(HashTableState state);

  // Sets the save mark without exporting: after a restore from a checkpoint
  // whose state the table now holds.
  void MarkSaved();

  int64_t num_rows() const;
  HashTableCounters counters() const;
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
  // from id to row number. Rows are appended; an evicted row's number is
  // taken by the last row (its data copied), so row numbers stay dense.
  // Replace builds a new Rows and swaps it in.
  struct Rows {
    // A uint32_t row number would pad to the same 16-byte slot.
    absl::flat_hash_map<
        int64_t, int64_t, absl::Hash<int64_t>, std::equal_to<int64_t>,
        RandomAccessAllocator<std::pair<const int64_t, int64_t>>>
        index;
    // [0]: the values; [1 + s]: slot s, in SlotNames order.
    std::vector<Arena> arenas;
    // Per row number: its id, the pushes applied to it, and the global step
    // of its last update. Their size is the number of rows.
    // In blocks rather than std::vectors: a doubling vector would hold up
    // to twice these bytes. Steps saturate at 2^32 - 1 (Adam's bias
    // correction is 1 long before).
    BlockVector<int64_t> ids;
    BlockVector<uint32_t> steps;
    BlockVector<int64_t> last_updated;
    // Per row number: created or updated since the save mark; held when
    // the mark was set (so its eviction goes in the next delta).
    std::vector<bool> changed;
    std::vector<bool> held_at_mark;
  };

  // Eviction's progress through the rows: a sweep visits row numbers in
  // order, a bounded number per pull or push, and evicts what the policy
  // says. Its cut-offs are fixed when it starts at row 0.
  struct Sweep {
    bool started = false;  // the cut-offs are set
    int64_t next = 0;      // the next row number to visit
    // Rows updated at a step below `capacity_step` go for max_rows, and up
    // to `capacity_ties` of those updated at it; INT64_MIN: none.
    int64_t capacity_step = 0;
    int64_t capacity_ties = 0;
  };

  HashEmbeddingTable(HashEmbeddingSpec spec, int64_t rows_per_block);
  absl::Status CheckSize(absl::string_view what, size_t ids,
                         size_t values) const;
  Rows EmptyRows() const;
  float* RowIn(const Arena& arena, int64_t row) const;
  // Adds a row for `id` after the last, allocating a block in every arena
  // when the last ones are full, with step 0, updated now, and its data
  // unset; returns its number.
  int64_t AppendRow(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A new row of `id` from the initializer.
  int64_t CreateRow(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The row number of `id`; a missing one is created when `admit` (the
  // policy admits it, and the table is below its hard ceiling), else -1.
  int64_t FindOrAdmit(int64_t id, bool admit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a pull admits `id`, which has no row (counting it for
  // min_count).
  bool AdmitOnPull(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool BelowCeiling() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `row` updated at the clock.
  void Touch(int64_t row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes `row`: the last row takes its number.
  void EvictRow(int64_t row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Visits up to `budget` rows of the sweep, evicting those the policy
  // says, then frees blocks the rows no longer reach.
  void SweepSome(int64_t budget) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartSweep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the sweep evicts `row`, counting it.
  bool ShouldEvict(int64_t row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseSpareBlocks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rows (those marked changed only, when `changed_only`) copied in
  // row order; sorted by SortById.
  HashTableState CopyRows(bool changed_only) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ClearChangedMarks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A pull's or push's row numbers (-1: none) into `rows`.
  void FindRows(absl::Span<const int64_t> ids, bool on_pull,
                std::vector<int64_t>& rows) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const HashEmbeddingSpec spec_;
  const int64_t rows_per_block_;
  const std::vector<float> slot_initial_values_;  // SlotNames order
  // What a lookup of an id without a row gets (dim floats).
  const std::vector<float> unknown_row_;

  mutable absl::Mutex mu_;
  Rows rows_ ABSL_GUARDED_BY(mu_);
  Sweep sweep_ ABSL_GUARDED_BY(mu_);
  int64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
  HashTableCounters counters_ ABSL_GUARDED_BY(mu_);
  // Ids of rows held at the save mark and removed since (some may have rows
  // again): at most the rows held at the mark.
  std::vector<int64_t> removed_since_mark_ ABSL_GUARDED_BY(mu_);
  // kMinCount: the sightings of ids without a row.
  std::unique_ptr<AdmissionSketch> sketch_ ABSL_GUARDED_BY(mu_);
  // kProbability: the draws, seeded from the table's name so that a run
  // repeats.
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_);
  // The samples of StartSweep, apart so that eviction does not change which
  // ids kProbability admits.
  std::mt19937_64 sweep_random_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_HASH_EMBEDDING_TABLE_H_
