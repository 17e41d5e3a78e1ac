#include "runtime/checkpoint/ps_checkpoint.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/open_checkpoint.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

template <typename T>
absl::string_view AsBytes(const std::vector<T>& v) {
  return absl::string_view(reinterpret_cast<const char*>(v.data()),
                           v.size() * sizeof(T));
}

absl::Status CheckShardArguments(absl::string_view operation, int shard_index,
                                 int num_shards) {
  if (num_shards < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, ": the number of shards is ", num_shards,
                     ", expected at least 1"));
  }
  if (shard_index < 0 || shard_index >= num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, ": shard index ", shard_index,
                     " is not in [0, ", num_shards, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckRootAndStep(absl::string_view operation,
                              const std::string& root_dir, int64_t step) {
  if (root_dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, ": no checkpoint directory given"));
  }
  if (step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, ": step ", step, " is negative"));
  }
  return absl::OkStatus();
}

// One saved part of a variable: the rows one shard file has.
struct SavedPart {
  const ShardFileReader* file;
  const ps::SavedVariable* saved;
  RowRange rows;
};

// Checks that the saved part has the spec `info` has and sane rows.
absl::Status CheckPart(const SavedPart& part, const VariableInfo& info,
                       const std::string& checkpoint_dir) {
  const std::string& name = info.spec.name;
  absl::StatusOr<VariableSpec> saved =
      VariableSpecFromProto(part.saved->spec());
  if (!saved.ok()) {
    return absl::DataLossError(
        absl::StrCat(part.file->path(), ": ", saved.status().message()));
  }
  if (std::string diff = DescribeSpecDifference(*saved, info.spec);
      !diff.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "variable \"", name, "\" in checkpoint ", checkpoint_dir,
        " differs from the one here: ", diff, " (checkpoint vs here)"));
  }
  if (part.rows.begin < 0 || part.rows.begin > part.rows.end ||
      part.rows.end > NumRows(info.spec)) {
    return absl::DataLossError(
        absl::StrCat(part.file->path(), ": variable \"", name, "\" rows ",
                     RowRangeString(part.rows), " are not within its ",
                     NumRows(info.spec), " rows"));
  }
  if (part.saved->step() < 0) {
    return absl::DataLossError(absl::StrCat(part.file->path(), ": variable \"",
                                            name, "\" has a negative step ",
                                            part.saved->step()));
  }
  return absl::OkStatus();
}

// The rows `held` of a variable of `spec` with `num_slots` optimizer
// slots, zeroed, to be filled in.
VariableState EmptyVariableState(const VariableSpec& spec, RowRange held,
                                 size_t num_slots) {
  const int64_t width = RowWidth(spec);
  VariableState state;
  if (spec.dtype == DType::kFloat32) {
    state.values.resize(held.size() * width);
  } else {
    state.ints.resize(held.size() * width);
  }
  state.slots.assign(num_slots, std::vector<float>(held.size() * width));
  return state;
}

// The parts that have some of the rows `held`, by their first row.
std::vector<SavedPart> PartsOverlapping(std::vector<SavedPart> parts,
                                        RowRange held) {
  parts.erase(std::remove_if(parts.begin(), parts.end(),
                             [held](const SavedPart& p) {
                               return p.rows.end <= held.begin ||
                                      p.rows.begin >= held.end ||
                                      p.rows.size() == 0;
                             }),
              parts.end());
  // Stable: parts come in shard order, so errors name the same file each time.
  std::stable_sort(parts.begin(), parts.end(),
                   [](const SavedPart& a, const SavedPart& b) {
                     return a.rows.begin < b.rows.begin;
                   });
  return parts;
}

// Reads `part` (values and slots, in full, checksums verified) and copies
// its rows `copy` into `state`, which holds the rows `held`.
absl::Status CopyPart(const SavedPart& part, RowRange copy, RowRange held,
                      const VariableSpec& spec,
                      const std::vector<std::string>& slot_names,
                      VariableState& state) {
  const int64_t width = RowWidth(spec);
  const int64_t elements = part.rows.size() * width;
  const auto what = [&spec](absl::string_view tensor) {
    return absl::StrCat("variable \"", spec.name, "\" ", tensor);
  };
  if (part.saved->slots_size() != static_cast<int>(slot_names.size())) {
    return absl::DataLossError(absl::StrCat(
        part.file->path(), ": ", what("has "), part.saved->slots_size(),
        " optimizer slots, expected ", slot_names.size()));
  }
  const int64_t from = (copy.begin - part.rows.begin) * width;
  const int64_t to = (copy.begin - held.begin) * width;
  const int64_t count = copy.size() * width;
  if (spec.dtype == DType::kFloat32) {
    ASSIGN_OR_RETURN(
        std::vector<float> values,
        part.file->ReadFloat32(part.saved->values(), elements, what("values")));
    std::copy_n(values.begin() + from, count, state.values.begin() + to);
  } else {
    ASSIGN_OR_RETURN(
        std::vector<int64_t> ints,
        part.file->ReadInt64(part.saved->values(), elements, what("values")));
    std::copy_n(ints.begin() + from, count, state.ints.begin() + to);
  }
  for (size_t s = 0; s < slot_names.size(); ++s) {
    ASSIGN_OR_RETURN(std::vector<float> slot,
                     part.file->ReadFloat32(
                         part.saved->slots(s), elements,
                         what(absl::StrCat("slot \"", slot_names[s], "\""))));
    std::copy_n(slot.begin() + from, count, state.slots[s].begin() + to);
  }
  return absl::OkStatus();
}

