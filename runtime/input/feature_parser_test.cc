#include "runtime/input/feature_parser.h"

#include <farmhash.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/example.pb.h"
#include "runtime/input/example.h"
#include "runtime/input/feature_spec.h"
#include "runtime/input/record_reader.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// label "y"; numeric I1 (no default) and I2 (length 2, default 7);
// groups: user = C1 (identity, 100 buckets, required, weighted by C1_w),
// ads = C2 + C3 (hash_bucket, 1000 buckets), items = C4 (hashed).
constexpr char kSpec[] = R"({
  "label": "y",
  "numeric": [
    {"name": "I1"},
    {"name": "I2", "length": 2, "default": 7}
  ],
  "categorical": [
    {"name": "C1", "kind": "identity", "buckets": 100, "required": true},
    {"name": "C2", "kind": "hash_bucket", "buckets": 1000},
    {"name": "C3", "kind": "hash_bucket", "buckets": 1000},
    {"name": "C4", "kind": "hashed"}
  ],
  "embedding_groups": [
    {"name": "user", "features": ["C1"], "dim": 4, "weight_feature": "C1_w"},
    {"name": "ads", "features": ["C2", "C3"], "dim": 4},
    {"name": "items", "features": ["C4"], "dim": 4}
  ]
})";

std::shared_ptr<const FeatureParser> MakeParser(absl::string_view json) {
  absl::StatusOr<FeatureSpec> spec = ParseFeatureSpec(json, "spec.json");
  EXPECT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::shared_ptr<const FeatureParser>> parser =
      FeatureParser::Create(*std::move(spec));
  EXPECT_TRUE(parser.ok()) << parser.status();
  return *std::move(parser);
}

uint64_t Fingerprint(absl::string_view s) {
  return util::Fingerprint64(s.data(), s.size());
}

int64_t Bucket(absl::string_view s, int64_t buckets) {
  return static_cast<int64_t>(Fingerprint(s) % static_cast<uint64_t>(buckets));
}

// A tf.Example, built feature by feature.
class ExampleBuilder {
 public:
  ExampleBuilder& Floats(const std::string& name, std::vector<float> values) {
    auto* list = Feature(name)->mutable_float_list();
    for (float v : values) list->add_value(v);
    return *this;
  }
  ExampleBuilder& Ints(const std::string& name, std::vector<int64_t> values) {
    auto* list = Feature(name)->mutable_int64_list();
    for (int64_t v : values) list->add_value(v);
    return *this;
  }
  ExampleBuilder& Bytes(const std::string& name,
                        std::vector<std::string> values) {
    auto* list = Feature(name)->mutable_bytes_list();
    for (std::string& v : values) list->add_value(std::move(v));
    return *this;
  }
  // A Feature whose list is not set.
  ExampleBuilder& Empty(const std::string& name) {
    Feature(name);
    return *this;
  }
  ExampleBuilder& Remove(const std::string& name) {
    proto_.mutable_features()->mutable_feature()->erase(name);
    return *this;
  }
  std::string Serialize() const { return proto_.SerializeAsString(); }

 private:
  tf::Feature* Feature(const std::string& name) {
    tf::Feature& feature =
        (*proto_.mutable_features()->mutable_feature())[name];
    feature.Clear();
    return &feature;
  }

  tf::Example proto_;
};

// A record that parses with kSpec.
ExampleBuilder Valid() {
  ExampleBuilder b;
  b.Floats("y", {1})
      .Floats("I1", {0.5})
      .Floats("I2", {-1, 2})
      .Ints("C1", {3, 99})
      .Floats("C1_w", {0.25, 4})
      .Bytes("C2", {"a", ""})
      .Bytes("C3", {"b"})
      .Ints("C4", {-5, 1234567890123});
  return b;
}

RecordLocation Where() {
  RecordLocation where;
  where.path = "train.tfrecord";
  where.position.index = 7;
  where.position.offset = 1234;
  return where;
}

constexpr char kWhere[] = "train.tfrecord: record 7 at byte 1234";

