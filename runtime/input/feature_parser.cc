#include "runtime/input/feature_parser.h"

#include <farmhash.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "proto/example.pb.h"
#include "runtime/input/csv_reader.h"
#include "runtime/util/status_macros.h"

namespace distrt {

namespace feature_parser_internal {

struct Input {
  enum class Role { kLabel, kNumeric, kCategorical, kWeight };
  Role role = Role::kLabel;
  std::string name;
  // kNumeric: the spec's feature, and where its values start in
  // Example::dense.
  const NumericFeature* numeric = nullptr;
  int64_t dense_offset = 0;
  // kCategorical: the spec's feature.
  const CategoricalFeature* categorical = nullptr;
  // kCategorical and kWeight: the index of the group in Example::groups.
  size_t group = 0;
  // kWeight: the name of the group's one feature, for messages.
  const std::string* weighted = nullptr;
};

}  // namespace feature_parser_internal

namespace {

using feature_parser_internal::Input;
using Role = Input::Role;

// TF's tf.strings.to_hash_bucket_fast: FarmHash's Fingerprint64 of the
// bytes, modulo the bucket count, both as unsigned 64-bit integers.
int64_t HashBucket(absl::string_view value, int64_t buckets) {
  return static_cast<int64_t>(util::Fingerprint64(value.data(), value.size()) %
                              static_cast<uint64_t>(buckets));
}

// The whole 64-bit fingerprint, its bits read as an int64 id.
int64_t HashWhole(absl::string_view value) {
  return static_cast<int64_t>(util::Fingerprint64(value.data(), value.size()));
}

// What TF's categorical_column_with_hash_bucket hashes for an integer: its
// decimal string (tf.strings.as_string). AlphaNum formats into a buffer of
// its own, without allocating.
int64_t HashBucketOfInteger(int64_t value, int64_t buckets) {
  return HashBucket(absl::AlphaNum(value).Piece(), buckets);
}

absl::Status Problem(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

// "<where>: feature \"X\": <what>", from a Problem.
absl::Status FeatureError(const RecordLocation& where, absl::string_view name,
                          const absl::Status& problem) {
  return absl::InvalidArgumentError(absl::StrCat(
      where.ToString(), ": feature \"", name, "\": ", problem.message()));
}

absl::string_view ListName(tf::Feature::KindCase kind) {
  switch (kind) {
    case tf::Feature::kBytesList:
      return "a bytes_list";
    case tf::Feature::kFloatList:
      return "a float_list";
    case tf::Feature::kInt64List:
      return "an int64_list";
    case tf::Feature::KIND_NOT_SET:
      break;
  }
  return "no list";
}

absl::Status WrongType(const tf::Feature& feature, absl::string_view expected) {
  return Problem(absl::StrCat("is ", ListName(feature.kind_case()),
                              ", expected ", expected));
}

absl::Status NotFinite(float value, int index) {
  return Problem(absl::StrCat("value ", index, " is ", value,
                              ", expected a finite number"));
}

absl::Status IdOutOfRange(int64_t id, int index, int64_t buckets) {
  return Problem(absl::StrCat("id ", id, " (value ", index,
                              ") is out of range [0, ", buckets, ")"));
}

// Whether `value` is not a NaN or an infinity.
bool IsFinite(float value) { return std::isfinite(value); }

// --- tf.Example ---------------------------------------------------------
// Each reader takes the feature (null when missing) and returns a Problem;
// the caller names the record and the feature.

absl::Status ReadTfLabel(const tf::Feature* feature, Example* example) {
  if (feature == nullptr) return Problem("missing (the label is required)");
  float value = 0.0f;
  if (feature->has_float_list()) {
    const auto& values = feature->float_list().value();
    if (values.size() != 1) {
      return Problem(
          absl::StrCat(values.size(), " values, expected 1 (the label)"));
    }
    value = values[0];
  } else if (feature->has_int64_list()) {
    const auto& values = feature->int64_list().value();
    if (values.size() != 1) {
      return Problem(
          absl::StrCat(values.size(), " values, expected 1 (the label)"));
    }
    value = static_cast<float>(values[0]);
  } else {
    return WrongType(*feature, "a float_list or int64_list (the label)");
  }
  if (!IsFinite(value)) return NotFinite(value, 0);
  example->label = value;
  return absl::OkStatus();
}

absl::Status ReadTfNumeric(const Input& input, const tf::Feature* feature,
                           Example* example) {
  const NumericFeature& spec = *input.numeric;
  float* out = example->dense.data() + input.dense_offset;
  if (feature == nullptr) {
    if (!spec.has_default) {
      return Problem("missing, and the feature spec gives it no default");
    }
    std::fill(out, out + spec.length, spec.default_value);
    return absl::OkStatus();
  }
  // TF's parse_example requires the declared dtype too: an int64_list here
  // is more likely a mix-up of features than a float to convert.
  if (!feature->has_float_list()) return WrongType(*feature, "a float_list");
  const auto& values = feature->float_list().value();
  if (values.size() != spec.length) {
    return Problem(absl::StrCat(values.size(), " values, expected ",
                                spec.length, " (its length)"));
  }
  for (int i = 0; i < values.size(); ++i) {
    if (!IsFinite(values[i])) return NotFinite(values[i], i);
  }
  std::memcpy(out, values.data(), values.size() * sizeof(float));
  return absl::OkStatus();
}

absl::Status ReadTfCategorical(const Input& input, const tf::Feature* feature,
                               Example* example) {
  const CategoricalFeature& spec = *input.categorical;
  if (feature == nullptr) {
    if (spec.required) return Problem("missing, and it is required");
    return absl::OkStatus();
  }
  std::vector<int64_t>& ids = example->groups[input.group].ids;
  switch (spec.kind) {
    case CategoricalKind::kIdentity: {
      if (!feature->has_int64_list()) {
        return WrongType(*feature, "an int64_list (kind identity)");
      }
      const auto& values = feature->int64_list().value();
      for (int i = 0; i < values.size(); ++i) {
        if (values[i] < 0 || values[i] >= spec.buckets) {
          return IdOutOfRange(values[i], i, spec.buckets);
        }
      }
      ids.insert(ids.end(), values.begin(), values.end());
      return absl::OkStatus();
    }
    case CategoricalKind::kHashBucket:
      if (feature->has_bytes_list()) {
        for (const std::string& value : feature->bytes_list().value()) {
          ids.push_back(HashBucket(value, spec.buckets));
        }
      } else if (feature->has_int64_list()) {
        for (int64_t value : feature->int64_list().value()) {
          ids.push_back(HashBucketOfInteger(value, spec.buckets));
        }
      } else {
        return WrongType(*feature,
                         "a bytes_list or int64_list (kind hash_bucket)");
      }
      return absl::OkStatus();
    case CategoricalKind::kHashed:
      if (feature->has_int64_list()) {
        const auto& values = feature->int64_list().value();
        ids.insert(ids.end(), values.begin(), values.end());
      } else if (feature->has_bytes_list()) {
        for (const std::string& value : feature->bytes_list().value()) {
          ids.push_back(HashWhole(value));
        }
      } else {
        return WrongType(*feature, "an int64_list or bytes_list (kind hashed)");
      }
      return absl::OkStatus();
  }
  return Problem("has a kind the parser does not know");
}

absl::Status CountWeights(const Input& input, size_t weights, size_t ids) {
  if (weights == ids) return absl::OkStatus();
  return Problem(absl::StrCat(weights, " weights for the ", ids,
                              " ids of feature \"", *input.weighted,
                              "\", expected one weight per id"));
}

absl::Status ReadTfWeights(const Input& input, const tf::Feature* feature,
                           Example* example) {
  GroupIds& group = example->groups[input.group];
  if (feature == nullptr) {
    if (group.ids.empty()) return absl::OkStatus();
    return Problem(absl::StrCat("missing, but feature \"", *input.weighted,
                                "\" has ", group.ids.size(), " ids to weigh"));
  }
  if (!feature->has_float_list()) {
    return WrongType(*feature, "a float_list (the weights)");
  }
  const auto& values = feature->float_list().value();
  RETURN_IF_ERROR(CountWeights(input, values.size(), group.ids.size()));
  for (int i = 0; i < values.size(); ++i) {
    if (!IsFinite(values[i])) return NotFinite(values[i], i);
  }
  group.weights.assign(values.begin(), values.end());
  return absl::OkStatus();
}

// --- CSV rows -----------------------------------------------------------
// Each reader takes the field ("" when missing).

absl::StatusOr<float> ParseFloatField(absl::string_view field) {
  float value = 0.0f;
  if (!absl::SimpleAtof(field, &value)) {
    return Problem(absl::StrCat("\"", field, "\" is not a number"));
  }
  if (!IsFinite(value)) {
    return Problem(absl::StrCat("\"", field, "\" is not a finite number"));
  }
  return value;
}

absl::Status ReadCsvLabel(absl::string_view field, Example* example) {
  field = absl::StripAsciiWhitespace(field);
  if (field.empty()) return Problem("missing (the label is required)");
  ASSIGN_OR_RETURN(example->label, ParseFloatField(field));
  return absl::OkStatus();
}

absl::Status ReadCsvNumeric(const Input& input, absl::string_view field,
                            Example* example) {
  const NumericFeature& spec = *input.numeric;
  float* out = example->dense.data() + input.dense_offset;
  field = absl::StripAsciiWhitespace(field);
  if (field.empty()) {
    if (!spec.has_default) {
      return Problem("missing, and the feature spec gives it no default");
    }
    *out = spec.default_value;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(*out, ParseFloatField(field));
  return absl::OkStatus();
}

absl::Status ReadCsvCategorical(const Input& input, absl::string_view field,
                                Example* example) {
  const CategoricalFeature& spec = *input.categorical;
  // Hashed strings are taken as they are, as TF hashes them; spaces around
  // an integer do not matter.
  const absl::string_view stripped = absl::StripAsciiWhitespace(field);
  const bool missing = spec.kind == CategoricalKind::kHashBucket
                           ? field.empty()
                           : stripped.empty();
  if (missing) {
    if (spec.required) return Problem("missing, and it is required");
    return absl::OkStatus();
  }
  std::vector<int64_t>& ids = example->groups[input.group].ids;
  switch (spec.kind) {
    case CategoricalKind::kIdentity: {
      int64_t id = 0;
      if (!absl::SimpleAtoi(stripped, &id)) {
        return Problem(absl::StrCat("\"", field,
                                    "\" is not an integer id (kind identity)"));
      }
      if (id < 0 || id >= spec.buckets)
        return IdOutOfRange(id, 0, spec.buckets);
      ids.push_back(id);
      return absl::OkStatus();
    }
    case CategoricalKind::kHashBucket:
      ids.push_back(HashBucket(field, spec.buckets));
      return absl::OkStatus();
    case CategoricalKind::kHashed: {
      int64_t id = 0;
      ids.push_back(absl::SimpleAtoi(stripped, &id) ? id : HashWhole(field));
      return absl::OkStatus();
    }
  }
  return Problem("has a kind the parser does not know");
}

absl::Status ReadCsvWeight(const Input& input, absl::string_view field,
                           Example* example) {
  GroupIds& group = example->groups[input.group];
  field = absl::StripAsciiWhitespace(field);
  if (field.empty()) {
    if (group.ids.empty()) return absl::OkStatus();
    return Problem(absl::StrCat("missing, but feature \"", *input.weighted,
                                "\" has ", group.ids.size(), " ids to weigh"));
  }
  RETURN_IF_ERROR(CountWeights(input, 1, group.ids.size()));
  ASSIGN_OR_RETURN(float weight, ParseFloatField(field));
  group.weights.assign(1, weight);
  return absl::OkStatus();
}

class TfExampleRecordParser : public RecordParser {
 public:
  explicit TfExampleRecordParser(std::shared_ptr<const FeatureParser> parser)
      : parser_(std::move(parser)) {}

  absl::StatusOr<Example> Parse(absl::string_view record,
                                const RecordLocation& where) const override {
    return parser_->ParseTfExample(record, where);
  }

 private:
  const std::shared_ptr<const FeatureParser> parser_;
};

class NamedCsvRecordParser : public RecordParser {
 public:
  NamedCsvRecordParser(std::shared_ptr<const FeatureParser> parser,
                       std::vector<std::string> columns, char delimiter)
      : parser_(std::move(parser)),
        columns_(std::move(columns)),
        delimiter_(delimiter) {}

  absl::StatusOr<Example> Parse(absl::string_view record,
                                const RecordLocation& where) const override {
    absl::StatusOr<std::vector<absl::string_view>> fields =
        SplitCsvFields(record, delimiter_);
    if (!fields.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where.ToString(), ": ", fields.status().message()));
    }
    if (fields->size() != columns_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where.ToString(), ": ", fields->size(),
                       " columns, expected ", columns_.size()));
    }
    return parser_->ParseNamedRow(columns_, *fields, where);
  }