// The rows `info.rows_held` of the variable, from the saved parts that
// overlap them, every tensor read in full and its checksum verified.
absl::StatusOr<VariableState> AssembleVariable(
    const VariableInfo& info, std::vector<SavedPart> parts,
    const std::string& checkpoint_dir) {
  const VariableSpec& spec = info.spec;
  const RowRange held = info.rows_held;
  const std::vector<std::string> slot_names =
      spec.dtype == DType::kFloat32 ? SlotNames(spec.optimizer.kind)
                                    : std::vector<std::string>();
  VariableState state = EmptyVariableState(spec, held, slot_names.size());
  auto missing = [&](int64_t begin, int64_t end) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint ", checkpoint_dir, " does not have rows ",
        RowRangeString({begin, end}), " of variable \"", spec.name, "\""));
  };
  int64_t next_row = held.begin;  // the rows held before it are filled
  for (const SavedPart& part : PartsOverlapping(std::move(parts), held)) {
    // Rows [copy.begin, copy.end) go from the part to the state.
    const RowRange copy = {std::max(part.rows.begin, held.begin),
                           std::min(part.rows.end, held.end)};
    if (copy.begin > next_row) return missing(next_row, copy.begin);
    if (copy.begin < next_row) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint ", checkpoint_dir, " has rows ",
          RowRangeString({copy.begin, std::min(next_row, copy.end)}),
          " of variable \"", spec.name, "\" more than once (again in ",
          part.file->path(), ")"));
    }
    RETURN_IF_ERROR(CopyPart(part, copy, held, spec, slot_names, state));
    // The parts' steps differ (each counts the pushes that reached its own
    // rows). Adam's bias correction divides by 1 - beta^step: too small a
    // step would re-apply the large corrections of early training to a
    // trained model, too large a step only removes what is left of a
    // correction that has nearly vanished anyway. So the largest.
    state.step = std::max(state.step, part.saved->step());
    next_row = copy.end;
  }
  if (next_row < held.end) return missing(next_row, held.end);
  return state;
}

// One saved hash table: the shard file and its header's entry.
using SavedTablePart =
    std::pair<const ShardFileReader*, const ps::SavedHashTable*>;

// Checks that the table saved in `file` as `saved` has the spec `spec` has,
// but for the policy: which ids get rows and which rows go may change
// between runs (e.g. a larger max_rows); the table here applies its own to
// the rows restored.
absl::Status CheckSavedTableSpec(const HashEmbeddingSpec& spec,
                                 const ShardFileReader& file,
                                 const ps::SavedHashTable& saved,
                                 const std::string& checkpoint_dir) {
  absl::StatusOr<HashEmbeddingSpec> saved_spec =
      HashSpecFromProto(saved.spec());
  if (!saved_spec.ok()) {
    return absl::DataLossError(
        absl::StrCat(file.path(), ": ", saved_spec.status().message()));
  }
  saved_spec->policy = spec.policy;
  if (std::string diff = DescribeHashSpecDifference(*saved_spec, spec);
      !diff.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("hash embedding table \"", spec.name, "\" in checkpoint ",
                     checkpoint_dir, " differs from the one here: ", diff,
                     " (checkpoint vs here)"));
  }
  return absl::OkStatus();
}

