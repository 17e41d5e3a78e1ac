#ifndef DISTRT_RUNTIME_INPUT_INPUT_FILES_H_
#define DISTRT_RUNTIME_INPUT_INPUT_FILES_H_

// Input files: which files the training data is in, in which format (as a
// RecordFormat the streaming pipeline reads), and, for tests and small
// data, reading one worker's share of them (an InputShard) into Examples.
//
// A worker's share is either whole files or every count-th record of each
// file (see ShardInput); records are counted as the readers produce
// examples, so blank lines, comments and a CSV header take no index and every
// worker skips the same ones.
//
// Errors from the readers pass through unchanged: a malformed line is
// INVALID_ARGUMENT "<file>:<line>: ...", a file that cannot be read has a
// code that follows errno and names the path.
//
// The functions are thread-safe.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/csv_reader.h"
#include "runtime/input/example.h"
#include "runtime/input/feature_spec.h"
#include "runtime/input/input_context.h"
#include "runtime/input/libsvm_reader.h"
#include "runtime/input/record_reader.h"
#include "runtime/input/tfrecord_reader.h"

namespace distrt {

enum class InputFormat {
  kLibsvm,    // see libsvm_reader.h
  kCsv,       // see csv_reader.h
  kTfRecord,  // tf.Examples in TFRecord files, see tfrecord_reader.h
};

// "libsvm" or "svm" (the same format), "csv", or "tfrecord";
// case-insensitive. INVALID_ARGUMENT listing the accepted names otherwise.
absl::StatusOr<InputFormat> ParseInputFormat(absl::string_view name);

// "libsvm", "csv" or "tfrecord".
absl::string_view InputFormatName(InputFormat format);

// The format a file's name suggests: .csv is CSV; .tfrecord, .tfrecords and
// .tfrec, also followed by .gz or .gzip, are TFRecord; anything else LIBSVM.
InputFormat InputFormatForPath(absl::string_view path);

struct InputFormatOptions {
  InputFormat format = InputFormat::kLibsvm;
  LibsvmOptions libsvm;  // used when format is kLibsvm
  CsvOptions csv;        // used when format is kCsv
  // kTfRecord: the files' compression; unset: by each file's name (.gz,
  // .gzip are GZIP).
  std::optional<TfRecordCompression> compression;
  // What the named features are (feature_spec.h): needed for kTfRecord,
  // used for kCsv (whose files then need a header), refused for kLibsvm.
  std::shared_ptr<const FeatureSpec> features;
};

// The RecordFormat that reads files of `options`: INVALID_ARGUMENT for a
// combination that cannot be read (TFRecord without a feature spec, a spec
// with LIBSVM or with CSV that has no header) or a bad spec.
absl::StatusOr<std::shared_ptr<const RecordFormat>> MakeRecordFormat(
    const InputFormatOptions& options);

// Calls `fn` with every example of the file at `path`, in file order,
// holding one at a time; stops at the first error, of the file or of `fn`.
absl::Status ForEachExample(const std::string& path, const RecordFormat& format,
                            const std::function<absl::Status(Example&)>& fn);

// Every example in the file at `path`, in file order.
absl::StatusOr<std::vector<Example>> ReadInputFile(
    const std::string& path, const InputFormatOptions& options);

// This worker's examples: shard.files in order, and of each file the
// records (0-based example index within the file) that shard.Keeps. Each
// example's Example::file is the index of its file in shard.files (and
// Example::line its line), for errors found later. Each
// file is parsed whole, so a malformed line is an error even when it is
// another worker's record: every worker fails the same way. INVALID_ARGUMENT
// when shard.index is not in [0, shard.count).
absl::StatusOr<std::vector<Example>> ReadInputShard(
    const InputShard& shard, const InputFormatOptions& options);

// The files named by `spec`, a comma-separated list of entries, each a
// file, a glob(3) pattern ("data/part-*.svm") or a directory (its files,
// not those of its subdirectories, nor hidden ones). Spaces around entries
// are ignored. Sorted by name and without duplicates, so that every worker
// gets the same list (and ShardInput the same shards) and no file is read
// twice.
//
// NOT_FOUND naming the entry when an entry matches nothing or a directory
// holds no files: a mistyped pattern among several must not silently drop
// part of the data. INVALID_ARGUMENT when `spec` names no entry at all.
// Other errors (e.g. an unreadable directory) have a code that follows
// errno and name the path.
absl::StatusOr<std::vector<std::string>> ExpandInputFiles(
    absl::string_view spec);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INPUT_FILES_H_
