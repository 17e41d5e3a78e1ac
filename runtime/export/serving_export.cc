#include "runtime/export/serving_export.h"

#include <stdio.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "runtime/export/checkpoint_reader.h"
#include "runtime/export/npy_file.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/table_policy.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/format_bytes.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using Json = nlohmann::ordered_json;

constexpr absl::string_view kTablesDir = "tables";
constexpr absl::string_view kVariablesDir = "variables";
constexpr size_t kMaxFileNameBytes = 128;

// A hash that stays the same across runs and builds (absl::Hash does not),
// so that a long name gets the same file name every time.
uint64_t Fnv1a64(absl::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string RandomSuffix() {
  absl::BitGen gen;
  return absl::StrFormat("%016x", absl::Uniform<uint64_t>(gen));
}

// File names for `names` (in order): SafeFileName, with "-2", "-3", ...
// after a name that an earlier one already gave, ignoring case (for file
// systems that do).
std::vector<std::string> UniqueFileNames(
    const std::vector<std::string>& names) {
  absl::flat_hash_set<std::string> taken;
  std::vector<std::string> files;
  for (const std::string& name : names) {
    const std::string base = SafeFileName(name);
    std::string file = base;
    for (int n = 2; !taken.insert(absl::AsciiStrToLower(file)).second; ++n) {
      file = absl::StrCat(base, "-", n);
    }
    files.push_back(std::move(file));
  }
  return files;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string Seconds(absl::Time start) {
  return absl::StrFormat("%.1fs", absl::ToDoubleSeconds(absl::Now() - start));
}

// Where the export goes, and the temporary directory beside it that
// becomes it.
struct OutDir {
  std::string path;
  std::string tmp;
  bool exists = false;  // an empty directory, or an export to replace
};

// Checks that out_dir may be written (before the checkpoint is read, so
// that a mistake costs nothing); creates nothing.
absl::StatusOr<OutDir> CheckOutDir(const ServingExportOptions& options) {
  OutDir out;
  out.path = options.out_dir;
  while (out.path.size() > 1 && out.path.back() == '/') out.path.pop_back();
  ASSIGN_OR_RETURN(out.exists, PathExists(out.path));
  if (out.exists) {
    if (absl::Status s = CheckIsDirectory(out.path); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "export directory ", out.path, " exists and is not a directory"));
    }
    ASSIGN_OR_RETURN(const std::vector<std::string> entries,
                     ListDirectory(out.path));
    const bool is_export = std::find(entries.begin(), entries.end(),
                                     kExportManifestName) != entries.end();
    if (is_export && !options.overwrite) {
      return absl::FailedPreconditionError(absl::StrCat(
          "export directory ", out.path, " holds an earlier export (",
          kExportManifestName, "); pass --overwrite to replace it"));
    }
    if (!is_export && !entries.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "export directory ", out.path, " is not empty and holds no export (",
          kExportManifestName, "); name a new or empty directory"));
    }
  }
  out.tmp = absl::StrCat(out.path, ".tmp-", RandomSuffix());
  return out;
}