// Every row of the table `saved` in `file` (which must have `spec`), read
// in full, checksums verified; without `read_slots`, its optimizer slots
// are not read (nor returned). A file written before rows had a
// last-updated step gives each row `checkpoint_step`.
absl::StatusOr<HashTableState> ReadSavedTable(const HashEmbeddingSpec& spec,
                                              const ShardFileReader& file,
                                              const ps::SavedHashTable& saved,
                                              const std::string& checkpoint_dir,
                                              int64_t checkpoint_step,
                                              bool read_slots) {
  const int64_t dim = spec.dim;
  const std::vector<std::string> slot_names = SlotNames(spec.optimizer.kind);
  const int64_t num_slots = slot_names.size();
  const auto what = [&spec](absl::string_view tensor) {
    return absl::StrCat("hash embedding table \"", spec.name, "\" ", tensor);
  };
  RETURN_IF_ERROR(CheckSavedTableSpec(spec, file, saved, checkpoint_dir));
  // Each row takes an id, a step, a last-updated step (but in older files),
  // values and slots: a row count the file cannot hold is refused before
  // anything is allocated for it.
  const int64_t row_bytes =
      (saved.has_last_updated() ? 24 : 16) + 4 * dim * (1 + num_slots);
  const int64_t rows = saved.num_rows();
  if (rows < 0 || rows > file.data_bytes() / row_bytes) {
    return absl::DataLossError(absl::StrCat(
        file.path(), ": ", what("has "), rows, " rows, more than the ",
        file.data_bytes(), "-byte data section holds"));
  }
  if (saved.slots_size() != num_slots) {
    return absl::DataLossError(
        absl::StrCat(file.path(), ": ", what("has "), saved.slots_size(),
                     " optimizer slots, expected ", num_slots));
  }
  HashTableState state;
  ASSIGN_OR_RETURN(state.ids, file.ReadInt64(saved.ids(), rows, what("ids")));
  ASSIGN_OR_RETURN(state.steps,
                   file.ReadInt64(saved.steps(), rows, what("steps")));
  if (saved.has_last_updated()) {
    ASSIGN_OR_RETURN(
        state.last_updated,
        file.ReadInt64(saved.last_updated(), rows, what("last_updated")));
  } else {
    state.last_updated.assign(rows, checkpoint_step);
  }
  ASSIGN_OR_RETURN(state.values, file.ReadFloat32(saved.values(), rows * dim,
                                                  what("values")));
  for (int s = 0; read_slots && s < num_slots; ++s) {
    ASSIGN_OR_RETURN(
        std::vector<float> slot,
        file.ReadFloat32(saved.slots(s), rows * dim,
                         what(absl::StrCat("slot \"", slot_names[s], "\""))));
    state.slots.push_back(std::move(slot));
  }
  return state;
}

// Appends the rows of `read` (all of one saved table, of `file`) that
// belong to shard `shard_index` to `state`; a row with a negative step or
// last-updated step is an error.
absl::Status AppendShardRows(const HashEmbeddingSpec& spec,
                             const ShardFileReader& file,
                             const HashTableState& read, int shard_index,
                             int num_shards, HashTableState& state) {
  const int64_t dim = spec.dim;
  for (int64_t r = 0; r < static_cast<int64_t>(read.ids.size()); ++r) {
    if (read.steps[r] < 0) {
      return absl::DataLossError(absl::StrCat(
          file.path(), ": hash embedding table \"", spec.name, "\" row ",
          read.ids[r], " has a negative step ", read.steps[r]));
    }
    if (read.last_updated[r] < 0) {
      return absl::DataLossError(absl::StrCat(
          file.path(), ": hash embedding table \"", spec.name, "\" row ",
          read.ids[r], " has a negative last-updated step ",
          read.last_updated[r]));
    }
    // The clock of every task restoring the table is the same: that of the
    // newest row anywhere in the checkpoint (or its step, if later).
    state.clock = std::max(state.clock, read.last_updated[r]);
    if (HashShardOf(read.ids[r], num_shards) != shard_index) continue;
    state.ids.push_back(read.ids[r]);
    state.steps.push_back(read.steps[r]);
    state.last_updated.push_back(read.last_updated[r]);
    const auto row = [&](const std::vector<float>& v) {
      return v.begin() + r * dim;
    };
    state.values.insert(state.values.end(), row(read.values),
                        row(read.values) + dim);
    for (size_t s = 0; s < read.slots.size(); ++s) {
      state.slots[s].insert(state.slots[s].end(), row(read.slots[s]),
                            row(read.slots[s]) + dim);
    }
  }
  return absl::OkStatus();
}

// This shard's rows of `table`, from every shard file that saved the table,
// with their last-updated steps (and slots, with `read_slots`); its clock is
// the checkpoint's step, or the largest last-updated step if later (pushes
// may carry on during a save).
absl::StatusOr<HashTableState> AssembleHashTable(
    const HashEmbeddingSpec& spec, const std::vector<SavedTablePart>& parts,
    int shard_index, int num_shards, const OpenCheckpoint& checkpoint,
    bool read_slots) {
  const std::string& checkpoint_dir = checkpoint.dir;
  HashTableState state;
  if (read_slots) state.slots.resize(SlotNames(spec.optimizer.kind).size());
  state.clock = checkpoint.step;
  for (const auto& [file, saved] : parts) {
    ASSIGN_OR_RETURN(const HashTableState read,
                     ReadSavedTable(spec, *file, *saved, checkpoint_dir,
                                    checkpoint.step, read_slots));
    RETURN_IF_ERROR(
        AppendShardRows(spec, *file, read, shard_index, num_shards, state));
  }
  std::vector<int64_t> sorted = state.ids;
  std::sort(sorted.begin(), sorted.end());
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end());
      dup != sorted.end()) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint ", checkpoint_dir, " has row ", *dup,
        " of hash embedding table \"", spec.name, "\" more than once"));
  }
  return state;
}