void ExpectError(const FeatureParser& parser, const ExampleBuilder& example,
                 absl::string_view message) {
  absl::StatusOr<Example> parsed =
      parser.ParseTfExample(example.Serialize(), Where());
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), absl::StrCat(kWhere, ": ", message));
}

TEST(FeatureParserTest, ParsesEveryFeatureType) {
  auto parser = MakeParser(kSpec);
  absl::StatusOr<Example> example =
      parser->ParseTfExample(Valid().Serialize(), Where());
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ(example->label, 1.0f);
  EXPECT_THAT(example->dense, ElementsAre(0.5f, -1.0f, 2.0f));
  EXPECT_THAT(example->ids, IsEmpty());
  EXPECT_THAT(example->values, IsEmpty());
  ASSERT_EQ(example->groups.size(), 3u);
  EXPECT_THAT(example->groups[0].ids, ElementsAre(3, 99));
  EXPECT_THAT(example->groups[0].weights, ElementsAre(0.25f, 4.0f));
  EXPECT_THAT(
      example->groups[1].ids,
      ElementsAre(Bucket("a", 1000), Bucket("", 1000), Bucket("b", 1000)));
  EXPECT_THAT(example->groups[1].weights, IsEmpty());
  EXPECT_THAT(example->groups[2].ids, ElementsAre(-5, 1234567890123));
  EXPECT_EQ(example->line, 8);  // index 7, 1-based
  EXPECT_EQ(example->file, -1);
}

TEST(FeatureParserTest, LineIsTheTextLineWhenThereIsOne) {
  auto parser = MakeParser(kSpec);
  RecordLocation where = Where();
  where.position.line = 42;
  absl::StatusOr<Example> example =
      parser->ParseTfExample(Valid().Serialize(), where);
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ(example->line, 42);
}

TEST(FeatureParserTest, IntegerLabel) {
  auto parser = MakeParser(kSpec);
  absl::StatusOr<Example> example =
      parser->ParseTfExample(Valid().Ints("y", {-3}).Serialize(), Where());
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ(example->label, -3.0f);
}

TEST(FeatureParserTest, MissingFeaturesTakeDefaultsOrNoIds) {
  auto parser = MakeParser(kSpec);
  // A Feature with no list counts as missing, like one that is not there.
  ExampleBuilder b = Valid();
  b.Remove("I2").Empty("C2").Remove("C3").Remove("C4");
  absl::StatusOr<Example> example = parser->ParseTfExample(b.Serialize(), {});
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->dense, ElementsAre(0.5f, 7.0f, 7.0f));
  EXPECT_THAT(example->groups[1].ids, IsEmpty());
  EXPECT_THAT(example->groups[2].ids, IsEmpty());
  EXPECT_EQ(example->line, 1);

  // Present but empty lists are zero values; zero ids need zero weights.
  b = Valid();
  b.Ints("C1", {}).Remove("C1_w").Bytes("C2", {});
  example = parser->ParseTfExample(b.Serialize(), {});
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->groups[0].ids, IsEmpty());
  EXPECT_THAT(example->groups[0].weights, IsEmpty());
  EXPECT_THAT(example->groups[1].ids, ElementsAre(Bucket("b", 1000)));
}

TEST(FeatureParserTest, HashBucketOfIntegersHashesTheirDecimalString) {
  auto parser = MakeParser(kSpec);
  absl::StatusOr<Example> example = parser->ParseTfExample(
      Valid().Ints("C2", {42, -7, 0}).Serialize(), Where());
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->groups[1].ids,
              ElementsAre(Bucket("42", 1000), Bucket("-7", 1000),
                          Bucket("0", 1000), Bucket("b", 1000)));
}

TEST(FeatureParserTest, HashedStringsKeepTheWholeFingerprint) {
  auto parser = MakeParser(kSpec);
  absl::StatusOr<Example> example = parser->ParseTfExample(
      Valid().Bytes("C4", {"hello", "x"}).Serialize(), Where());
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->groups[2].ids,
              ElementsAre(static_cast<int64_t>(Fingerprint("hello")),
                          static_cast<int64_t>(Fingerprint("x"))));
}

