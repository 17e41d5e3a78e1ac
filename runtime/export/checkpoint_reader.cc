#include "runtime/export/checkpoint_reader.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/open_checkpoint.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// HashEmbeddingTable's limit on a row.
constexpr int64_t kMaxDim = int64_t{1} << 20;
// Rows a table's merge gathers before passing them on.
constexpr int64_t kBatchRows = 4096;

std::string WithoutTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool HoldsShardFiles(const std::vector<std::string>& entries) {
  return std::any_of(entries.begin(), entries.end(), [](const std::string& e) {
    return ParseShardFileName(e).has_value();
  });
}

// `dir`, a checkpoint directory, when its parent's index lists it.
absl::StatusOr<std::string> CheckCommitted(const std::string& dir) {
  const std::string root = DirName(dir);
  const std::string name = BaseName(dir);
  ASSIGN_OR_RETURN(const std::vector<std::string> index,
                   ReadCheckpointIndex(root));
  if (std::find(index.begin(), index.end(), name) == index.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", dir,
        " is not committed: ", JoinPath(root, kCheckpointIndexName),
        index.empty() ? " does not exist or lists nothing"
                      : absl::StrCat(" does not list ", name),
        " (its save did not finish, or was never committed); export a "
        "committed checkpoint, or pass --allow_uncommitted to export it "
        "anyway"));
  }
  return dir;
}

// The latest checkpoint that the index of the root directory `dir` lists.
absl::StatusOr<std::string> LatestCommitted(const std::string& dir) {
  const std::string index_path = JoinPath(dir, kCheckpointIndexName);
  ASSIGN_OR_RETURN(const bool has_index, PathExists(index_path));
  if (!has_index) {
    return absl::NotFoundError(absl::StrCat(
        dir,
        " holds no checkpoint: neither shard files (shard-*-of-*.ckpt) "
        "nor an index of committed checkpoints (",
        kCheckpointIndexName, ")"));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> index,
                   ReadCheckpointIndex(dir));
  if (index.empty()) {
    return absl::NotFoundError(
        absl::StrCat(dir, " has no committed checkpoint: its index ",
                     index_path, " lists none"));
  }
  const std::string latest = JoinPath(dir, index.back());
  ASSIGN_OR_RETURN(const bool exists, PathExists(latest));
  if (!exists) {
    return absl::NotFoundError(
        absl::StrCat("the latest committed checkpoint of ", dir, ", ", latest,
                     ", does not exist (deleted since it was committed?)"));
  }
  return latest;
}

std::string VariableLabel(const std::string& name) {
  return absl::StrCat("variable \"", name, "\"");
}

std::string TableLabel(const std::string& name) {
  return absl::StrCat("hash embedding table \"", name, "\"");
}

// The spec and rows of a saved variable part, checked.
absl::StatusOr<std::pair<VariableSpec, RowRange>> CheckedPart(
    const ShardFileReader& file, const ps::SavedVariable& saved) {
  absl::StatusOr<VariableSpec> spec = VariableSpecFromProto(saved.spec());
  absl::Status valid = spec.ok() ? ValidateVariableSpec(*spec) : spec.status();
  if (!valid.ok()) {
    return absl::DataLossError(
        absl::StrCat(file.path(), ": ", valid.message()));
  }
  const RowRange rows = RowRangeFromProto(saved.rows());
  if (rows.begin < 0 || rows.begin > rows.end || rows.end > NumRows(*spec)) {
    return absl::DataLossError(absl::StrCat(
        file.path(), ": ", VariableLabel(spec->name), " rows ",
        RowRangeString(rows), " are not within its ", NumRows(*spec), " rows"));
  }
  return std::make_pair(*std::move(spec), rows);
}

// The spec of a saved table part, checked, with a row count the file can
// hold (so that nothing is allocated for an absurd one).
absl::StatusOr<HashEmbeddingSpec> CheckedTablePart(
    const ShardFileReader& file, const ps::SavedHashTable& saved) {
  absl::StatusOr<HashEmbeddingSpec> spec = HashSpecFromProto(saved.spec());
  if (!spec.ok()) {
    return absl::DataLossError(
        absl::StrCat(file.path(), ": ", spec.status().message()));
  }
  if (spec->dim < 1 || spec->dim > kMaxDim) {
    return absl::DataLossError(absl::StrCat(file.path(), ": ",
                                            TableLabel(spec->name), " has dim ",
                                            spec->dim, ", not in [1, 2^20]"));
  }
  const int64_t row_bytes = 8 + 4 * spec->dim;  // its id and values
  if (saved.num_rows() < 0 ||
      saved.num_rows() > file.data_bytes() / row_bytes) {
    return absl::DataLossError(
        absl::StrCat(file.path(), ": ", TableLabel(spec->name), " has ",
                     saved.num_rows(), " rows, more than the ",
                     file.data_bytes(), "-byte data section holds"));
  }
  return spec;
}