// The ids a delta's shard file says the table removed, checksum verified.
absl::StatusOr<std::vector<int64_t>> ReadRemoved(
    const HashEmbeddingSpec& spec, const ShardFileReader& file,
    const ps::SavedHashTable& saved) {
  const int64_t count = saved.num_removed();
  if (count == 0 && !saved.has_removed_ids()) return std::vector<int64_t>();
  if (count < 0 || count > file.data_bytes() / 8) {
    return absl::DataLossError(
        absl::StrCat(file.path(), ": hash embedding table \"", spec.name,
                     "\" has ", count, " removed ids, more than the ",
                     file.data_bytes(), "-byte data section holds"));
  }
  return file.ReadInt64(
      saved.removed_ids(), count,
      absl::StrCat("hash embedding table \"", spec.name, "\" removed_ids"));
}

// A table's rows with the position of each id, to apply deltas to.
class RowsById {
 public:
  RowsById(HashTableState& state, int64_t dim) : state_(state), dim_(dim) {
    where_.reserve(state.ids.size());
    for (size_t r = 0; r < state.ids.size(); ++r) where_[state.ids[r]] = r;
  }

  // No rows.
  void Clear() {
    where_.clear();
    state_.ids.clear();
    state_.steps.clear();
    state_.last_updated.clear();
    state_.values.clear();
    for (auto& slot : state_.slots) slot.clear();
  }

  // Sets (or adds) row `r` of `from`.
  void Upsert(const HashTableState& from, int64_t r) {
    auto [it, added] = where_.try_emplace(from.ids[r], state_.ids.size());
    const int64_t to = it->second;
    if (added) {
      state_.ids.push_back(from.ids[r]);
      state_.steps.push_back(0);
      state_.last_updated.push_back(0);
      state_.values.resize(state_.values.size() + dim_);
      for (auto& slot : state_.slots) slot.resize(slot.size() + dim_);
    }
    state_.steps[to] = from.steps[r];
    state_.last_updated[to] = from.last_updated[r];
    std::copy_n(from.values.begin() + r * dim_, dim_,
                state_.values.begin() + to * dim_);
    for (size_t s = 0; s < state_.slots.size(); ++s) {
      std::copy_n(from.slots[s].begin() + r * dim_, dim_,
                  state_.slots[s].begin() + to * dim_);
    }
  }

  // Drops the row of `id`, if any: the last row takes its place.
  void Remove(int64_t id) {
    auto it = where_.find(id);
    if (it == where_.end()) return;
    const int64_t at = it->second;
    where_.erase(it);
    const int64_t last = static_cast<int64_t>(state_.ids.size()) - 1;
    if (at != last) {
      where_[state_.ids[last]] = at;
      state_.ids[at] = state_.ids[last];
      state_.steps[at] = state_.steps[last];
      state_.last_updated[at] = state_.last_updated[last];
      std::copy_n(state_.values.begin() + last * dim_, dim_,
                  state_.values.begin() + at * dim_);
      for (auto& slot : state_.slots) {
        std::copy_n(slot.begin() + last * dim_, dim_, slot.begin() + at * dim_);
      }
    }
    state_.ids.pop_back();
    state_.steps.pop_back();
    state_.last_updated.pop_back();
    state_.values.resize(last * dim_);
    for (auto& slot : state_.slots) slot.resize(last * dim_);
  }

 private:
  HashTableState& state_;
  const int64_t dim_;
  absl::flat_hash_map<int64_t, int64_t> where_;
};

// Applies what delta checkpoint `link` saved of the table (`parts`) to
// `rows`, this shard's rows of it as of the checkpoint before.
absl::Status ApplyDeltaParts(const HashEmbeddingSpec& spec,
                             const std::vector<SavedTablePart>& parts,
                             int shard_index, int num_shards,
                             const OpenCheckpoint& link, bool read_slots,
                             HashTableState& state, RowsById& rows) {
  for (const auto& [file, saved] : parts) {
    ASSIGN_OR_RETURN(
        const HashTableState read,
        ReadSavedTable(spec, *file, *saved, link.dir, link.step, read_slots));
    ASSIGN_OR_RETURN(const std::vector<int64_t> removed,
                     ReadRemoved(spec, *file, *saved));
    HashTableState mine;
    mine.slots.resize(read.slots.size());
    RETURN_IF_ERROR(
        AppendShardRows(spec, *file, read, shard_index, num_shards, mine));
    state.clock = std::max(state.clock, mine.clock);
    for (size_t r = 0; r < mine.ids.size(); ++r) rows.Upsert(mine, r);
    for (int64_t id : removed) {
      if (HashShardOf(id, num_shards) == shard_index) rows.Remove(id);
    }
  }
  state.clock = std::max(state.clock, link.step);
  return absl::OkStatus();
}

