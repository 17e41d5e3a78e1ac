#ifndef DISTRT_RUNTIME_EXPORT_SERVING_EXPORT_H_
#define DISTRT_RUNTIME_EXPORT_SERVING_EXPORT_H_

// ExportForServing: a trained model out of a committed checkpoint, as files
// that a serving system loads without this runtime (what `distctl export`
// writes; docs/export.md describes the layout for its readers):
//
//   OUT/manifest.json                   what is where (written last)
//   OUT/tables/<table>/ids.npy          int64 [n], ascending
//   OUT/tables/<table>/values.npy       float32 [n, dim], row i is ids[i]'s
//   OUT/variables/<variable>.npy        the variable whole, in its shape
//
// with <table> and <variable> the names made safe as file names
// (SafeFileName; the manifest maps each name to its files). Every hash
// table's rows are merged from all shard files and sorted by id; every
// variable is put together from the row ranges the ps tasks held.
// Optimizer slots and row metadata are left out: serving does not use them.
//
// OUT appears whole or not at all: everything is written into a temporary
// directory beside it, renamed to OUT at the end. OUT must not exist, or be
// an empty directory, or (with `overwrite`) hold an earlier export (its
// manifest.json), which is replaced.
//
// Memory: one table (its ids and values) or one saved part of a variable at
// a time, plus write buffers.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distrt {

inline constexpr absl::string_view kExportManifestName = "manifest.json";
// The manifest's "format" and "format_version".
inline constexpr absl::string_view kExportFormat = "distrt-serving-export";
inline constexpr int kExportFormatVersion = 1;

struct ServingExportOptions {
  // A checkpoint root directory (its latest committed checkpoint is
  // exported) or a ckpt-<step> directory.
  std::string checkpoint;
  std::string out_dir;
  // Export a ckpt-<step> directory that its root's index does not list.
  bool allow_uncommitted = false;
  // Replace an earlier export in out_dir.
  bool overwrite = false;
};

struct ExportedTable {
  std::string name;
  int64_t dim = 0;
  int64_t rows = 0;
  std::string ids_file;     // relative to the export directory
  std::string values_file;  // relative to the export directory
  // [dim] float32: what ids the table does not hold read (zeros, or the
  // table's shared unknown row).
  std::string unknown_row_file;
  int64_t bytes = 0;  // of both files
};

struct ExportedVariable {
  std::string name;
  std::string dtype;  // "float32" or "int64"
  std::vector<int64_t> shape;
  std::string file;  // relative to the export directory
  int64_t bytes = 0;
};

struct ServingExport {
  std::string out_dir;
  std::string checkpoint_dir;  // the ckpt-<step> exported
  int64_t step = 0;
  int num_shards = 0;
  std::vector<ExportedTable> tables;
  std::vector<ExportedVariable> variables;
  int64_t bytes = 0;  // of every file written
};

// One line per table and variable as it is written, for a progress log.
using ExportProgress = std::function<void(absl::string_view line)>;

// Errors: CheckpointReader::Open's and its reads' (NOT_FOUND,
// FAILED_PRECONDITION or DATA_LOSS naming the checkpoint's path, file,
// variable or table); FAILED_PRECONDITION naming out_dir when it holds
// something other than an export (or an export, without `overwrite`);
// INVALID_ARGUMENT for an empty checkpoint or out_dir; the file system's
// errors naming the path. On error out_dir is as it was.
absl::StatusOr<ServingExport> ExportForServing(
    const ServingExportOptions& options, const ExportProgress& progress);

// `name` as a file name: '/' becomes '.', other characters outside
// [A-Za-z0-9._-] become '_', a leading '.' (or an empty name) gets a '_'
// before it, and names beyond 128 bytes are cut, with a hash of the whole
// name appended. Distinct names can meet ("a/b" and "a.b"): the export then
// appends "-2", "-3", ... to the later ones.
std::string SafeFileName(absl::string_view name);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_EXPORT_SERVING_EXPORT_H_
