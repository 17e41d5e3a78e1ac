#ifndef DISTRT_RUNTIME_CHECKPOINT_PS_CHECKPOINT_H_
#define DISTRT_RUNTIME_CHECKPOINT_PS_CHECKPOINT_H_

// Checkpoints of what parameter servers hold: variables (or the row ranges
// of partitioned variables held here), hash-table rows, optimizer slots and
// step counts. docs/checkpoint_format.md describes the files for users;
// checkpoint_dir.h has the directory layout, shard_file.h the file format.
//
// A checkpoint is taken in two phases, driven by the chief:
//
//   every ps task:  SaveShard(step, i, n)  -> <root>/ckpt-<step>/shard-i-of-n
//   then one task:  CommitCheckpoint(step, n, keep_last)
//                     checks all n shards, appends ckpt-<step> to the index
//                     (<root>/checkpoints), deletes all but the newest
//                     keep_last listed checkpoints
//
// Only committed checkpoints are found from a root directory, so a save that
// crashed halfway is never restored by accident.
//
// RestoreShard is all or nothing: it reads and verifies everything it needs
// (headers, specs, every tensor's checksum, that every row held here is in
// the checkpoint) before it changes anything. It re-partitions: the
// checkpoint may have been written by any number of ps tasks holding any row
// ranges, and hash-table rows are redistributed by HashShardOf.
//
// Concurrency: SaveShard copies each variable and table under its lock, so
// each is consistent with respect to pushes, but different variables are
// copied at slightly different moments; for a checkpoint consistent across
// variables, pause pushes while saving. RestoreShard should run while no
// worker pushes: a push between verification and replacement is lost. Only
// one CommitCheckpoint at a time per root directory (it rewrites the index).
//
// Memory: saving copies everything it writes first (each copy is consistent
// and the file is written in one go); restoring holds everything it will
// swap in until all of it is verified. Either needs room for one extra copy
// of what this ps task holds.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/open_checkpoint.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/variable_store.h"