// What a checkpoint's shard files saved, by variable or table name.
struct SavedIndex {
  absl::flat_hash_map<std::string, std::vector<SavedPart>> variables;
  absl::flat_hash_map<std::string, std::vector<SavedTablePart>> tables;
};

SavedIndex IndexSaved(const OpenCheckpoint& checkpoint) {
  SavedIndex index;
  for (const auto& shard : checkpoint.shards) {
    for (const ps::SavedVariable& v : shard->header().variables()) {
      index.variables[v.spec().name()].push_back(
          {shard.get(), &v, RowRangeFromProto(v.rows())});
    }
    for (const ps::SavedHashTable& t : shard->header().hash_tables()) {
      index.tables[t.spec().name()].emplace_back(shard.get(), &t);
    }
  }
  return index;
}

// The state of each of `variables` as the checkpoint saved it, read and
// verified in full.
absl::StatusOr<std::vector<VariableState>> ReadVariables(
    const std::vector<VariableInfo>& variables, const SavedIndex& saved,
    const std::string& checkpoint_dir) {
  std::vector<VariableState> states;
  for (const VariableInfo& variable : variables) {
    const std::string& name = variable.spec.name;
    auto it = saved.variables.find(name);
    if (it == saved.variables.end()) {
      return absl::NotFoundError(absl::StrCat(
          "variable \"", name, "\" is not in checkpoint ", checkpoint_dir));
    }
    for (const SavedPart& part : it->second) {
      RETURN_IF_ERROR(CheckPart(part, variable, checkpoint_dir));
    }
    ASSIGN_OR_RETURN(VariableState state,
                     AssembleVariable(variable, it->second, checkpoint_dir));
    states.push_back(std::move(state));
  }
  return states;
}

// Shard `shard_index`'s rows of table `spec.name` as chain `chain`
// (OpenChain) saved them, `saved` the chain's indexes: the base's rows, then
// each delta applied in order. NOT_FOUND when the last checkpoint of the
// chain does not hold the table.
absl::StatusOr<HashTableState> ReadChainTableIndexed(
    const HashEmbeddingSpec& spec, const std::vector<SavedIndex>& saved,
    const std::vector<OpenCheckpoint>& chain, int shard_index, int num_shards,
    bool read_slots) {
  if (!saved.back().tables.contains(spec.name)) {
    return absl::NotFoundError(
        absl::StrCat("hash embedding table \"", spec.name,
                     "\" is not in checkpoint ", chain.back().dir));
  }
  // A table created after the base save starts empty in the chain.
  HashTableState state;
  if (read_slots) state.slots.resize(SlotNames(spec.optimizer.kind).size());
  state.clock = chain.front().step;
  if (auto it = saved.front().tables.find(spec.name);
      it != saved.front().tables.end()) {
    ASSIGN_OR_RETURN(
        state, AssembleHashTable(spec, it->second, shard_index, num_shards,
                                 chain.front(), read_slots));
  }
  if (chain.size() > 1) {
    RowsById rows(state, spec.dim);
    for (size_t i = 1; i < chain.size(); ++i) {
      auto it = saved[i].tables.find(spec.name);
      if (it == saved[i].tables.end()) {
        // The table was not there at that save: the rows before it are
        // gone, and a later link's rows start from none (the later table's
        // removed ids say nothing of rows it never held).
        rows.Clear();
        continue;
      }
      RETURN_IF_ERROR(ApplyDeltaParts(spec, it->second, shard_index, num_shards,
                                      chain[i], read_slots, state, rows));
    }
  }
  return state;
}

// Shard `shard_index`'s rows of each of `tables` as the checkpoint saved
// them, read and verified in full: `chain` is the checkpoint (its last) with
// the base and deltas it needs (OpenChain), `saved` their indexes.
absl::StatusOr<std::vector<HashTableState>> ReadHashTables(
    const std::vector<HashEmbeddingTable*>& tables,
    const std::vector<SavedIndex>& saved, int shard_index, int num_shards,
    const std::vector<OpenCheckpoint>& chain) {
  std::vector<HashTableState> states;
  for (const HashEmbeddingTable* table : tables) {
    ASSIGN_OR_RETURN(HashTableState state,
                     ReadChainTableIndexed(table->spec(), saved, chain,
                                           shard_index, num_shards,
                                           /*read_slots=*/true));
    states.push_back(std::move(state));
  }
  return states;
}