// Every row of the variable saved once: `parts` sorted by first row.
absl::Status CheckCoverage(const std::string& checkpoint_dir,
                           const VariableSpec& spec,
                           const std::vector<const ShardFileReader*>& files,
                           const std::vector<RowRange>& rows) {
  int64_t next_row = 0;  // rows before it are covered
  for (size_t p = 0; p < rows.size(); ++p) {
    if (rows[p].size() == 0) continue;
    if (rows[p].begin > next_row) break;
    if (rows[p].begin < next_row) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint ", checkpoint_dir, " has rows ",
          RowRangeString({rows[p].begin, std::min(next_row, rows[p].end)}),
          " of ", VariableLabel(spec.name), " more than once (again in ",
          files[p]->path(), ")"));
    }
    next_row = rows[p].end;
  }
  if (next_row < NumRows(spec)) {
    int64_t end = NumRows(spec);
    for (const RowRange& r : rows) {
      if (r.size() > 0 && r.begin > next_row) end = std::min(end, r.begin);
    }
    return absl::DataLossError(absl::StrCat(
        "checkpoint ", checkpoint_dir, " does not have rows ",
        RowRangeString({next_row, end}), " of ", VariableLabel(spec.name)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ResolveCommittedCheckpoint(const std::string& dir,
                                                       bool allow_uncommitted) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("no checkpoint directory given");
  }
  const std::string path = WithoutTrailingSlashes(dir);
  if (absl::Status is_dir = CheckIsDirectory(path); !is_dir.ok()) {
    if (absl::IsNotFound(is_dir)) {
      return absl::NotFoundError(
          absl::StrCat("checkpoint directory ", path, " does not exist"));
    }
    return is_dir;
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> entries, ListDirectory(path));
  if (!HoldsShardFiles(entries)) return LatestCommitted(path);
  if (allow_uncommitted) return path;
  return CheckCommitted(path);
}

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(
    const std::string& dir, bool allow_uncommitted) {
  ASSIGN_OR_RETURN(const std::string resolved,
                   ResolveCommittedCheckpoint(dir, allow_uncommitted));
  // A delta's tables hold only the rows changed since the checkpoint
  // before: its chain gives the rest.
  ASSIGN_OR_RETURN(std::vector<OpenCheckpoint> chain, OpenChain(resolved));
  std::unique_ptr<CheckpointReader> reader(new CheckpointReader());
  reader->dir_ = resolved;
  reader->step_ = chain.back().step;
  reader->chain_ = std::move(chain);
  RETURN_IF_ERROR(reader->IndexHeaders());
  return reader;
}

std::vector<std::string> CheckpointReader::chain() const {
  std::vector<std::string> dirs;
  for (const OpenCheckpoint& link : chain_) dirs.push_back(link.dir);
  return dirs;
}

absl::Status CheckpointReader::IndexHeaders() {
  // By name, so that variables() and tables() come in name order.
  std::map<std::string, std::pair<SavedVariableInfo, std::vector<Part>>> vars;
  std::map<std::string, std::pair<SavedTableInfo, std::vector<TablePart>>>
      tables;
  for (const auto& shard : chain_.back().shards) {
    for (const ps::SavedVariable& saved : shard->header().variables()) {
      ASSIGN_OR_RETURN(auto part, CheckedPart(*shard, saved));
      auto [it, added] = vars.try_emplace(part.first.name);
      auto& [info, parts] = it->second;
      if (!added) {
        if (std::string diff = DescribeSpecDifference(info.spec, part.first);
            !diff.empty()) {
          return absl::DataLossError(
              absl::StrCat(shard->path(), ": ", VariableLabel(info.spec.name),
                           " differs from its part in ",
                           parts.front().file->path(), ": ", diff));
        }
      }
      info.spec = part.first;
      ++info.num_parts;
      parts.push_back({shard.get(), &saved, part.second});
    }
    for (const ps::SavedHashTable& saved : shard->header().hash_tables()) {
      ASSIGN_OR_RETURN(HashEmbeddingSpec spec, CheckedTablePart(*shard, saved));
      auto [it, added] = tables.try_emplace(spec.name);
      auto& [info, parts] = it->second;
      if (!added && info.spec.dim != spec.dim) {
        return absl::DataLossError(
            absl::StrCat(shard->path(), ": ", TableLabel(spec.name),
                         " has dim ", spec.dim, ", its part in ",
                         parts.front().file->path(), " dim ", info.spec.dim));
      }
      info.spec = std::move(spec);
      info.num_rows += saved.num_rows();
      ++info.num_parts;
      parts.push_back({shard.get(), &saved});
    }
  }
  for (auto& [name, entry] : vars) {
    std::vector<Part>& parts = entry.second;
    std::stable_sort(parts.begin(), parts.end(),
                     [](const Part& a, const Part& b) {
                       return a.rows.begin < b.rows.begin;
                     });
    std::vector<const ShardFileReader*> files;
    std::vector<RowRange> rows;
    for (const Part& p : parts) {
      files.push_back(p.file);
      rows.push_back(p.rows);
    }
    RETURN_IF_ERROR(CheckCoverage(dir_, entry.first.spec, files, rows));
    variables_.push_back(std::move(entry.first));
    variable_parts_.push_back(std::move(parts));
  }
  for (auto& [name, entry] : tables) {
    tables_.push_back(std::move(entry.first));
    table_parts_.push_back(std::move(entry.second));
  }
  return absl::OkStatus();
}

absl::Status CheckpointReader::ReadVariable(
    const std::string& name,
    const std::function<absl::Status(const VariableRows&)>& consume) const {
  const auto it =
      std::lower_bound(variables_.begin(), variables_.end(), name,
                       [](const SavedVariableInfo& v, const std::string& n) {
                         return v.spec.name < n;
                       });
  if (it == variables_.end() || it->spec.name != name) {
    return absl::NotFoundError(
        absl::StrCat(VariableLabel(name), " is not in checkpoint ", dir_));
  }
  const VariableSpec& spec = it->spec;
  if (spec.dtype != DType::kFloat32 && spec.dtype != DType::kInt64) {
    return absl::UnimplementedError(absl::StrCat(
        VariableLabel(name), " in checkpoint ", dir_, " is ",
        DTypeName(spec.dtype), "; only float32 and int64 are read"));
  }
  const std::string what = absl::StrCat(VariableLabel(name), " values");
  for (const Part& part : variable_parts_[it - variables_.begin()]) {
    if (part.rows.size() == 0) continue;
    const int64_t elements = part.rows.size() * RowWidth(spec);
    VariableRows rows;
    rows.rows = part.rows;
    if (spec.dtype == DType::kFloat32) {
      ASSIGN_OR_RETURN(
          const std::vector<float> values,
          part.file->ReadFloat32(part.saved->values(), elements, what));
      rows.values = values;
      RETURN_IF_ERROR(consume(rows));
    } else {
      ASSIGN_OR_RETURN(
          const std::vector<int64_t> ints,
          part.file->ReadInt64(part.saved->values(), elements, what));
      rows.ints = ints;
      RETURN_IF_ERROR(consume(rows));
    }
  }
  return absl::OkStatus();
}

namespace {

// One saved part of a table, read: its ids and values, and the order of its
// rows by id (empty when they are saved in order, as writers save them).
struct LoadedTablePart {
  const ShardFileReader* file = nullptr;
  std::vector<int64_t> ids;
  std::vector<float> values;
  std::vector<int64_t> order;

  int64_t size() const { return static_cast<int64_t>(ids.size()); }
  int64_t row(int64_t k) const { return order.empty() ? k : order[k]; }
  int64_t id(int64_t k) const { return ids[row(k)]; }
};

absl::StatusOr<LoadedTablePart> LoadTablePart(const HashEmbeddingSpec& spec,
                                              const ShardFileReader& file,
                                              const ps::SavedHashTable& saved) {
  const std::string label = TableLabel(spec.name);
  LoadedTablePart part;
  part.file = &file;
  const int64_t rows = saved.num_rows();
  ASSIGN_OR_RETURN(
      part.ids, file.ReadInt64(saved.ids(), rows, absl::StrCat(label, " ids")));
  ASSIGN_OR_RETURN(part.values,
                   file.ReadFloat32(saved.values(), rows * spec.dim,
                                    absl::StrCat(label, " values")));
  if (!std::is_sorted(part.ids.begin(), part.ids.end())) {
    part.order.resize(rows);
    std::iota(part.order.begin(), part.order.end(), 0);
    std::sort(part.order.begin(), part.order.end(),
              [&](int64_t a, int64_t b) { return part.ids[a] < part.ids[b]; });
  }
  return part;
}

// Passes the rows of `parts` to `consume` in id order, kBatchRows at a
// time: a k-way merge, whose heap holds each part's next row.
absl::Status MergeTableParts(
    const std::string& checkpoint_dir, const HashEmbeddingSpec& spec,
    const std::vector<LoadedTablePart>& parts,
    const std::function<absl::Status(absl::Span<const int64_t> ids,
                                     absl::Span<const float> values)>&
        consume) {
  using Head = std::pair<int64_t, size_t>;  // id, part
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  std::vector<int64_t> next(parts.size(), 0);
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].size() > 0) heads.push({parts[p].id(0), p});
  }
  std::vector<int64_t> ids;
  std::vector<float> values;
  std::optional<int64_t> last_id;  // the id passed on last, and its file
  const ShardFileReader* last_file = nullptr;
  while (!heads.empty()) {
    const auto [id, p] = heads.top();
    heads.pop();
    const LoadedTablePart& part = parts[p];
    if (last_id == id) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint ", checkpoint_dir, " has row ", id, " of ",
          TableLabel(spec.name), " more than once (in ", last_file->path(),
          last_file == part.file ? ""
                                 : absl::StrCat(" and ", part.file->path()),
          ")"));
    }
    const float* row = part.values.data() + part.row(next[p]) * spec.dim;
    ids.push_back(id);
    values.insert(values.end(), row, row + spec.dim);
    last_id = id;
    last_file = part.file;
    if (++next[p] < part.size()) heads.push({part.id(next[p]), p});
    if (static_cast<int64_t>(ids.size()) == kBatchRows || heads.empty()) {
      RETURN_IF_ERROR(consume(ids, values));
      ids.clear();
      values.clear();
    }
  }
  return absl::OkStatus();
}