 private:
  const std::shared_ptr<const FeatureParser> parser_;
  const std::vector<std::string> columns_;
  const char delimiter_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const RecordParser>> MakeNamedCsvRecordParser(
    std::shared_ptr<const FeatureParser> parser,
    std::vector<std::string> columns, char delimiter, absl::string_view path) {
  RETURN_IF_ERROR(parser->CheckColumns(columns, path));
  return std::make_shared<NamedCsvRecordParser>(std::move(parser),
                                                std::move(columns), delimiter);
}

absl::StatusOr<std::shared_ptr<const FeatureParser>> FeatureParser::Create(
    FeatureSpec spec) {
  RETURN_IF_ERROR(CheckFeatureSpec(spec, "feature spec"));
  return std::shared_ptr<const FeatureParser>(
      new FeatureParser(std::move(spec)));
}

FeatureParser::FeatureParser(FeatureSpec spec)
    : spec_(std::move(spec)), num_dense_(spec_.num_dense()) {
  Input label;
  label.role = Role::kLabel;
  label.name = spec_.label;
  inputs_.push_back(std::move(label));
  int64_t offset = 0;
  for (const NumericFeature& feature : spec_.numeric) {
    Input input;
    input.role = Role::kNumeric;
    input.name = feature.name;
    input.numeric = &feature;
    input.dense_offset = offset;
    offset += feature.length;
    inputs_.push_back(std::move(input));
  }
  for (size_t g = 0; g < spec_.groups.size(); ++g) {
    const EmbeddingGroup& group = spec_.groups[g];
    for (const std::string& name : group.features) {
      Input input;
      input.role = Role::kCategorical;
      input.name = name;
      input.categorical = spec_.FindCategorical(name);
      input.group = g;
      inputs_.push_back(std::move(input));
    }
    // After the group's feature, so that its ids are known when the
    // weights are counted.
    if (!group.weight_feature.empty()) {
      Input input;
      input.role = Role::kWeight;
      input.name = group.weight_feature;
      input.group = g;
      input.weighted = &group.features.front();
      inputs_.push_back(std::move(input));
    }
    group_sizes_.push_back(group.features.size());
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    input_of_name_.emplace(inputs_[i].name, i);
  }
}

FeatureParser::~FeatureParser() = default;

Example FeatureParser::NewExample(const RecordLocation& where) const {
  Example example;
  example.line =
      where.position.line != 0 ? where.position.line : where.position.index + 1;
  example.dense.resize(num_dense_);
  example.groups.resize(spec_.groups.size());
  for (size_t g = 0; g < spec_.groups.size(); ++g) {
    example.groups[g].ids.reserve(group_sizes_[g]);
  }
  return example;
}

absl::StatusOr<Example> FeatureParser::ParseTfExample(
    absl::string_view serialized, const RecordLocation& where) const {
  if (serialized.size() >
      static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat(where.ToString(), ": a record of ", serialized.size(),
                     " bytes is larger than a tf.Example can be"));
  }
  // One message per parsing thread (the parser is shared by the pipeline's
  // threads), reused so that its map and strings keep their capacity from
  // record to record. Not an arena: resetting one frees its maps' storage
  // through libprotobuf's cleanup list, which crashed under
  // ThreadSanitizer (libprotobuf is not instrumented), and a reused message
  // costs little more.
  thread_local tf::Example reused;
  tf::Example* proto = &reused;
  if (!proto->ParseFromArray(serialized.data(),
                             static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(where.ToString(), ": not a serialized tf.Example (",
                     serialized.size(), " bytes that do not parse as one)"));
  }
  const auto& features = proto->features().feature();
  Example example = NewExample(where);
  for (const Input& input : inputs_) {
    const tf::Feature* feature = nullptr;
    if (auto it = features.find(input.name);
        it != features.end() &&
        it->second.kind_case() != tf::Feature::KIND_NOT_SET) {
      feature = &it->second;
    }
    absl::Status problem;
    switch (input.role) {
      case Role::kLabel:
        problem = ReadTfLabel(feature, &example);
        break;
      case Role::kNumeric:
        problem = ReadTfNumeric(input, feature, &example);
        break;
      case Role::kCategorical:
        problem = ReadTfCategorical(input, feature, &example);
        break;
      case Role::kWeight:
        problem = ReadTfWeights(input, feature, &example);
        break;
    }
    if (!problem.ok()) return FeatureError(where, input.name, problem);
  }
  return example;
}