// Puts the states read into the store's variables and the tables.
// Replace checks only what reading checked, and variables and tables are
// never removed: a failure here is a bug, not bad input.
absl::Status ReplaceAll(VariableStore& store,
                        const std::vector<VariableInfo>& variables,
                        std::vector<VariableState> variable_states,
                        const std::vector<HashEmbeddingTable*>& tables,
                        std::vector<HashTableState> table_states,
                        const std::string& checkpoint_dir) {
  for (size_t i = 0; i < variables.size(); ++i) {
    if (absl::Status s = store.Replace(variables[i].spec.name,
                                       std::move(variable_states[i]));
        !s.ok()) {
      return absl::InternalError(absl::StrCat(
          "restoring from ", checkpoint_dir,
          " failed after verification, partly restored: ", s.message()));
    }
  }
  for (size_t i = 0; i < tables.size(); ++i) {
    if (absl::Status s = tables[i]->Replace(std::move(table_states[i]));
        !s.ok()) {
      return absl::InternalError(absl::StrCat(
          "restoring from ", checkpoint_dir,
          " failed after verification, partly restored: ", s.message()));
    }
  }
  return absl::OkStatus();
}

// Checks that `delta` names checkpoints of steps before `step`.
absl::Status CheckDeltaOf(absl::string_view operation, const ps::DeltaOf& delta,
                          int64_t step) {
  for (const std::string* name : {&delta.previous(), &delta.base()}) {
    std::optional<int64_t> of = ParseCheckpointDirName(*name);
    if (!of.has_value() || *of >= step) {
      return absl::InvalidArgumentError(absl::StrCat(
          operation, ": a delta at step ", step, " cannot follow \"", *name,
          "\": expected the name of an earlier checkpoint (ckpt-<step>)"));
    }
  }
  return absl::OkStatus();
}

// What a save writes of `table`: every row, or (a delta) the rows changed
// since the mark, with the ids removed since into `removed`. Adds the rows
// the table holds to `rows_held`.
HashTableState ExportForSave(HashEmbeddingTable& table,
                             const SaveShardOptions& options,
                             std::vector<int64_t>& removed,
                             int64_t& rows_held) {
  HashTableState state;
  if (options.delta.has_value()) {
    HashTableDelta delta = table.ExportChangesAndMark();
    state = std::move(delta.changed);
    removed = std::move(delta.removed);
  } else {
    state = options.mark ? table.ExportAndMark() : table.Export();
  }
  rows_held += table.num_rows();
  return state;
}

