#ifndef DISTRT_RUNTIME_EXPORT_CHECKPOINT_READER_H_
#define DISTRT_RUNTIME_EXPORT_CHECKPOINT_READER_H_

// CheckpointReader: a committed checkpoint read as the model it holds,
// whatever number of ps tasks wrote it: each variable whole (its row ranges
// from every shard file, in row order) and each hash table whole (its rows
// from every shard file, merged in id order). For tools that take a trained
// model out of the runtime (distctl export); ps tasks restore with
// RestoreShard (runtime/checkpoint/ps_checkpoint.h) instead.
//
// A delta checkpoint (docs/checkpoint_format.md, "Delta checkpoints") is
// read as its chain, as a restore reads it (OpenChain, ReadChainTable): a
// table's rows are the base full save's, then each delta's changed rows
// upserted and its removed ids dropped, in order; variables are the
// delta's own (saved whole in every delta).
//
// Only what it hands out is read: values, and hash-table ids (and, in a
// delta's chain, row steps and removed ids). Optimizer slots and the rest
// of the row metadata stay on disk unread (and so unverified). What is read
// is checked as RestoreShard checks it: every shard file present (of every
// chain member), the headers agreeing, every tensor's length, bounds and
// CRC32C, every row of a variable saved exactly once, every id of a table
// saved once per checkpoint. Errors are DATA_LOSS naming the file and the
// variable or table for damage, or naming a chain member that is missing
// or damaged and the checkpoint that needs it; NOT_FOUND or
// FAILED_PRECONDITION naming the path for a checkpoint that is not there or
// not committed.
//
// Memory: the shard headers (of the whole chain); ReadVariable holds one
// saved part at a time, ReadTable one table (the ids and values of all its
// saved parts) plus a small buffer; for a delta, the table's rows with
// their steps and an id-to-row map while the chain is applied, then an
// order by id. Thread-compatible: const methods may run concurrently.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/checkpoint/open_checkpoint.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/variable_spec.h"

namespace distrt {

// The checkpoint directory (ckpt-<step>) that `dir` designates, checked to
// be committed:
//  * a root directory (holding the index `checkpoints`): its latest
//    committed checkpoint; NOT_FOUND naming `dir` when the index lists none
//    or the directory it names is gone;
//  * a ckpt-<step> directory (holding shard files): itself, when the index
//    of its parent lists it; FAILED_PRECONDITION naming it otherwise (a save
//    that did not finish, or was never committed), unless allow_uncommitted.
// NOT_FOUND naming `dir` when it does not exist or holds neither;
// FAILED_PRECONDITION when it is not a directory; INVALID_ARGUMENT when
// empty.
absl::StatusOr<std::string> ResolveCommittedCheckpoint(const std::string& dir,
                                                       bool allow_uncommitted);

// What the checkpoint holds of one variable: its spec and the saved parts
// (one per shard file that holds some of its rows).
struct SavedVariableInfo {
  VariableSpec spec;
  int num_parts = 0;
};

// One hash table: its spec and the rows its parts in the checkpoint's
// shard files hold: the table's rows for a full checkpoint, only the rows
// changed since the previous save for a delta (ReadTable's `start` gives
// the table's).
struct SavedTableInfo {
  HashEmbeddingSpec spec;
  int64_t num_rows = 0;
  int num_parts = 0;
};

class CheckpointReader {
 public:
  // Opens the checkpoint `dir` designates (ResolveCommittedCheckpoint), all
  // its shard files, and checks their headers: all shard-*-of-N present,
  // agreeing on N and the step; every spec valid; the parts of a variable
  // or table agreeing on its spec, every row of a variable saved exactly
  // once (DATA_LOSS naming the checkpoint, the variable and the rows). A
  // delta checkpoint opens its whole chain (OpenChain's errors: DATA_LOSS
  // naming a chain member missing or damaged).
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> Open(
      const std::string& dir, bool allow_uncommitted);

  const std::string& dir() const { return dir_; }  // the ckpt-<step> used
  int64_t step() const { return step_; }
  int num_shards() const {
    return static_cast<int>(chain_.back().shards.size());
  }
  // The checkpoints read, oldest first: the base full save and the deltas
  // up to dir() for a delta checkpoint, dir() alone for a full one.
  std::vector<std::string> chain() const;
  bool is_delta() const { return chain_.size() > 1; }
  // By name, in name order.
  const std::vector<SavedVariableInfo>& variables() const { return variables_; }
  const std::vector<SavedTableInfo>& tables() const { return tables_; }

  // A piece of a variable, in row order: rows [rows.begin, rows.end) of the
  // whole variable, as float32 `values` or int64 `ints` (the other empty),
  // RowWidth elements per row.
  struct VariableRows {
    RowRange rows;
    absl::Span<const float> values;
    absl::Span<const int64_t> ints;
  };
  // Passes every row of variable `name` to `consume` in row order, one
  // saved part at a time (Open has checked that each row is saved exactly
  // once). NOT_FOUND for a name not in variables(); UNIMPLEMENTED for a
  // dtype other than float32 and int64; `consume`'s error stops it.
  absl::Status ReadVariable(
      const std::string& name,
      const std::function<absl::Status(const VariableRows&)>& consume) const;

  // Passes every row of table `name` to `consume`, in ascending id order,
  // in batches: ids and their values (dim per id). DATA_LOSS naming the
  // table, the id and the files for an id saved twice; NOT_FOUND for a name
  // not in tables(); `consume`'s error stops it.
  absl::Status ReadTable(
      const std::string& name,
      const std::function<absl::Status(absl::Span<const int64_t> ids,
                                       absl::Span<const float> values)>&
          consume) const;
  // As above, calling `start` first, once, with the number of rows the
  // table has (for a delta, known only once its chain is applied); its
  // error stops it.
  absl::Status ReadTable(
      const std::string& name,
      const std::function<absl::Status(int64_t rows)>& start,
      const std::function<absl::Status(absl::Span<const int64_t> ids,
                                       absl::Span<const float> values)>&
          consume) const;

 private:
  // A saved part of a variable or table: where it is in which file.
  struct Part {
    const ShardFileReader* file = nullptr;
    const ps::SavedVariable* saved = nullptr;
    RowRange rows;
  };
  struct TablePart {
    const ShardFileReader* file = nullptr;
    const ps::SavedHashTable* saved = nullptr;
  };

  CheckpointReader() = default;
  // Fills variables_, tables_ and their parts from the shards' headers,
  // checking them.
  absl::Status IndexHeaders();

  std::string dir_;
  int64_t step_ = 0;
  // The checkpoints read, base first; dir_ last.
  std::vector<OpenCheckpoint> chain_;
  std::vector<SavedVariableInfo> variables_;
  std::vector<SavedTableInfo> tables_;
  // Per variable and table (same order as above): the saved parts.
  std::vector<std::vector<Part>> variable_parts_;
  std::vector<std::vector<TablePart>> table_parts_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_EXPORT_CHECKPOINT_READER_H_
