#ifndef DISTRT_RUNTIME_INPUT_FEATURE_PARSER_H_
#define DISTRT_RUNTIME_INPUT_FEATURE_PARSER_H_

// FeatureParser: a FeatureSpec compiled for parsing records with named
// features (a serialized tf.Example, a CSV row with a header) into the
// Example layout feature_spec.h describes. Immutable after Create, so every
// method is const and may be called from many threads at once.
//
// tf.Example (ParseTfExample), as tf.io.parse_example would read it:
//   label        float_list or int64_list of exactly one finite value
//   numeric      float_list of exactly `length` finite values (an int64_list
//                is an error, as in TensorFlow, which requires the declared
//                dtype); missing: `length` copies of the default, or an error
//   identity     int64_list, each id in [0, buckets)
//   hash_bucket  bytes_list: Fingerprint64(value) % buckets; int64_list: the
//                same of each value written in decimal ("42"), as TF's
//                categorical_column_with_hash_bucket does for integers
//   hashed       int64_list kept whole; bytes_list: Fingerprint64(value)
//                reinterpreted as int64
//   weights      the group's weight_feature: a float_list of finite values,
//                one per id of the group
// A Feature whose list is not set at all counts as missing; a present but
// empty list is zero values. A missing categorical feature gives no ids
// (an error when it is `required`).
//
// Errors are INVALID_ARGUMENT, "<where>: feature \"X\": <what>", e.g.
//   train.tfrecord: record 7 at byte 1234: feature "I3": 2 values, expected 1
// and "<where>: not a serialized tf.Example" for bytes that do not parse.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/example.h"
#include "runtime/input/feature_spec.h"
#include "runtime/input/record_reader.h"

namespace distrt {

namespace feature_parser_internal {
// One feature the parser reads, in the order it fills an Example; defined
// in the .cc.
struct Input;
}  // namespace feature_parser_internal

class FeatureParser {
 public:
  // Checks `spec` (CheckFeatureSpec, with "feature spec" naming it in
  // errors) and compiles it.
  static absl::StatusOr<std::shared_ptr<const FeatureParser>> Create(
      FeatureSpec spec);

  const FeatureSpec& spec() const { return spec_; }

  // Parses one serialized tf.Example. Example::line is where.position.line,
  // or where.position.index + 1 for binary formats; Example::file is left
  // at -1 for the pipeline to set.
  absl::StatusOr<Example> ParseTfExample(absl::string_view serialized,
                                         const RecordLocation& where) const;

  // Whether a CSV header `columns` (names without surrounding spaces) has a
  // column for every feature of the spec, each exactly once, and every
  // numeric feature has length 1 (a cell holds one value). INVALID_ARGUMENT
  // naming `path` and the feature otherwise. Call it once per header.
  absl::Status CheckColumns(const std::vector<std::string>& columns,
                            absl::string_view path) const;

  // Parses one CSV row whose header is `columns`, by column name, with
  // fields.size() == columns.size(). An empty field is a missing feature.
  // A cell holds one value:
  //   label, numeric  a float (surrounding spaces allowed)
  //   identity        an int64 id in [0, buckets)
  //   hash_bucket     the field as is, hashed like a bytes_list value
  //   hashed          an int64 id when the field is one, else the field
  //                   hashed by Fingerprint64
  //   weights         a float, the weight of the one id
  // Columns that are no feature of the spec are ignored. The header's
  // problems are CheckColumns' errors, here prefixed by `where`.
  absl::StatusOr<Example> ParseNamedRow(
      const std::vector<std::string>& columns,
      const std::vector<absl::string_view>& fields,
      const RecordLocation& where) const;

  ~FeatureParser();
  FeatureParser(const FeatureParser&) = delete;
  FeatureParser& operator=(const FeatureParser&) = delete;

 private:
  explicit FeatureParser(FeatureSpec spec);

  // The header's column for each of inputs_, or its problems (a message
  // without the prefix naming the file or record).
  absl::Status MapColumns(const std::vector<std::string>& columns,
                          std::vector<int>* column_of_input) const;
  // An Example with the vectors sized and reserved for this spec.
  Example NewExample(const RecordLocation& where) const;

  // Constant after construction. inputs_ point into spec_, which never
  // changes (and the parser is neither copied nor moved).
  const FeatureSpec spec_;
  std::vector<feature_parser_internal::Input> inputs_;
  // Name -> index in inputs_, for CSV headers.
  absl::flat_hash_map<std::string, size_t> input_of_name_;
  // Floats in Example::dense (spec_.num_dense()).
  int64_t num_dense_ = 0;
  // Per group, the most ids a record has when every feature of the group
  // has one value (its feature count): a reservation hint.
  std::vector<size_t> group_sizes_;
};

// A RecordParser for TFRecord files of serialized tf.Examples.
std::shared_ptr<const RecordParser> MakeTfExampleRecordParser(
    std::shared_ptr<const FeatureParser> parser);

// A RecordParser for the rows (lines) of a CSV file whose header is
// `columns`, split at `delimiter` as SplitCsvFields does and mapped by name
// (ParseNamedRow). CheckColumns' error, naming `path`, when the header
// lacks a feature of the spec. A row with another number of fields than
// the header is the record's error.
absl::StatusOr<std::shared_ptr<const RecordParser>> MakeNamedCsvRecordParser(
    std::shared_ptr<const FeatureParser> parser,
    std::vector<std::string> columns, char delimiter, absl::string_view path);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_FEATURE_PARSER_H_