// Renames the finished temporary directory to out.path, replacing what was
// there (an empty directory, or an earlier export, moved aside first and
// then removed: a failure to remove it is only reported, since the new
// export is in place by then).
absl::Status Publish(const OutDir& out, const ExportProgress& progress) {
  std::string old;
  if (out.exists) {
    old = absl::StrCat(out.path, ".old-", RandomSuffix());
    if (rename(out.path.c_str(), old.c_str()) != 0) {
      return ErrnoError(absl::StrCat("cannot move aside ", out.path, " to"),
                        old);
    }
  }
  if (rename(out.tmp.c_str(), out.path.c_str()) != 0) {
    absl::Status error =
        ErrnoError(absl::StrCat("cannot rename ", out.tmp, " to"), out.path);
    if (!old.empty()) rename(old.c_str(), out.path.c_str());  // put it back
    return error;
  }
  RETURN_IF_ERROR(SyncDirectory(DirName(out.path)));
  if (!old.empty()) {
    if (absl::Status removed = RemoveDirectoryTree(old); !removed.ok()) {
      progress(absl::StrCat("the earlier export, moved to ", old,
                            ", could not be removed: ", removed.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ExportedTable> WriteTable(const CheckpointReader& reader,
                                         const SavedTableInfo& info,
                                         const std::string& file_name,
                                         const std::string& root) {
  ExportedTable table;
  table.name = info.spec.name;
  table.dim = info.spec.dim;
  const std::string dir = JoinPath(kTablesDir, file_name);
  table.ids_file = JoinPath(dir, "ids.npy");
  table.values_file = JoinPath(dir, "values.npy");
  RETURN_IF_ERROR(CreateDirectories(JoinPath(root, dir)));
  std::unique_ptr<NpyWriter> ids;
  std::unique_ptr<NpyWriter> values;
  // The files' headers need the row count, which for a delta checkpoint
  // is known only once the reader has applied its chain.
  const auto start = [&](int64_t rows) -> absl::Status {
    table.rows = rows;
    ASSIGN_OR_RETURN(ids, NpyWriter::Create(JoinPath(root, table.ids_file),
                                            NpyType::kInt64, {table.rows}));
    ASSIGN_OR_RETURN(
        values, NpyWriter::Create(JoinPath(root, table.values_file),
                                  NpyType::kFloat32, {table.rows, table.dim}));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(reader.ReadTable(table.name, start,
                                   [&](absl::Span<const int64_t> batch_ids,
                                       absl::Span<const float> batch_values) {
                                     RETURN_IF_ERROR(ids->Append(batch_ids));
                                     return values->Append(batch_values);
                                   }));
  RETURN_IF_ERROR(ids->Commit());
  RETURN_IF_ERROR(values->Commit());
  // What a lookup of an id the table does not hold got in training.
  table.unknown_row_file = JoinPath(dir, "unknown_row.npy");
  const std::vector<float> unknown_row = UnknownRowValues(info.spec);
  ASSIGN_OR_RETURN(std::unique_ptr<NpyWriter> unknown,
                   NpyWriter::Create(JoinPath(root, table.unknown_row_file),
                                     NpyType::kFloat32, {table.dim}));
  RETURN_IF_ERROR(unknown->Append(absl::MakeConstSpan(unknown_row)));
  RETURN_IF_ERROR(unknown->Commit());
  table.bytes =
      ids->file_bytes() + values->file_bytes() + unknown->file_bytes();
  return table;
}

absl::StatusOr<ExportedVariable> WriteVariable(const CheckpointReader& reader,
                                               const SavedVariableInfo& info,
                                               const std::string& file_name,
                                               const std::string& root) {
  ExportedVariable variable;
  variable.name = info.spec.name;
  variable.shape = info.spec.shape;
  variable.file = JoinPath(kVariablesDir, absl::StrCat(file_name, ".npy"));
  const bool floats = info.spec.dtype == DType::kFloat32;
  variable.dtype = floats ? "float32" : "int64";
  ASSIGN_OR_RETURN(
      std::unique_ptr<NpyWriter> file,
      NpyWriter::Create(JoinPath(root, variable.file),
                        floats ? NpyType::kFloat32 : NpyType::kInt64,
                        variable.shape));
  RETURN_IF_ERROR(reader.ReadVariable(
      variable.name, [&](const CheckpointReader::VariableRows& rows) {
        return floats ? file->Append(rows.values) : file->Append(rows.ints);
      }));
  RETURN_IF_ERROR(file->Commit());
  variable.bytes = file->file_bytes();
  return variable;
}

Json ManifestOf(const ServingExport& exported,
                const std::vector<SavedTableInfo>& tables) {
  Json manifest;
  manifest["format"] = std::string(kExportFormat);
  manifest["format_version"] = kExportFormatVersion;
  manifest["checkpoint"] = exported.checkpoint_dir;
  manifest["step"] = exported.step;
  manifest["num_shards"] = exported.num_shards;
  manifest["hash_tables"] = Json::array();
  for (size_t t = 0; t < exported.tables.size(); ++t) {
    const ExportedTable& table = exported.tables[t];
    manifest["hash_tables"].push_back(
        {{"name", table.name},
         {"dim", table.dim},
         {"rows", table.rows},
         {"ids", table.ids_file},
         {"ids_dtype", "int64"},
         {"values", table.values_file},
         {"values_dtype", "float32"},
         {"unknown_row",
          std::string(UnknownRowName(tables[t].spec.policy.admission.unknown))},
         {"unknown_row_values", table.unknown_row_file}});
  }
  manifest["variables"] = Json::array();
  for (const ExportedVariable& variable : exported.variables) {
    manifest["variables"].push_back({{"name", variable.name},
                                     {"file", variable.file},
                                     {"dtype", variable.dtype},
                                     {"shape", variable.shape}});
  }
  return manifest;
}

// Everything of `reader` into out.tmp, the manifest last.
absl::StatusOr<ServingExport> WriteExport(const CheckpointReader& reader,
                                          const OutDir& out,
                                          const ExportProgress& progress) {
  RETURN_IF_ERROR(CreateDirectories(JoinPath(out.tmp, kTablesDir)));
  RETURN_IF_ERROR(CreateDirectories(JoinPath(out.tmp, kVariablesDir)));
  ServingExport exported;
  exported.out_dir = out.path;
  exported.checkpoint_dir = reader.dir();
  exported.step = reader.step();
  exported.num_shards = reader.num_shards();
  std::vector<std::string> names;
  for (const SavedTableInfo& t : reader.tables()) names.push_back(t.spec.name);
  const std::vector<std::string> table_files = UniqueFileNames(names);
  names.clear();
  for (const SavedVariableInfo& v : reader.variables()) {
    names.push_back(v.spec.name);
  }
  const std::vector<std::string> variable_files = UniqueFileNames(names);
  for (size_t t = 0; t < reader.tables().size(); ++t) {
    const absl::Time start = absl::Now();
    ASSIGN_OR_RETURN(ExportedTable table, WriteTable(reader, reader.tables()[t],
                                                     table_files[t], out.tmp));
    const std::string from =
        reader.is_delta()
            ? absl::StrCat(reader.chain().size(), " checkpoints of its chain")
            : absl::StrCat(reader.tables()[t].num_parts, " shard file(s)");
    progress(absl::StrCat("table ", table.name, ": ", table.rows,
                          " rows of dim ", table.dim, " from ", from, " -> ",
                          JoinPath(kTablesDir, table_files[t]), "/ (",
                          FormatBytes(table.bytes), ", ", Seconds(start), ")"));
    exported.bytes += table.bytes;
    exported.tables.push_back(std::move(table));
  }
  for (size_t v = 0; v < reader.variables().size(); ++v) {
    ASSIGN_OR_RETURN(ExportedVariable variable,
                     WriteVariable(reader, reader.variables()[v],
                                   variable_files[v], out.tmp));
    progress(absl::StrCat("variable ", variable.name, ": ", variable.dtype, " ",
                          ShapeString(variable.shape), " from ",
                          reader.variables()[v].num_parts, " shard file(s) -> ",
                          variable.file, " (", FormatBytes(variable.bytes),
                          ")"));
    exported.bytes += variable.bytes;
    exported.variables.push_back(std::move(variable));
  }
  const std::string manifest =
      ManifestOf(exported, reader.tables()).dump(2) + "\n";
  RETURN_IF_ERROR(
      WriteFileAtomically(JoinPath(out.tmp, kExportManifestName), {manifest}));
  exported.bytes += manifest.size();
  return exported;
}

}  // namespace

std::string SafeFileName(absl::string_view name) {
  std::string file;
  for (char c : name) {
    if (c == '/') {
      file.push_back('.');
    } else if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
               c == '_' || c == '-') {
      file.push_back(c);
    } else {
      file.push_back('_');
    }
  }
  if (file.empty() || file.front() == '.') file.insert(file.begin(), '_');
  if (file.size() > kMaxFileNameBytes) {
    file.resize(kMaxFileNameBytes - 17);
    absl::StrAppend(&file, "-", absl::StrFormat("%016x", Fnv1a64(name)));
  }
  return file;
}

absl::StatusOr<ServingExport> ExportForServing(
    const ServingExportOptions& options, const ExportProgress& progress) {
  if (options.out_dir.empty()) {
    return absl::InvalidArgumentError("no export directory given");
  }
  ASSIGN_OR_RETURN(const OutDir out, CheckOutDir(options));
  ASSIGN_OR_RETURN(
      std::unique_ptr<CheckpointReader> reader,
      CheckpointReader::Open(options.checkpoint, options.allow_uncommitted));
  const std::vector<std::string> chain = reader->chain();
  progress(absl::StrCat(
      "exporting ", reader->dir(), " (step ", reader->step(), ", ",
      reader->num_shards(), " shard file(s)",
      reader->is_delta()
          ? absl::StrCat(", a delta: base ", chain.front(), " and ",
                         chain.size() - 1, " delta(s) applied")
          : "",
      "): ", reader->tables().size(), " hash table(s), ",
      reader->variables().size(), " variable(s) -> ", options.out_dir));
  absl::StatusOr<ServingExport> exported = WriteExport(*reader, out, progress);
  if (exported.ok()) {
    if (absl::Status published = Publish(out, progress); !published.ok()) {
      exported = published;
    }
  }
  if (!exported.ok()) {
    RemoveDirectoryTree(out.tmp).IgnoreError();  // what was written so far
  }
  return exported;
}

}  // namespace distrt