// Adds to `needed` the checkpoints of `root_dir` that checkpoint `name`'s
// chain reads (itself, and for a delta its base and the deltas before it).
absl::Status AddChain(const std::string& root_dir, const std::string& name,
                      absl::flat_hash_set<std::string>& needed) {
  ASSIGN_OR_RETURN(std::vector<OpenCheckpoint> chain,
                   OpenChain(JoinPath(root_dir, name)));
  needed.insert(name);
  for (const OpenCheckpoint& link : chain) {
    if (link.delta.has_value()) {
      needed.insert(link.delta->previous());
      needed.insert(link.delta->base());
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SavedShardInfo> SaveShard(const VariableStore& store,
                                         const HashTableSet& tables,
                                         const std::string& root_dir,
                                         int64_t step, int shard_index,
                                         int num_shards) {
  return SaveShard(store, tables, root_dir, step, shard_index, num_shards,
                   SaveShardOptions());
}

absl::StatusOr<SavedShardInfo> SaveShard(const VariableStore& store,
                                         const HashTableSet& tables,
                                         const std::string& root_dir,
                                         int64_t step, int shard_index,
                                         int num_shards,
                                         const SaveShardOptions& options) {
  constexpr absl::string_view kOperation = "cannot save a checkpoint shard";
  RETURN_IF_ERROR(CheckRootAndStep(kOperation, root_dir, step));
  RETURN_IF_ERROR(CheckShardArguments(kOperation, shard_index, num_shards));
  if (options.delta.has_value()) {
    RETURN_IF_ERROR(CheckDeltaOf(kOperation, *options.delta, step));
  }
  const std::string dir = JoinPath(root_dir, CheckpointDirName(step));
  RETURN_IF_ERROR(CreateDirectories(dir));

  ps::CheckpointShardHeader header;
  header.set_shard_index(shard_index);
  header.set_num_shards(num_shards);
  header.set_step(step);
  header.set_created_unix_seconds(absl::ToUnixSeconds(absl::Now()));
  ShardDataSection data;
  // The copies the data section points into, until the file is written. A
  // deque never moves its elements.
  std::deque<VariableState> variable_states;
  std::deque<HashTableState> table_states;

  for (const VariableInfo& info : store.List()) {
    ASSIGN_OR_RETURN(VariableState state, store.Snapshot(info.spec.name));
    const VariableState& s = variable_states.emplace_back(std::move(state));
    ps::SavedVariable* saved = header.add_variables();
    VariableSpecToProto(info.spec, saved->mutable_spec());
    *saved->mutable_rows() = RowRangeToProto(info.rows_held);
    saved->set_step(s.step);
    if (info.spec.dtype == DType::kInt64) {
      data.Add(ps::INT64, AsBytes(s.ints), saved->mutable_values());
    } else {
      data.Add(ps::FLOAT32, AsBytes(s.values), saved->mutable_values());
    }
    for (const std::vector<float>& slot : s.slots) {
      data.Add(ps::FLOAT32, AsBytes(slot), saved->add_slots());
    }
  }
  if (options.delta.has_value()) *header.mutable_delta() = *options.delta;
  SavedShardInfo info;
  std::deque<std::vector<int64_t>> removed_ids;
  for (HashEmbeddingTable* table : tables.List()) {
    std::vector<int64_t>& removed = removed_ids.emplace_back();
    const HashTableState& s = table_states.emplace_back(
        ExportForSave(*table, options, removed, info.table_rows_held));
    ps::SavedHashTable* saved = header.add_hash_tables();
    HashSpecToProto(table->spec(), saved->mutable_spec());
    saved->set_num_rows(s.ids.size());
    info.table_rows_written += s.ids.size() + removed.size();
    if (options.delta.has_value()) {
      saved->set_num_removed(removed.size());
      data.Add(ps::INT64, AsBytes(removed), saved->mutable_removed_ids());
    }
    data.Add(ps::INT64, AsBytes(s.ids), saved->mutable_ids());
    data.Add(ps::FLOAT32, AsBytes(s.values), saved->mutable_values());
    for (const std::vector<float>& slot : s.slots) {
      data.Add(ps::FLOAT32, AsBytes(slot), saved->add_slots());
    }
    data.Add(ps::INT64, AsBytes(s.steps), saved->mutable_steps());
    data.Add(ps::INT64, AsBytes(s.last_updated), saved->mutable_last_updated());
  }

  const std::string path =
      JoinPath(dir, ShardFileName(shard_index, num_shards));
  ASSIGN_OR_RETURN(info.bytes, WriteShardFile(path, header, data));
  info.path = path;
  return info;
}

absl::StatusOr<CommitInfo> CommitCheckpoint(const std::string& root_dir,
                                            int64_t step, int num_shards,
                                            int keep_last) {
  constexpr absl::string_view kOperation = "cannot commit a checkpoint";
  RETURN_IF_ERROR(CheckRootAndStep(kOperation, root_dir, step));
  RETURN_IF_ERROR(CheckShardArguments(kOperation, 0, num_shards));
  if (keep_last < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        kOperation, ": keep_last ", keep_last, " is negative (0 keeps all)"));
  }
  const std::string name = CheckpointDirName(step);
  CommitInfo info;
  info.checkpoint_dir = JoinPath(root_dir, name);
  ASSIGN_OR_RETURN(OpenCheckpoint checkpoint,
                   OpenShards(info.checkpoint_dir, num_shards, step));

  ASSIGN_OR_RETURN(std::vector<std::string> index,
                   ReadCheckpointIndex(root_dir));
  index.erase(std::remove(index.begin(), index.end(), name), index.end());
  index.push_back(name);
  // Committed once this index is in place. Old checkpoints are deleted only
  // afterwards and dropped from the index last: after a crash at any point,
  // the index names this checkpoint, and at worst an old one that is
  // (partly) gone, which the next commit deletes again.
  RETURN_IF_ERROR(WriteCheckpointIndex(root_dir, index));
  if (keep_last == 0 || index.size() <= static_cast<size_t>(keep_last)) {
    return info;
  }
  std::vector<std::string> kept;
  const size_t num_old = index.size() - keep_last;
  // A kept delta's chain is kept too. When a chain cannot be read, nothing
  // old is deleted: what it needs is unknown.
  absl::flat_hash_set<std::string> needed;
  for (size_t i = num_old; i < index.size(); ++i) {
    if (absl::Status s = AddChain(root_dir, index[i], needed); !s.ok()) {
      info.cleanup_errors.push_back(
          absl::StrCat("kept every older checkpoint: ", s.message()));
      return info;
    }
  }
  for (size_t i = 0; i < num_old; ++i) {
    if (needed.contains(index[i])) {
      kept.push_back(index[i]);
      continue;
    }
    const std::string old = JoinPath(root_dir, (index)[i]);
    if (absl::Status s = RemoveDirectoryTree(old); s.ok()) {
      info.deleted.push_back(old);
    } else {
      info.cleanup_errors.emplace_back(s.message());
      kept.push_back((index)[i]);
    }
  }
  kept.insert(kept.end(), index.begin() + num_old, index.end());
  if (absl::Status s = WriteCheckpointIndex(root_dir, kept); !s.ok()) {
    info.cleanup_errors.emplace_back(s.message());
  }
  return info;
}

absl::StatusOr<HashTableState> ReadChainTable(
    const HashEmbeddingSpec& spec, const std::vector<OpenCheckpoint>& chain,
    int shard_index, int num_shards, bool read_slots) {
  RETURN_IF_ERROR(CheckShardArguments("cannot read a checkpoint's table",
                                      shard_index, num_shards));
  if (chain.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read hash embedding table \"", spec.name,
                     "\": no checkpoint given"));
  }
  std::vector<SavedIndex> indexes;
  for (const OpenCheckpoint& link : chain) indexes.push_back(IndexSaved(link));
  return ReadChainTableIndexed(spec, indexes, chain, shard_index, num_shards,
                               read_slots);
}

