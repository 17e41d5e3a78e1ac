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

// All the shard files of one checkpoint, open, with headers that agree.
struct OpenCheckpoint {
  std::string dir;
  int64_t step = 0;
  std::vector<std::unique_ptr<ShardFileReader>> shards;  // by shard index
};

// The number of shards of checkpoint `dir`, whose files are `entries`:
// `num_shards` where given (a commit), and then no files of another count
// may be there; otherwise (a restore) the one count the files name.
absl::StatusOr<int> ShardCountOf(const std::string& dir,
                                 const std::vector<std::string>& entries,
                                 std::optional<int> num_shards) {
  // Shard counts present, with one file name of each as an example.
  std::map<int, std::string> counts;
  for (const std::string& entry : entries) {
    std::optional<ShardFileId> id = ParseShardFileName(entry);
    if (!id.has_value()) continue;  // e.g. a crashed writer's temporary
    counts.emplace(id->num_shards, entry);
  }
  if (num_shards.has_value()) {
    counts.erase(*num_shards);
    if (!counts.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", dir, " also holds shard files of a save by ",
          counts.begin()->first, " ps tasks (e.g. ", counts.begin()->second,
          "), not ", *num_shards,
          "; remove them or save to another directory"));
    }
    return *num_shards;
  }
  if (counts.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "checkpoint ", dir, " holds no shard files (shard-*-of-*.ckpt)"));
  }
  if (counts.size() > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", dir,
                     " holds shard files of saves by different numbers "
                     "of ps tasks: ",
                     counts.begin()->second, " and ", counts.rbegin()->second));
  }
  return counts.begin()->first;
}

// Checks that `entries` hold every one of the `num_shards` shard files.
absl::Status CheckNoShardMissing(const std::string& dir,
                                 const std::vector<std::string>& entries,
                                 int num_shards) {
  // The shard indices present, from the listing: the count comes from a
  // file name (or a request) and may be huge, so nothing loops over it.
  std::vector<int> present;
  for (const std::string& entry : entries) {
    std::optional<ShardFileId> id = ParseShardFileName(entry);
    if (id.has_value() && id->num_shards == num_shards) {
      present.push_back(id->shard_index);
    }
  }
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  const int64_t num_missing =
      int64_t{num_shards} - static_cast<int64_t>(present.size());
  if (num_missing <= 0) return absl::OkStatus();
  int first = 0;
  while (first < static_cast<int>(present.size()) && present[first] == first) {
    ++first;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint ", dir, " is missing ", ShardFileName(first, num_shards),
      " (", num_missing, " of ", num_shards,
      " shard files missing; did every ps task save?)"));
}

// Opens shard `index` of `num_shards` in `dir` and checks its header. The
// step is `*step` where known; otherwise the header's, which it becomes.
absl::StatusOr<std::unique_ptr<ShardFileReader>> OpenShardFile(
    const std::string& dir, int index, int num_shards,
    std::optional<int64_t>& step) {
  ASSIGN_OR_RETURN(
      std::unique_ptr<ShardFileReader> reader,
      ShardFileReader::Open(JoinPath(dir, ShardFileName(index, num_shards))));
  const ps::CheckpointShardHeader& header = reader->header();
  if (!step.has_value()) step = header.step();
  if (header.step() < 0) {
    return absl::DataLossError(
        absl::StrCat(reader->path(), ": its header says step ", header.step(),
                     "; steps are never negative"));
  }
  if (header.shard_index() != index || header.num_shards() != num_shards ||
      header.step() != *step) {
    return absl::DataLossError(absl::StrCat(
        reader->path(), ": its header says shard ", header.shard_index(),
        " of ", header.num_shards(), " at step ", header.step(),
        ", expected shard ", index, " of ", num_shards, " at step ", *step));
  }
  return reader;
}

// Opens every shard file of checkpoint directory `dir`. With `num_shards`
// and `step` given (a commit), the files must be those; otherwise (a
// restore) they are what the files say, and must be the same for all.
absl::StatusOr<OpenCheckpoint> OpenShards(const std::string& dir,
                                          std::optional<int> num_shards,
                                          std::optional<int64_t> step) {
  absl::StatusOr<std::vector<std::string>> entries = ListDirectory(dir);
  if (!entries.ok()) {
    if (entries.status().code() == absl::StatusCode::kNotFound &&
        num_shards.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", dir, " is missing ", ShardFileName(0, *num_shards),
          ": the directory does not exist (did every ps task save?)"));
    }
    return entries.status();
  }
  ASSIGN_OR_RETURN(const int count, ShardCountOf(dir, *entries, num_shards));
  RETURN_IF_ERROR(CheckNoShardMissing(dir, *entries, count));
  OpenCheckpoint checkpoint;
  checkpoint.dir = dir;
  for (int i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<ShardFileReader> reader,
                     OpenShardFile(dir, i, count, step));
    checkpoint.shards.push_back(std::move(reader));
  }
  checkpoint.step = *step;
  return checkpoint;
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