namespace distrt {

struct SavedShardInfo {
  std::string path;   // the shard file written
  int64_t bytes = 0;  // its size
  // Hash-table rows written (in a delta: rows changed plus ids removed) and
  // held, over the tables: what a chief weighs to decide when the deltas
  // since the last full save have grown too large.
  int64_t table_rows_written = 0;
  int64_t table_rows_held = 0;
};

// How SaveShard saves hash tables (docs/checkpoint_format.md, "Delta
// checkpoints").
struct SaveShardOptions {
  // Moves every table's save mark to the save (ExportAndMark): a ps task's
  // full save, which a delta may follow. Unset (a one-process model
  // checkpoint): Export, marks untouched.
  bool mark = false;
  // Set: a delta checkpoint holding, of each table, the rows changed and
  // the ids removed since its save mark (ExportChangesAndMark), which the
  // caller guarantees is checkpoint `delta->previous()` in the same root
  // directory; variables are saved whole. The mark moves even when the
  // save then fails: the caller must make its next save a full one.
  std::optional<ps::DeltaOf> delta;
};

// Writes every variable of `store` and every table of `tables` as shard
// `shard_index` of `num_shards` of the checkpoint of `step`:
// <root_dir>/ckpt-<step>/shard-<i>-of-<n>.ckpt, creating directories as
// needed and replacing an earlier file of that name atomically.
// INVALID_ARGUMENT for an empty root_dir, step < 0, num_shards < 1 or
// shard_index outside [0, num_shards); file-system errors name the path.
absl::StatusOr<SavedShardInfo> SaveShard(const VariableStore& store,
                                         const HashTableSet& tables,
                                         const std::string& root_dir,
                                         int64_t step, int shard_index,
                                         int num_shards);
// As above, with `options`; also INVALID_ARGUMENT for a delta whose
// previous or base is not a checkpoint directory name of an earlier step.
absl::StatusOr<SavedShardInfo> SaveShard(const VariableStore& store,
                                         const HashTableSet& tables,
                                         const std::string& root_dir,
                                         int64_t step, int shard_index,
                                         int num_shards,
                                         const SaveShardOptions& options);

struct CommitInfo {
  std::string checkpoint_dir;  // <root_dir>/ckpt-<step>
  // Checkpoint directories deleted because of keep_last.
  std::vector<std::string> deleted;
  // Old checkpoints that could not be deleted (one message each). The
  // commit itself succeeded; they stay in the index and the next commit
  // tries again.
  std::vector<std::string> cleanup_errors;
};

// Commits the checkpoint of `step`: checks that all `num_shards` shard files
// are there with headers that parse and agree (FAILED_PRECONDITION naming a
// missing shard or a shard file of another shard count, DATA_LOSS for a
// damaged header), then makes it the latest in the index (committing again
// is harmless: it is listed once, as the latest). With keep_last > 0, then
// deletes the listed checkpoints older than the newest keep_last (in commit
// order) but those that the chain of a kept delta checkpoint needs (its
// base and the deltas before it); directories not in the index are never
// touched. keep_last 0 keeps all. INVALID_ARGUMENT for an empty root_dir, step
// < 0, num_shards < 1 or keep_last < 0. Commit checks headers only:
// RestoreShard with verify_only checks every byte.
absl::StatusOr<CommitInfo> CommitCheckpoint(const std::string& root_dir,
                                            int64_t step, int num_shards,
                                            int keep_last);

struct RestoreInfo {
  std::string checkpoint_dir;  // the checkpoint used
  int64_t step = 0;            // the step it was saved at
  // Restored (or, with verify_only, verified and restorable).
  int64_t variables_restored = 0;
  int64_t hash_tables_restored = 0;
  int64_t hash_table_rows_restored = 0;
  // In the checkpoint but not here: ignored; the client decides what to
  // create before restoring.
  int64_t variables_not_here = 0;
  int64_t hash_tables_not_here = 0;
};

// Restores every variable of `store` and every table of `tables` from the
// checkpoint `dir` designates (a ckpt-<step> directory, or a root directory
// whose latest committed checkpoint is used: ResolveCheckpointDir).
//
//  * A delta checkpoint is restored as its chain (OpenChain): each table's
//    rows are those of the base full save, then each delta's changed rows
//    replace or add rows and its removed ids drop them, in order; the
//    variables are the delta's own (saved whole). A chain member missing or
//    damaged is DATA_LOSS naming it. Afterwards every table's save mark is
//    set (MarkSaved): a delta may follow the restored checkpoint.
//  * All shard files shard-*-of-N must be there and agree on N and the step.
//  * Each variable here must be in the checkpoint (NOT_FOUND naming it) with
//    the same spec (FAILED_PRECONDITION naming it and what differs, e.g.
//    "shape [10, 4] vs [10, 8] (checkpoint vs here)"). Its rows held here are
//    assembled from the saved parts that overlap them, whatever rows those
//    hold; a row missing from the checkpoint is DATA_LOSS. Its step becomes
//    the largest step of those parts (see the .cc for why).
//  * Each table here must be in the checkpoint with the same spec, but for
//    its policy (admission and eviction may change between runs: the table
//    keeps its own and applies it to the rows restored). It gets exactly the
//    saved rows with HashShardOf(id, num_shards) == shard_index (all rows
//    it had before are dropped), each with its step and last-updated step,
//    so that eviction carries on where it was; a checkpoint written before
//    rows had last-updated steps gives every row the checkpoint's step. The
//    table's clock becomes the checkpoint's step, or the largest
//    last-updated step in the checkpoint if later.
//  * Any checksum mismatch, truncation or inconsistency is DATA_LOSS naming
//    the file and the tensor.
//
// On any error nothing has changed. With verify_only, nothing changes
// either: everything is read and checked, and the counts are what a restore
// would restore. INVALID_ARGUMENT for num_shards < 1 or shard_index outside
// [0, num_shards).
absl::StatusOr<RestoreInfo> RestoreShard(VariableStore& store,
                                         HashTableSet& tables,
                                         const std::string& dir,
                                         int shard_index, int num_shards,
                                         bool verify_only);

// Of hash table `spec.name`, the rows that checkpoint chain `chain` (as
// OpenChain gives it: the base full save first, the checkpoint last) holds
// for shard `shard_index` of `num_shards` (0 of 1: every row), as
// RestoreShard applies a chain: the base's rows (none when the base lacks
// the table), then each delta's changed rows replacing or adding rows and
// its removed ids dropping them, in order. Rows come in no particular
// order; the clock is as RestoreShard sets it. Every tensor read is
// verified (DATA_LOSS naming the file); each saved part must have `spec`
// but for the policy (FAILED_PRECONDITION naming what differs). With
// read_slots false, optimizer slots are neither read nor returned
// (`slots` is empty): for readers that want values only. NOT_FOUND when the
// chain's last checkpoint does not hold the table; INVALID_ARGUMENT for an
// empty chain or a shard outside [0, num_shards). Memory: the rows read,
// one saved part at a time, plus an id-to-row map for a delta's chain.
absl::StatusOr<HashTableState> ReadChainTable(
    const HashEmbeddingSpec& spec, const std::vector<OpenCheckpoint>& chain,
    int shard_index, int num_shards, bool read_slots);

// For a ps task that restarted and lost what it held: re-creates, in an
// empty `store` and `tables`, every variable part and hash table that shard
// `shard_index` of `num_shards` of the checkpoint `dir` designates holds
// (same specs and row ranges), then restores them as RestoreShard does. The
// task then holds what it held when the checkpoint was taken.
// FAILED_PRECONDITION when the checkpoint was saved by another number of ps
// tasks, or when `store` or `tables` is not empty; RestoreShard's errors
// otherwise. On error, what was created stays (at initial values): the
// caller should not serve from it.
absl::StatusOr<RestoreInfo> RecreateShard(VariableStore& store,
                                          HashTableSet& tables,
                                          const std::string& dir,
                                          int shard_index, int num_shards);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CHECKPOINT_PS_CHECKPOINT_H_