absl::StatusOr<RestoreInfo> RestoreShard(VariableStore& store,
                                         HashTableSet& tables,
                                         const std::string& dir,
                                         int shard_index, int num_shards,
                                         bool verify_only) {
  RETURN_IF_ERROR(CheckShardArguments("cannot restore a checkpoint",
                                      shard_index, num_shards));
  ASSIGN_OR_RETURN(std::string checkpoint_dir, ResolveCheckpointDir(dir));
  ASSIGN_OR_RETURN(const std::vector<OpenCheckpoint> chain,
                   OpenChain(checkpoint_dir));
  const OpenCheckpoint& checkpoint = chain.back();
  std::vector<SavedIndex> indexes;
  for (const OpenCheckpoint& link : chain) indexes.push_back(IndexSaved(link));
  const SavedIndex& saved = indexes.back();

  // Everything is read and verified here, before anything changes.
  const std::vector<VariableInfo> variables = store.List();
  ASSIGN_OR_RETURN(std::vector<VariableState> variable_states,
                   ReadVariables(variables, saved, checkpoint.dir));
  const std::vector<HashEmbeddingTable*> tables_here = tables.List();
  ASSIGN_OR_RETURN(
      std::vector<HashTableState> table_states,
      ReadHashTables(tables_here, indexes, shard_index, num_shards, chain));

  RestoreInfo info;
  info.checkpoint_dir = checkpoint.dir;
  info.step = checkpoint.step;
  for (const HashTableState& state : table_states) {
    info.hash_table_rows_restored += state.ids.size();
  }
  info.variables_restored = variables.size();
  info.hash_tables_restored = tables_here.size();
  info.variables_not_here = saved.variables.size() - variables.size();
  info.hash_tables_not_here = saved.tables.size() - tables_here.size();
  if (verify_only) return info;
  RETURN_IF_ERROR(ReplaceAll(store, variables, std::move(variable_states),
                             tables_here, std::move(table_states),
                             checkpoint.dir));
  // The tables now hold the checkpoint: a delta may follow it.
  for (HashEmbeddingTable* table : tables_here) table->MarkSaved();
  return info;
}

absl::StatusOr<RestoreInfo> RecreateShard(VariableStore& store,
                                          HashTableSet& tables,
                                          const std::string& dir,
                                          int shard_index, int num_shards) {
  RETURN_IF_ERROR(CheckShardArguments("cannot restore a checkpoint",
                                      shard_index, num_shards));
  if (!store.List().empty() || !tables.List().empty()) {
    return absl::FailedPreconditionError(
        "cannot re-create a ps task's shard over variables it holds");
  }
  ASSIGN_OR_RETURN(std::string checkpoint_dir, ResolveCheckpointDir(dir));
  ASSIGN_OR_RETURN(OpenCheckpoint checkpoint,
                   OpenShards(checkpoint_dir, std::nullopt, std::nullopt));
  if (static_cast<int>(checkpoint.shards.size()) != num_shards) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", checkpoint.dir, " was saved by ",
        checkpoint.shards.size(), " ps tasks, this cluster has ", num_shards,
        ": a ps task can only take back its own shard"));
  }
  const ShardFileReader& own = *checkpoint.shards[shard_index];
  for (const ps::SavedVariable& saved : own.header().variables()) {
    absl::StatusOr<VariableSpec> spec = VariableSpecFromProto(saved.spec());
    if (!spec.ok()) {
      return absl::DataLossError(
          absl::StrCat(own.path(), ": ", spec.status().message()));
    }
    if (absl::StatusOr<VariableInfo> created =
            store.Create(*spec, RowRangeFromProto(saved.rows()));
        !created.ok()) {
      return absl::DataLossError(
          absl::StrCat(own.path(), ": ", created.status().message()));
    }
  }
  for (const ps::SavedHashTable& saved : own.header().hash_tables()) {
    absl::StatusOr<HashEmbeddingSpec> spec = HashSpecFromProto(saved.spec());
    if (!spec.ok()) {
      return absl::DataLossError(
          absl::StrCat(own.path(), ": ", spec.status().message()));
    }
    if (absl::StatusOr<HashEmbeddingTable*> created = tables.Create(*spec);
        !created.ok()) {
      return absl::DataLossError(
          absl::StrCat(own.path(), ": ", created.status().message()));
    }
  }
  return RestoreShard(store, tables, checkpoint.dir, shard_index, num_shards,
                      /*verify_only=*/false);
}

}  // namespace distrt