// Every row of the table `saved` in `file` (which must have `spec`), read
// in full, checksums verified.
absl::StatusOr<HashTableState> ReadSavedTable(
    const HashEmbeddingSpec& spec, const ShardFileReader& file,
    const ps::SavedHashTable& saved, const std::string& checkpoint_dir) {
  const int64_t dim = spec.dim;
  const std::vector<std::string> slot_names = SlotNames(spec.optimizer.kind);
  const int64_t num_slots = slot_names.size();
  const auto what = [&spec](absl::string_view tensor) {
    return absl::StrCat("hash embedding table \"", spec.name, "\" ", tensor);
  };
  absl::StatusOr<HashEmbeddingSpec> saved_spec =
      HashSpecFromProto(saved.spec());
  if (!saved_spec.ok()) {
    return absl::DataLossError(
        absl::StrCat(file.path(), ": ", saved_spec.status().message()));
  }
  if (std::string diff = DescribeHashSpecDifference(*saved_spec, spec);
      !diff.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("hash embedding table \"", spec.name, "\" in checkpoint ",
                     checkpoint_dir, " differs from the one here: ", diff,
                     " (checkpoint vs here)"));
  }
  // Each row takes an id, a step, values and slots: a row count the file
  // cannot hold is refused before anything is allocated for it.
  const int64_t row_bytes = 16 + 4 * dim * (1 + num_slots);
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
  ASSIGN_OR_RETURN(state.values, file.ReadFloat32(saved.values(), rows * dim,
                                                  what("values")));
  for (int s = 0; s < num_slots; ++s) {
    ASSIGN_OR_RETURN(
        std::vector<float> slot,
        file.ReadFloat32(saved.slots(s), rows * dim,
                         what(absl::StrCat("slot \"", slot_names[s], "\""))));
    state.slots.push_back(std::move(slot));
  }
  return state;
}

// Appends the rows of `read` (all of one saved table, of `file`) that
// belong to shard `shard_index` to `state`; a row with a negative step is
// an error.
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
    if (HashShardOf(read.ids[r], num_shards) != shard_index) continue;
    state.ids.push_back(read.ids[r]);
    state.steps.push_back(read.steps[r]);
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

// This shard's rows of `table`, from every shard file that saved the table.
absl::StatusOr<HashTableState> AssembleHashTable(
    const HashEmbeddingSpec& spec, const std::vector<SavedTablePart>& parts,
    int shard_index, int num_shards, const std::string& checkpoint_dir) {
  HashTableState state;
  state.slots.resize(SlotNames(spec.optimizer.kind).size());
  for (const auto& [file, saved] : parts) {
    ASSIGN_OR_RETURN(const HashTableState read,
                     ReadSavedTable(spec, *file, *saved, checkpoint_dir));
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

// Shard `shard_index`'s rows of each of `tables` as the checkpoint saved
// them, read and verified in full.
absl::StatusOr<std::vector<HashTableState>> ReadHashTables(
    const std::vector<HashEmbeddingTable*>& tables, const SavedIndex& saved,
    int shard_index, int num_shards, const std::string& checkpoint_dir) {
  std::vector<HashTableState> states;
  for (const HashEmbeddingTable* table : tables) {
    const std::string& name = table->spec().name;
    auto it = saved.tables.find(name);
    if (it == saved.tables.end()) {
      return absl::NotFoundError(absl::StrCat("hash embedding table \"", name,
                                              "\" is not in checkpoint ",
                                              checkpoint_dir));
    }
    ASSIGN_OR_RETURN(HashTableState state,
                     AssembleHashTable(table->spec(), it->second, shard_index,
                                       num_shards, checkpoint_dir));
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

}  // namespace

absl::StatusOr<SavedShardInfo> SaveShard(const VariableStore& store,
                                         const HashTableSet& tables,
                                         const std::string& root_dir,
                                         int64_t step, int shard_index,
                                         int num_shards) {
  constexpr absl::string_view kOperation = "cannot save a checkpoint shard";
  RETURN_IF_ERROR(CheckRootAndStep(kOperation, root_dir, step));
  RETURN_IF_ERROR(CheckShardArguments(kOperation, shard_index, num_shards));
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
  for (const HashEmbeddingTable* table : tables.List()) {
    const HashTableState& s = table_states.emplace_back(table->Export());
    ps::SavedHashTable* saved = header.add_hash_tables();
    HashSpecToProto(table->spec(), saved->mutable_spec());
    saved->set_num_rows(s.ids.size());
    data.Add(ps::INT64, AsBytes(s.ids), saved->mutable_ids());
    data.Add(ps::FLOAT32, AsBytes(s.values), saved->mutable_values());
    for (const std::vector<float>& slot : s.slots) {
      data.Add(ps::FLOAT32, AsBytes(slot), saved->add_slots());
    }
    data.Add(ps::INT64, AsBytes(s.steps), saved->mutable_steps());
  }

  const std::string path =
      JoinPath(dir, ShardFileName(shard_index, num_shards));
  ASSIGN_OR_RETURN(int64_t bytes, WriteShardFile(path, header, data));
  return SavedShardInfo{path, bytes};
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
  for (size_t i = 0; i < num_old; ++i) {
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

absl::StatusOr<RestoreInfo> RestoreShard(VariableStore& store,
                                         HashTableSet& tables,
                                         const std::string& dir,
                                         int shard_index, int num_shards,
                                         bool verify_only) {
  RETURN_IF_ERROR(CheckShardArguments("cannot restore a checkpoint",
                                      shard_index, num_shards));
  ASSIGN_OR_RETURN(std::string checkpoint_dir, ResolveCheckpointDir(dir));
  ASSIGN_OR_RETURN(OpenCheckpoint checkpoint,
                   OpenShards(checkpoint_dir, std::nullopt, std::nullopt));
  const SavedIndex saved = IndexSaved(checkpoint);

  // Everything is read and verified here, before anything changes.
  const std::vector<VariableInfo> variables = store.List();
  ASSIGN_OR_RETURN(std::vector<VariableState> variable_states,
                   ReadVariables(variables, saved, checkpoint.dir));
  const std::vector<HashEmbeddingTable*> tables_here = tables.List();
  ASSIGN_OR_RETURN(std::vector<HashTableState> table_states,
                   ReadHashTables(tables_here, saved, shard_index, num_shards,
                                  checkpoint.dir));

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