// TensorFlow's own documented example of the hash (the API docs of
// tf.strings.to_hash_bucket_fast): ["Hello", "TensorFlow", "2.x"] into 3
// buckets is [0, 2, 2]. An independent check that Fingerprint64 % buckets
// is TF's hash.
TEST(FeatureParserTest, HashBucketMatchesTensorFlowsDocumentedExample) {
  auto parser = MakeParser(R"({"label": "y",
      "categorical": [{"name": "s", "kind": "hash_bucket", "buckets": 3}],
      "embedding_groups": [{"name": "s", "features": ["s"], "dim": 1}]})");
  ExampleBuilder b;
  b.Floats("y", {0}).Bytes("s", {"Hello", "TensorFlow", "2.x"});
  absl::StatusOr<Example> example = parser->ParseTfExample(b.Serialize(), {});
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->groups[0].ids, ElementsAre(0, 2, 2));
}

// One value pinned, so that a change of hash (another FarmHash function, a
// seed, signed arithmetic) shows even if the test's own computation changed
// with it: tf.strings.to_hash_bucket_fast("hello", 1000000). 800296 is
// FarmHash Fingerprint64("hello") (13009744463427800296) % 1000000, as the
// system libfarmhash computed it when this test was written.
TEST(FeatureParserTest, PinnedHashBucketOfHello) {
  constexpr int64_t kHelloBucket = 800296;
  EXPECT_EQ(Bucket("hello", 1000000), kHelloBucket);
  auto parser = MakeParser(R"({"label": "y",
      "categorical": [{"name": "s", "kind": "hash_bucket", "buckets": 1000000}],
      "embedding_groups": [{"name": "s", "features": ["s"], "dim": 1}]})");
  ExampleBuilder b;
  b.Floats("y", {0}).Bytes("s", {"hello"});
  absl::StatusOr<Example> example = parser->ParseTfExample(b.Serialize(), {});
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->groups[0].ids, ElementsAre(kHelloBucket));
}