// Passes the rows of `state` to `consume` in id order, kBatchRows at a
// time.
absl::Status PassInIdOrder(
    const HashEmbeddingSpec& spec, const HashTableState& state,
    const std::function<absl::Status(absl::Span<const int64_t> ids,
                                     absl::Span<const float> values)>&
        consume) {
  std::vector<int64_t> order(state.ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return state.ids[a] < state.ids[b]; });
  std::vector<int64_t> ids;
  std::vector<float> values;
  for (size_t k = 0; k < order.size(); ++k) {
    const float* row = state.values.data() + order[k] * spec.dim;
    ids.push_back(state.ids[order[k]]);
    values.insert(values.end(), row, row + spec.dim);
    if (static_cast<int64_t>(ids.size()) == kBatchRows ||
        k + 1 == order.size()) {
      RETURN_IF_ERROR(consume(ids, values));
      ids.clear();
      values.clear();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckpointReader::ReadTable(
    const std::string& name,
    const std::function<absl::Status(absl::Span<const int64_t> ids,
                                     absl::Span<const float> values)>& consume)
    const {
  return ReadTable(
      name, [](int64_t) { return absl::OkStatus(); }, consume);
}

absl::Status CheckpointReader::ReadTable(
    const std::string& name,
    const std::function<absl::Status(int64_t rows)>& start,
    const std::function<absl::Status(absl::Span<const int64_t> ids,
                                     absl::Span<const float> values)>& consume)
    const {
  const auto it =
      std::lower_bound(tables_.begin(), tables_.end(), name,
                       [](const SavedTableInfo& t, const std::string& n) {
                         return t.spec.name < n;
                       });
  if (it == tables_.end() || it->spec.name != name) {
    return absl::NotFoundError(
        absl::StrCat(TableLabel(name), " is not in checkpoint ", dir_));
  }
  const HashEmbeddingSpec& spec = it->spec;
  if (is_delta()) {
    // The chain applied as a restore applies it, into one shard of one.
    ASSIGN_OR_RETURN(const HashTableState state,
                     ReadChainTable(spec, chain_, /*shard_index=*/0,
                                    /*num_shards=*/1, /*read_slots=*/false));
    RETURN_IF_ERROR(start(static_cast<int64_t>(state.ids.size())));
    return PassInIdOrder(spec, state, consume);
  }
  RETURN_IF_ERROR(start(it->num_rows));
  std::vector<LoadedTablePart> parts;
  for (const TablePart& saved : table_parts_[it - tables_.begin()]) {
    ASSIGN_OR_RETURN(LoadedTablePart part,
                     LoadTablePart(spec, *saved.file, *saved.saved));
    parts.push_back(std::move(part));
  }
  return MergeTableParts(dir_, spec, parts, consume);
}

}  // namespace distrt