absl::Status FeatureParser::MapColumns(
    const std::vector<std::string>& columns,
    std::vector<int>* column_of_input) const {
  column_of_input->assign(inputs_.size(), -1);
  for (size_t c = 0; c < columns.size(); ++c) {
    auto it = input_of_name_.find(columns[c]);
    if (it == input_of_name_.end()) continue;
    int& column = (*column_of_input)[it->second];
    if (column >= 0) {
      // Columns are 1-based in messages, as the CSV reader counts them.
      return Problem(absl::StrCat("feature \"", columns[c],
                                  "\": the header has it twice, columns ",
                                  column + 1, " and ", c + 1));
    }
    column = static_cast<int>(c);
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Input& input = inputs_[i];
    if ((*column_of_input)[i] < 0) {
      return Problem(absl::StrCat("feature \"", input.name,
                                  "\": the header has no column of that name"));
    }
    if (input.role == Role::kNumeric && input.numeric->length != 1) {
      return Problem(absl::StrCat("feature \"", input.name, "\": length ",
                                  input.numeric->length,
                                  ", but a CSV cell holds one value"));
    }
  }
  return absl::OkStatus();
}

absl::Status FeatureParser::CheckColumns(
    const std::vector<std::string>& columns, absl::string_view path) const {
  std::vector<int> column_of_input;
  absl::Status problem = MapColumns(columns, &column_of_input);
  if (problem.ok()) return problem;
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": ", problem.message()));
}