TEST(FeatureParserTest, NotATfExample) {
  auto parser = MakeParser(kSpec);
  absl::StatusOr<Example> example =
      parser->ParseTfExample("\xff\xff\xff", Where());
  EXPECT_EQ(example.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(example.status().message(),
            absl::StrCat(kWhere,
                         ": not a serialized tf.Example (3 bytes that do not "
                         "parse as one)"));
}

TEST(FeatureParserTest, LabelErrors) {
  auto parser = MakeParser(kSpec);
  ExpectError(*parser, Valid().Remove("y"),
              "feature \"y\": missing (the label is required)");
  ExpectError(*parser, Valid().Empty("y"),
              "feature \"y\": missing (the label is required)");
  ExpectError(*parser, Valid().Bytes("y", {"1"}),
              "feature \"y\": is a bytes_list, expected a float_list or "
              "int64_list (the label)");
  ExpectError(*parser, Valid().Floats("y", {1, 0}),
              "feature \"y\": 2 values, expected 1 (the label)");
  ExpectError(*parser, Valid().Ints("y", {}),
              "feature \"y\": 0 values, expected 1 (the label)");
  ExpectError(*parser,
              Valid().Floats("y", {std::numeric_limits<float>::quiet_NaN()}),
              "feature \"y\": value 0 is nan, expected a finite number");
}

TEST(FeatureParserTest, NumericErrors) {
  auto parser = MakeParser(kSpec);
  ExpectError(*parser, Valid().Remove("I1"),
              "feature \"I1\": missing, and the feature spec gives it no "
              "default");
  ExpectError(*parser, Valid().Ints("I1", {1}),
              "feature \"I1\": is an int64_list, expected a float_list");
  ExpectError(*parser, Valid().Bytes("I2", {"1", "2"}),
              "feature \"I2\": is a bytes_list, expected a float_list");
  ExpectError(*parser, Valid().Floats("I2", {1, 2, 3}),
              "feature \"I2\": 3 values, expected 2 (its length)");
  ExpectError(*parser, Valid().Floats("I2", {}),
              "feature \"I2\": 0 values, expected 2 (its length)");
  ExpectError(*parser,
              Valid().Floats("I2", {1, std::numeric_limits<float>::infinity()}),
              "feature \"I2\": value 1 is inf, expected a finite number");
  ExpectError(*parser,
              Valid().Floats("I1", {std::numeric_limits<float>::quiet_NaN()}),
              "feature \"I1\": value 0 is nan, expected a finite number");
}

TEST(FeatureParserTest, CategoricalErrors) {
  auto parser = MakeParser(kSpec);
  ExpectError(*parser, Valid().Remove("C1").Remove("C1_w"),
              "feature \"C1\": missing, and it is required");
  ExpectError(*parser, Valid().Ints("C1", {3, 100}),
              "feature \"C1\": id 100 (value 1) is out of range [0, 100)");
  ExpectError(*parser, Valid().Ints("C1", {-1, 3}),
              "feature \"C1\": id -1 (value 0) is out of range [0, 100)");
  ExpectError(*parser, Valid().Bytes("C1", {"3", "4"}),
              "feature \"C1\": is a bytes_list, expected an int64_list (kind "
              "identity)");
  ExpectError(*parser, Valid().Floats("C2", {1}),
              "feature \"C2\": is a float_list, expected a bytes_list or "
              "int64_list (kind hash_bucket)");
  ExpectError(*parser, Valid().Floats("C4", {1}),
              "feature \"C4\": is a float_list, expected an int64_list or "
              "bytes_list (kind hashed)");
}

TEST(FeatureParserTest, WeightErrors) {
  auto parser = MakeParser(kSpec);
  ExpectError(*parser, Valid().Floats("C1_w", {1}),
              "feature \"C1_w\": 1 weights for the 2 ids of feature \"C1\", "
              "expected one weight per id");
  ExpectError(*parser, Valid().Remove("C1_w"),
              "feature \"C1_w\": missing, but feature \"C1\" has 2 ids to "
              "weigh");
  ExpectError(*parser, Valid().Ints("C1_w", {1, 1}),
              "feature \"C1_w\": is an int64_list, expected a float_list (the "
              "weights)");
  ExpectError(
      *parser,
      Valid().Floats("C1_w", {1, -std::numeric_limits<float>::infinity()}),
      "feature \"C1_w\": value 1 is -inf, expected a finite number");
}

TEST(FeatureParserTest, CreateChecksTheSpec) {
  FeatureSpec spec;
  spec.label = "y";
  spec.categorical.push_back({"C1", CategoricalKind::kIdentity, 10, false});
  absl::StatusOr<std::shared_ptr<const FeatureParser>> parser =
      FeatureParser::Create(spec);
  EXPECT_EQ(parser.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parser.status().message(),
            "feature spec: categorical[0] (\"C1\"): is in no embedding group "
            "(every categorical feature needs a table)");
}

TEST(FeatureParserTest, RecordParserAdaptor) {
  std::shared_ptr<const RecordParser> records =
      MakeTfExampleRecordParser(MakeParser(kSpec));
  absl::StatusOr<Example> example =
      records->Parse(Valid().Serialize(), Where());
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->groups[0].ids, ElementsAre(3, 99));
  EXPECT_EQ(records->Parse("\xff", Where()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Records larger than the thread's arena block, one after another, and
// several threads at once: each parse sees only its own record.
TEST(FeatureParserTest, ParsesLargeRecordsOnSeveralThreads) {
  auto parser = MakeParser(kSpec);
  constexpr int kThreads = 4;
  constexpr int kRecords = 50;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRecords; ++r) {
        // Every other record has 20000 ids (about 100 KiB of strings).
        const int n = r % 2 == 0 ? 20000 : 1;
        std::vector<std::string> values;
        for (int i = 0; i < n; ++i) values.push_back(absl::StrCat(t, "/", i));
        ExampleBuilder b = Valid();
        b.Floats("y", {static_cast<float>(t * 1000 + r)}).Bytes("C4", values);
        absl::StatusOr<Example> example =
            parser->ParseTfExample(b.Serialize(), Where());
        if (!example.ok() || example->label != t * 1000 + r ||
            example->groups[2].ids.size() != static_cast<size_t>(n) ||
            example->groups[2].ids.back() !=
                static_cast<int64_t>(Fingerprint(values.back()))) {
          ++failures[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(failures, ElementsAre(0, 0, 0, 0));
}

// --- CSV rows with a header ----------------------------------------------

const std::vector<std::string> kColumns = {"y",  "I1", "I2", "C1",   "C1_w",
                                           "C2", "C3", "C4", "extra"};

constexpr char kCsvSpec[] = R"({
  "label": "y",
  "numeric": [{"name": "I1"}, {"name": "I2", "default": 7}],
  "categorical": [
    {"name": "C1", "kind": "identity", "buckets": 100, "required": true},
    {"name": "C2", "kind": "hash_bucket", "buckets": 1000},
    {"name": "C3", "kind": "hash_bucket", "buckets": 1000},
    {"name": "C4", "kind": "hashed"}
  ],
  "embedding_groups": [
    {"name": "user", "features": ["C1"], "dim": 4, "weight_feature": "C1_w"},
    {"name": "ads", "features": ["C2", "C3"], "dim": 4},
    {"name": "items", "features": ["C4"], "dim": 4}
  ]
})";

RecordLocation CsvWhere() {
  RecordLocation where;
  where.path = "train.csv";
  where.position.line = 9;
  where.position.index = 7;
  return where;
}

absl::StatusOr<Example> ParseRow(const FeatureParser& parser,
                                 std::vector<absl::string_view> fields) {
  return parser.ParseNamedRow(kColumns, fields, CsvWhere());
}

void ExpectRowError(const FeatureParser& parser,
                    std::vector<absl::string_view> fields,
                    absl::string_view message) {
  absl::StatusOr<Example> example = ParseRow(parser, fields);
  ASSERT_FALSE(example.ok());
  EXPECT_EQ(example.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(example.status().message(), absl::StrCat("train.csv:9: ", message));
}

TEST(FeatureParserCsvTest, ParsesARowByColumnName) {
  auto parser = MakeParser(kCsvSpec);
  EXPECT_TRUE(parser->CheckColumns(kColumns, "train.csv").ok());
  absl::StatusOr<Example> example = ParseRow(
      *parser,
      {"1", " 0.5", "-2 ", "42", "0.5", "abc", " abc", "-17", "ignored"});
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ(example->label, 1.0f);
  EXPECT_THAT(example->dense, ElementsAre(0.5f, -2.0f));
  ASSERT_EQ(example->groups.size(), 3u);
  EXPECT_THAT(example->groups[0].ids, ElementsAre(42));
  EXPECT_THAT(example->groups[0].weights, ElementsAre(0.5f));
  // Strings are hashed as they are, spaces included, as TF hashes them.
  EXPECT_THAT(example->groups[1].ids,
              ElementsAre(Bucket("abc", 1000), Bucket(" abc", 1000)));
  EXPECT_THAT(example->groups[2].ids, ElementsAre(-17));
  EXPECT_EQ(example->line, 9);

  // A hashed feature that is not an integer is hashed whole.
  example = ParseRow(*parser, {"0", "1", "2", "3", "1", "", "", "x7", ""});
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->groups[1].ids, IsEmpty());  // empty: missing
  EXPECT_THAT(example->groups[2].ids,
              ElementsAre(static_cast<int64_t>(Fingerprint("x7"))));
}

TEST(FeatureParserCsvTest, EmptyFieldsAreMissing) {
  auto parser = MakeParser(kCsvSpec);
  absl::StatusOr<Example> example =
      ParseRow(*parser, {"0", "1", "", "3", "2", "", "", " ", ""});
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT(example->dense, ElementsAre(1.0f, 7.0f));
  EXPECT_THAT(example->groups[0].ids, ElementsAre(3));
  EXPECT_THAT(example->groups[0].weights, ElementsAre(2.0f));
  EXPECT_THAT(example->groups[1].ids, IsEmpty());
  EXPECT_THAT(example->groups[2].ids, IsEmpty());
}

TEST(FeatureParserCsvTest, RowErrors) {
  auto parser = MakeParser(kCsvSpec);
  ExpectRowError(*parser, {"", "1", "2", "3", "1", "a", "b", "4", ""},
                 "feature \"y\": missing (the label is required)");
  ExpectRowError(*parser, {"yes", "1", "2", "3", "1", "a", "b", "4", ""},
                 "feature \"y\": \"yes\" is not a number");
  ExpectRowError(*parser, {"0", "", "2", "3", "1", "a", "b", "4", ""},
                 "feature \"I1\": missing, and the feature spec gives it no "
                 "default");
  ExpectRowError(*parser, {"0", "nan", "2", "3", "1", "a", "b", "4", ""},
                 "feature \"I1\": \"nan\" is not a finite number");
  ExpectRowError(*parser, {"0", "1", "1e99", "3", "1", "a", "b", "4", ""},
                 "feature \"I2\": \"1e99\" is not a finite number");
  ExpectRowError(*parser, {"0", "1", "2", "", "", "a", "b", "4", ""},
                 "feature \"C1\": missing, and it is required");
  ExpectRowError(*parser, {"0", "1", "2", "x", "1", "a", "b", "4", ""},
                 "feature \"C1\": \"x\" is not an integer id (kind identity)");
  ExpectRowError(*parser, {"0", "1", "2", "100", "1", "a", "b", "4", ""},
                 "feature \"C1\": id 100 (value 0) is out of range [0, 100)");
  ExpectRowError(*parser, {"0", "1", "2", "3", "w", "a", "b", "4", ""},
                 "feature \"C1_w\": \"w\" is not a number");
  ExpectRowError(*parser, {"0", "1", "2", "", "1", "a", "b", "4", ""},
                 "feature \"C1\": missing, and it is required");
  ExpectRowError(*parser, {"0", "1", "2", "3", "1", "a", "b", "4"},
                 "8 fields, but the header has 9 columns");
}

TEST(FeatureParserCsvTest, WeightWithoutId) {
  auto parser = MakeParser(R"({"label": "y",
      "categorical": [{"name": "C", "kind": "identity", "buckets": 10}],
      "embedding_groups": [{"name": "g", "features": ["C"], "dim": 1,
                            "weight_feature": "w"}]})");
  const std::vector<std::string> columns = {"y", "C", "w"};
  absl::StatusOr<Example> example =
      parser->ParseNamedRow(columns, {"0", "", "2"}, CsvWhere());
  EXPECT_EQ(example.status().message(),
            "train.csv:9: feature \"w\": 1 weights for the 0 ids of feature "
            "\"C\", expected one weight per id");
  example = parser->ParseNamedRow(columns, {"0", "5", ""}, CsvWhere());
  EXPECT_EQ(example.status().message(),
            "train.csv:9: feature \"w\": missing, but feature \"C\" has 1 ids "
            "to weigh");
}

TEST(FeatureParserCsvTest, CheckColumnsErrors) {
  auto parser = MakeParser(kCsvSpec);
  std::vector<std::string> columns = kColumns;
  columns[2] = "I2x";
  absl::Status status = parser->CheckColumns(columns, "train.csv");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "train.csv: feature \"I2\": the header has no column of that "
            "name");
  // A row of that header gets the same error, naming the row.
  absl::StatusOr<Example> example = parser->ParseNamedRow(
      columns, {"0", "1", "2", "3", "1", "a", "b", "4", ""}, CsvWhere());
  EXPECT_EQ(example.status().message(),
            "train.csv:9: feature \"I2\": the header has no column of that "
            "name");

  columns = kColumns;
  columns[8] = "C2";
  EXPECT_EQ(parser->CheckColumns(columns, "train.csv").message(),
            "train.csv: feature \"C2\": the header has it twice, columns 6 "
            "and 9");

  auto long_parser =
      MakeParser(R"({"label": "y", "numeric": [{"name": "v", "length": 3}]})");
  EXPECT_EQ(long_parser->CheckColumns({"y", "v"}, "train.csv").message(),
            "train.csv: feature \"v\": length 3, but a CSV cell holds one "
            "value");
}

}  // namespace
}  // namespace distrt