absl::StatusOr<Example> FeatureParser::ParseNamedRow(
    const std::vector<std::string>& columns,
    const std::vector<absl::string_view>& fields,
    const RecordLocation& where) const {
  if (fields.size() != columns.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where.ToString(), ": ", fields.size(), " fields, but the header has ",
        columns.size(), " columns"));
  }
  // Reused by the thread's rows: mapping the header again costs a hash
  // lookup per column, but no allocation.
  thread_local std::vector<int> column_of_input;
  if (absl::Status problem = MapColumns(columns, &column_of_input);
      !problem.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where.ToString(), ": ", problem.message()));
  }
  Example example = NewExample(where);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Input& input = inputs_[i];
    const absl::string_view field = fields[column_of_input[i]];
    absl::Status problem;
    switch (input.role) {
      case Role::kLabel:
        problem = ReadCsvLabel(field, &example);
        break;
      case Role::kNumeric:
        problem = ReadCsvNumeric(input, field, &example);
        break;
      case Role::kCategorical:
        problem = ReadCsvCategorical(input, field, &example);
        break;
      case Role::kWeight:
        problem = ReadCsvWeight(input, field, &example);
        break;
    }
    if (!problem.ok()) return FeatureError(where, input.name, problem);
  }
  return example;
}

std::shared_ptr<const RecordParser> MakeTfExampleRecordParser(
    std::shared_ptr<const FeatureParser> parser) {
  return std::make_shared<TfExampleRecordParser>(std::move(parser));
}

}  // namespace distrt
