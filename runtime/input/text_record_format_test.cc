#include "runtime/input/text_record_format.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/input/csv_reader.h"
#include "runtime/input/example.h"
#include "runtime/input/libsvm_reader.h"
#include "runtime/input/record_reader.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::string_view kByteOrderMark = "\xEF\xBB\xBF";

// One record as a format's reader and parser gave it.
struct ReadRecord {
  RecordPosition position;
  std::string text;
  Example example;
};

// Everything from `start` to the end of `path`, read through `format`, or
// the first error (opening, reading or parsing). `*end` is the reader's
// position at the end.
absl::StatusOr<std::vector<ReadRecord>> ReadAll(const RecordFormat& format,
                                                const std::string& path,
                                                const RecordPosition& start,
                                                RecordPosition* end = nullptr) {
  absl::StatusOr<std::unique_ptr<RecordReader>> reader =
      format.Open(path, start);
  if (!reader.ok()) return reader.status();
  EXPECT_EQ((*reader)->path(), path);
  const std::shared_ptr<const RecordParser> parser = (*reader)->parser();
  EXPECT_NE(parser, nullptr);
  std::vector<ReadRecord> records;
  std::string text;
  while (true) {
    const RecordPosition position = (*reader)->position();
    absl::StatusOr<bool> more = (*reader)->Next(&text);
    if (!more.ok()) return more.status();
    if (!*more) break;
    absl::StatusOr<Example> example =
        parser->Parse(text, RecordLocation{path, position});
    if (!example.ok()) return example.status();
    records.push_back({position, text, *std::move(example)});
  }
  // The end stays the end.
  absl::StatusOr<bool> more = (*reader)->Next(&text);
  EXPECT_TRUE(more.ok() && !*more);
  if (end != nullptr) *end = (*reader)->position();
  return records;
}

void ExpectSameExample(const Example& got, const Example& want,
                       const std::string& where) {
  EXPECT_EQ(got.label, want.label) << where;
  EXPECT_EQ(got.dense, want.dense) << where;
  EXPECT_EQ(got.ids, want.ids) << where;
  EXPECT_EQ(got.values, want.values) << where;
  EXPECT_EQ(got.line, want.line) << where;
  EXPECT_TRUE(got.groups.empty()) << where;
}

// Checks that reading `path` (whose bytes are `contents`) through `format`
// gives `want` (what the whole-file parser gave, or its error), that each
// position points at its record's line, and that reopening at every
// position, the end included, gives the same remaining records.
void ExpectSameAsWholeFile(const RecordFormat& format, const std::string& path,
                           const std::string& contents,
                           const absl::StatusOr<std::vector<Example>>& want) {
  SCOPED_TRACE(path);
  RecordPosition end;
  absl::StatusOr<std::vector<ReadRecord>> got = ReadAll(format, path, {}, &end);
  if (!want.ok()) {
    EXPECT_EQ(got.status(), want.status());
    return;
  }
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    const ReadRecord& record = (*got)[i];
    const std::string where = absl::StrCat("record ", i);
    ExpectSameExample(record.example, (*want)[i], where);
    EXPECT_EQ(record.position.index, static_cast<int64_t>(i)) << where;
    EXPECT_EQ(record.position.line, (*want)[i].line) << where;
    // The offset is the line's start: the line there is the record.
    std::string line = contents.substr(record.position.offset);
    if (record.position.offset == 0 && absl::StartsWith(line, kByteOrderMark)) {
      line.erase(0, kByteOrderMark.size());
    }
    line = line.substr(0, line.find('\n'));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    EXPECT_EQ(record.text, line) << where;
  }
  EXPECT_EQ(end.offset, static_cast<int64_t>(contents.size()));
  EXPECT_EQ(end.index, static_cast<int64_t>(got->size()));

  std::vector<RecordPosition> positions;
  for (const ReadRecord& record : *got) positions.push_back(record.position);
  positions.push_back(end);
  for (size_t i = 0; i < positions.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("reopened at record ", i));
    RecordPosition reopened_end;
    absl::StatusOr<std::vector<ReadRecord>> rest =
        ReadAll(format, path, positions[i], &reopened_end);
    ASSERT_TRUE(rest.ok()) << rest.status();
    ASSERT_EQ(rest->size(), got->size() - i);
    for (size_t j = 0; j < rest->size(); ++j) {
      const ReadRecord& a = (*rest)[j];
      const ReadRecord& b = (*got)[i + j];
      EXPECT_EQ(a.text, b.text);
      EXPECT_EQ(a.position.offset, b.position.offset);
      EXPECT_EQ(a.position.index, b.position.index);
      EXPECT_EQ(a.position.line, b.position.line);
      ExpectSameExample(a.example, b.example, absl::StrCat("record ", i + j));
    }
    EXPECT_EQ(reopened_end.offset, end.offset);
    EXPECT_EQ(reopened_end.index, end.index);
    EXPECT_EQ(reopened_end.line, end.line);
  }
}

std::unique_ptr<LibsvmFormat> MakeLibsvm(const LibsvmOptions& options) {
  absl::StatusOr<std::unique_ptr<LibsvmFormat>> format =
      LibsvmFormat::Create(options);
  EXPECT_TRUE(format.ok()) << format.status();
  return format.ok() ? *std::move(format) : nullptr;
}

std::unique_ptr<CsvFormat> MakeCsv(const CsvOptions& options,
                                   NamedCsvParserFactory named = nullptr) {
  absl::StatusOr<std::unique_ptr<CsvFormat>> format =
      CsvFormat::Create(options, std::move(named));
  EXPECT_TRUE(format.ok()) << format.status();
  return format.ok() ? *std::move(format) : nullptr;
}

void CheckLibsvm(const TestDir& dir, const std::string& name,
                 const std::string& contents, const LibsvmOptions& options) {
  const std::string path = dir.WriteFile(name, contents);
  std::unique_ptr<LibsvmFormat> format = MakeLibsvm(options);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->name(), "libsvm");
  ExpectSameAsWholeFile(*format, path, contents,
                        ParseLibsvmFile(path, options));
}

void CheckCsv(const TestDir& dir, const std::string& name,
              const std::string& contents, const CsvOptions& options) {
  const std::string path = dir.WriteFile(name, contents);
  std::unique_ptr<CsvFormat> format = MakeCsv(options);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->name(), "csv");
  ExpectSameAsWholeFile(*format, path, contents, ParseCsvFile(path, options));
}

LibsvmOptions Libsvm(IndexBase base, LabelKind label = LabelKind::kAsIs,
                     int64_t num_features = 0) {
  LibsvmOptions options;
  options.index_base = base;
  options.label_kind = label;
  options.num_features = num_features;
  return options;
}

// Files with what the readers skip: blank and comment-only lines, CRLF, a
// byte order mark, no final newline.
const std::vector<std::pair<std::string, std::string>>& LibsvmFiles() {
  static const auto* files =
      new std::vector<std::pair<std::string, std::string>>{
          {"one_based.svm",
           "1 1:0.5 3:2 # a comment\n\n# only a comment\n-1 2:1\r\n  \t \n"
           "+1 qid:3 1:1 5:-2.5\n0\n"},
          {"zero_based_bom.svm",
           "\xEF\xBB\xBF"
           "0 0:1 2:3\r\n1 1:1\r\n\r\n"},
          {"bom_then_blank.svm", "\xEF\xBB\xBF\n\n-1 4:1e3\t7:0"},
          {"comments_only.svm", "# header\n\n   # more\n"},
          {"empty.svm", ""},
          {"leading_blank.svm", "\n\n\n1 1:1 2:2\n\n\n1 3:3\n\n"},
      };
  return *files;
}

TEST(TextRecordFormatTest, LibsvmGivesWhatTheWholeFileParserGives) {
  TestDir dir;
  for (const auto& [name, contents] : LibsvmFiles()) {
    CheckLibsvm(dir, name, contents, Libsvm(IndexBase::kDetect));
    CheckLibsvm(dir, name, contents, Libsvm(IndexBase::kZero));
    CheckLibsvm(dir, name, contents,
                Libsvm(IndexBase::kDetect, LabelKind::kBinary, 8));
  }
  CheckLibsvm(dir, "one_based.svm", LibsvmFiles()[0].second,
              Libsvm(IndexBase::kOne, LabelKind::kBinary, 5));
}

TEST(TextRecordFormatTest, LibsvmErrorsAreTheWholeFileParsers) {
  TestDir dir;
  const std::vector<std::pair<std::string, LibsvmOptions>> cases = {
      {"1 1:1\n\n1 3:x\n", Libsvm(IndexBase::kDetect)},
      {"1 1:1\n1 2:1 2:3\n", Libsvm(IndexBase::kZero)},
      {"1 0:1\n", Libsvm(IndexBase::kOne)},
      {"1 1:1\n2 1:1\n", Libsvm(IndexBase::kOne, LabelKind::kBinary)},
      {"1 1:1\nx 2:1\n", Libsvm(IndexBase::kOne)},
      {"1 1:1\n1 qid:q 2:1\n", Libsvm(IndexBase::kOne)},
      {"1 1:1\n1 9:1\n", Libsvm(IndexBase::kOne, LabelKind::kAsIs, 8)},
      {"1 0:1\n1 8:1\n", Libsvm(IndexBase::kDetect, LabelKind::kAsIs, 8)},
      {"1 1:1\n1 nan:1\n", Libsvm(IndexBase::kOne)},
      {"1 1:1\n1 2:inf\n", Libsvm(IndexBase::kOne)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [contents, options] = cases[i];
    const std::string path = dir.WriteFile(absl::StrCat("bad", i), contents);
    absl::StatusOr<std::vector<Example>> want = ParseLibsvmFile(path, options);
    ASSERT_FALSE(want.ok()) << contents;
    EXPECT_EQ(want.status().code(), absl::StatusCode::kInvalidArgument);
    std::unique_ptr<LibsvmFormat> format = MakeLibsvm(options);
    EXPECT_EQ(ReadAll(*format, path, {}).status(), want.status()) << contents;
  }
}

TEST(TextRecordFormatTest, LibsvmDetectsTheBasePerFileAtEveryOpen) {
  TestDir dir;
  const std::string one = dir.WriteFile("one", "1 1:1\n1 2:1\n1 3:1\n");
  const std::string zero = dir.WriteFile("zero", "1 1:1\n1 2:1\n1 0:1 3:1\n");
  std::unique_ptr<LibsvmFormat> format = MakeLibsvm(Libsvm(IndexBase::kDetect));
  absl::StatusOr<std::vector<ReadRecord>> a = ReadAll(*format, one, {});
  absl::StatusOr<std::vector<ReadRecord>> b = ReadAll(*format, zero, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_THAT((*a)[0].example.ids, ElementsAre(0));
  EXPECT_THAT((*b)[0].example.ids, ElementsAre(1));
  // Reopened after the line with the 0, the base is still 0.
  absl::StatusOr<std::vector<ReadRecord>> tail =
      ReadAll(*format, zero, (*b)[1].position);
  ASSERT_TRUE(tail.ok());
  EXPECT_THAT((*tail)[0].example.ids, ElementsAre(2));
}

TEST(TextRecordFormatTest, LibsvmDetectionFailsOpenOnAMalformedLine) {
  TestDir dir;
  const std::string path = dir.WriteFile("bad", "1 1:1\n1 2:x\n");
  std::unique_ptr<LibsvmFormat> format = MakeLibsvm(Libsvm(IndexBase::kDetect));
  absl::StatusOr<std::unique_ptr<RecordReader>> reader = format->Open(path, {});
  EXPECT_EQ(reader.status(), ParseLibsvmFile(path, {}).status());
}

CsvOptions Csv(bool has_header, int label_column = 0,
               std::string label_name = "", char delimiter = ',') {
  CsvOptions options;
  options.has_header = has_header;
  options.label_column = label_column;
  options.label_column_name = std::move(label_name);
  options.delimiter = delimiter;
  return options;
}

TEST(TextRecordFormatTest, CsvGivesWhatTheWholeFileParserGives) {
  TestDir dir;
  const std::string header =
      "\xEF\xBB\xBF\n  \r\nlabel, age ,height\r\n1,2,3\r\n\r\n0, 4.5 ,6\n"
      "\n1,7,8";
  CheckCsv(dir, "header.csv", header, Csv(true));
  CheckCsv(dir, "header.csv", header, Csv(true, -1));
  CheckCsv(dir, "header.csv", header, Csv(true, 0, "age"));
  CheckCsv(dir, "header_only.csv", "a,b\n\n", Csv(true));
  CheckCsv(dir, "empty.csv", "", Csv(true));
  CheckCsv(dir, "blank.csv", "\n \n", Csv(false));

  const std::string no_header =
      "\xEF\xBB\xBF"
      "1;2;3\n\n4;5;6\r\n7;8;9\n";
  CheckCsv(dir, "no_header.csv", no_header, Csv(false, 0, "", ';'));
  CheckCsv(dir, "no_header.csv", no_header, Csv(false, 2, "", ';'));
  CheckCsv(dir, "leading_blank.csv", "\n\n1,2\n3,4\n", Csv(false, 1));
  CheckCsv(dir, "tabs.tsv", "y\tx\n1\t2\n", Csv(true, 0, "", '\t'));
}

TEST(TextRecordFormatTest, CsvErrorsAreTheWholeFileParsers) {
  TestDir dir;
  const std::vector<std::pair<std::string, CsvOptions>> cases = {
      {"a,b\n1,2\n1,2,3\n", Csv(true)},  {"a,b\n1,2\n1,x\n", Csv(true)},
      {"a,b\n1,2\n1,\n", Csv(true)},     {"a,b\n1,2\n1,\"2\"\n", Csv(true)},
      {"a,b\n1,inf\n", Csv(true)},       {"1,2\n1,x\n", Csv(false)},
      {"1,x\n1,2\n", Csv(false)},  // the first row's fields: at its record
      {"1,2\n1,2\n", Csv(false, 2)},     {"a,b\n1,2\n", Csv(true, 0, "c")},
      {"a,a\n1,2\n", Csv(true, 0, "a")}, {"a,\"b\"\n1,2\n", Csv(true)},
      {"\"1\",2\n1,2\n", Csv(false)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [contents, options] = cases[i];
    const std::string path = dir.WriteFile(absl::StrCat("bad", i), contents);
    absl::StatusOr<std::vector<Example>> want = ParseCsvFile(path, options);
    ASSERT_FALSE(want.ok()) << contents;
    std::unique_ptr<CsvFormat> format = MakeCsv(options);
    EXPECT_EQ(ReadAll(*format, path, {}).status(), want.status()) << contents;
  }
}

TEST(TextRecordFormatTest, CsvReadsTheHeaderWhenOpenedLater) {
  TestDir dir;
  const std::string path = dir.WriteFile("f.csv", "\nx, y\n1,2\n3,4\n5,zz\n");
  std::unique_ptr<CsvFormat> format = MakeCsv(Csv(true, 0, "y"));
  absl::StatusOr<std::vector<ReadRecord>> all = ReadAll(*format, path, {});
  EXPECT_EQ(all.status().message(),
            path + ":5: column 2 (\"y\"): \"zz\" is not a number");
  // At the third row: the label is still "y", the error still names it.
  absl::StatusOr<std::unique_ptr<RecordReader>> reader =
      format->Open(path, {/*offset=*/10, /*index=*/1, /*line=*/4});
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string record;
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(record, "3,4");
  absl::StatusOr<Example> example =
      (*reader)->parser()->Parse(record, RecordLocation{path, {10, 1, 4}});
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ(example->label, 4);
  EXPECT_THAT(example->dense, ElementsAre(3));
  EXPECT_EQ(example->line, 4);
  // Opening at the header itself is refused.
  EXPECT_EQ(format->Open(path, {1, 0, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TextRecordFormatTest, CsvNamedParserGetsTheHeaderAndRawLines) {
  TestDir dir;
  const std::string path = dir.WriteFile(
      "named.csv", "\xEF\xBB\xBF id , score\r\n7, 0.5\r\n\n8,1\n");
  // A parser that takes "score" as the label and "id" as the only id.
  class Parser : public RecordParser {
   public:
    Parser(int id_column, int score_column)
        : id_column_(id_column), score_column_(score_column) {}
    absl::StatusOr<Example> Parse(absl::string_view record,
                                  const RecordLocation& where) const override {
      absl::StatusOr<std::vector<absl::string_view>> fields =
          SplitCsvFields(record, ',');
      if (!fields.ok()) return fields.status();
      Example example;
      example.line = where.position.line;
      int64_t id;
      if (!absl::SimpleAtoi((*fields)[id_column_], &id) ||
          !absl::SimpleAtof((*fields)[score_column_], &example.label)) {
        return absl::InvalidArgumentError(where.ToString());
      }
      example.ids.push_back(id);
      return example;
    }

   private:
    const int id_column_;
    const int score_column_;
  };
  int calls = 0;
  std::unique_ptr<CsvFormat> format = MakeCsv(
      Csv(true),
      [&](const std::vector<std::string>& header, const std::string& file)
          -> absl::StatusOr<std::shared_ptr<const RecordParser>> {
        ++calls;
        EXPECT_THAT(header, ElementsAre("id", "score"));
        EXPECT_EQ(file, path);
        return std::make_shared<Parser>(0, 1);
      });
  absl::StatusOr<std::vector<ReadRecord>> all = ReadAll(*format, path, {});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2);
  EXPECT_EQ((*all)[0].text, "7, 0.5");
  EXPECT_EQ((*all)[0].example.label, 0.5f);
  EXPECT_THAT((*all)[0].example.ids, ElementsAre(7));
  EXPECT_EQ((*all)[1].example.line, 4);
  absl::StatusOr<std::vector<ReadRecord>> tail =
      ReadAll(*format, path, (*all)[1].position);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_THAT((*tail)[0].example.ids, ElementsAre(8));
  EXPECT_EQ(calls, 2);

  // The factory's errors fail Open as they are; a quoted header name
  // fails it before the factory is asked.
  std::unique_ptr<CsvFormat> refusing =
      MakeCsv(Csv(true),
              [](const std::vector<std::string>&, const std::string& file)
                  -> absl::StatusOr<std::shared_ptr<const RecordParser>> {
                return absl::NotFoundError(file + ": no column \"label\"");
              });
  EXPECT_EQ(refusing->Open(path, {}).status(),
            absl::NotFoundError(path + ": no column \"label\""));
  const std::string quoted = dir.WriteFile("quoted.csv", "\n\"id\",x\n1,2\n");
  EXPECT_EQ(format->Open(quoted, {}).status(),
            absl::InvalidArgumentError(
                quoted + ":2: column 1: quoted fields are not supported"));
  // Without a header the factory is not used.
  std::unique_ptr<CsvFormat> headerless =
      MakeCsv(Csv(false),
              [](const std::vector<std::string>&, const std::string&)
                  -> absl::StatusOr<std::shared_ptr<const RecordParser>> {
                return absl::InternalError("must not be called");
              });
  const std::string plain = dir.WriteFile("plain.csv", "1,2\n");
  EXPECT_TRUE(ReadAll(*headerless, plain, {}).ok());
}

TEST(TextRecordFormatTest, SplitCsvFieldsFollowsTheParsersRules) {
  absl::StatusOr<std::vector<absl::string_view>> fields =
      SplitCsvFields(" 1, 2 ,,x \r", ',');
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_THAT(*fields, ElementsAre("1", "2", "", "x"));
  EXPECT_THAT(*SplitCsvFields(" \t", ','), IsEmpty());
  EXPECT_THAT(*SplitCsvFields("a;b", ';'), ElementsAre("a", "b"));
  EXPECT_EQ(
      SplitCsvFields("1, \"a,b\"", ',').status(),
      absl::InvalidArgumentError("column 2: quoted fields are not supported"));
}

TEST(TextRecordFormatTest, ParsersAreSharedByThreads) {
  TestDir dir;
  std::string contents = "a,b,c\n";
  for (int i = 0; i < 200; ++i)
    absl::StrAppend(&contents, i, ",", i + 1, ",", i + 2, "\n");
  const std::string path = dir.WriteFile("many.csv", contents);
  std::unique_ptr<CsvFormat> format = MakeCsv(Csv(true, 0, "b"));
  absl::StatusOr<std::unique_ptr<RecordReader>> reader = format->Open(path, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<std::pair<std::string, RecordPosition>> records;
  std::string record;
  while (true) {
    const RecordPosition position = (*reader)->position();
    absl::StatusOr<bool> more = (*reader)->Next(&record);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    records.emplace_back(record, position);
  }
  const std::shared_ptr<const RecordParser> parser = (*reader)->parser();
  reader->reset();  // the parser outlives its reader
  std::vector<std::thread> threads;
  std::vector<int> errors(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < records.size(); i += 4) {
        absl::StatusOr<Example> example =
            parser->Parse(records[i].first, {path, records[i].second});
        if (!example.ok() || example->label != static_cast<float>(i + 1) ||
            example->dense != std::vector<float>{static_cast<float>(i),
                                                 static_cast<float>(i + 2)}) {
          ++errors[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(errors, ElementsAre(0, 0, 0, 0));
}

TEST(TextRecordFormatTest, RecordsAcrossManyBuffers) {
  TestDir dir;
  std::string contents;
  for (int i = 0; i < 30000; ++i) {
    if (i % 7 == 0) contents += "# comment\n";
    if (i % 11 == 0) contents += "\r\n";
    absl::StrAppend(&contents, i % 2, " ", i % 5 + 1, ":", i, " 9:0.25",
                    i % 3 == 0 ? "\r\n" : "\n");
  }
  const std::string path = dir.WriteFile("big.svm", contents);
  const LibsvmOptions options = Libsvm(IndexBase::kOne);
  std::unique_ptr<LibsvmFormat> format = MakeLibsvm(options);
  absl::StatusOr<std::vector<Example>> want = ParseLibsvmFile(path, options);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<ReadRecord>> got = ReadAll(*format, path, {});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    ExpectSameExample((*got)[i].example, (*want)[i], absl::StrCat(i));
  }
  for (size_t i : {size_t{1}, size_t{4321}, size_t{29999}}) {
    absl::StatusOr<std::vector<ReadRecord>> tail =
        ReadAll(*format, path, (*got)[i].position);
    ASSERT_TRUE(tail.ok()) << tail.status();
    ASSERT_EQ(tail->size(), got->size() - i);
    ExpectSameExample(tail->front().example, (*want)[i], "front");
    ExpectSameExample(tail->back().example, want->back(), "back");
  }
}

TEST(TextRecordFormatTest, OpenErrorsNameThePath) {
  TestDir dir;
  const std::string missing = JoinPath(dir.path(), "missing");
  std::unique_ptr<LibsvmFormat> libsvm = MakeLibsvm(Libsvm(IndexBase::kOne));
  std::unique_ptr<CsvFormat> csv = MakeCsv(Csv(true));
  for (const RecordFormat* format :
       std::vector<const RecordFormat*>{libsvm.get(), csv.get()}) {
    absl::StatusOr<std::unique_ptr<RecordReader>> reader =
        format->Open(missing, {});
    EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(reader.status().message(), HasSubstr(missing));
    // A directory opens, and fails at the first read.
    reader = format->Open(dir.path(), {});
    EXPECT_THAT(reader.status().message(),
                HasSubstr("cannot read " + dir.path()));

    const std::string path = dir.WriteFile("f", "a,b\n1,2\n3,4\n");
    // Positions no reader reports.
    for (const RecordPosition& bad : std::vector<RecordPosition>{
             {-1, 0, 0}, {0, 1, 1}, {0, 0, 2}, {4, 0, 1}, {4, 2, 2}}) {
      reader = format->Open(path, bad);
      EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument)
          << bad.offset << " " << bad.index << " " << bad.line;
      EXPECT_THAT(reader.status().message(), HasSubstr(path));
    }
    // Not a line's start, or past the end: the file changed.
    EXPECT_EQ(format->Open(path, {5, 1, 3}).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(format->Open(path, {50, 1, 3}).status().code(),
              absl::StatusCode::kOutOfRange);
  }
  EXPECT_EQ(LibsvmFormat::Create(Libsvm(IndexBase::kOne, LabelKind::kAsIs, -1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CsvFormat::Create(Csv(false, 0, "y")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CsvFormat::Create(Csv(true, 0, "", '"')).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Throughput of reading (not parsing) a 512 MB file, and the memory it
// takes (a line at a time, not the file); run by hand:
//   bazel test //runtime/input:text_record_format_test \
//     --test_arg=--gtest_also_run_disabled_tests \
//     --test_arg=--gtest_filter='*Throughput*' --test_output=streamed
int64_t MaxResidentKilobytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(TextRecordFormatTest, DISABLED_ReaderThroughputAndMemory) {
  TestDir dir;
  std::string chunk;
  for (int i = 0; i < 10000; ++i) {
    absl::StrAppend(&chunk, i % 2,
                    " 3:0.5 17:1 230:0.125 4096:2 70000:1 "
                    "123456:0.75 # id ",
                    i, "\n");
  }
  const std::string path = JoinPath(dir.path(), "big.svm");
  {
    // Written in chunks, so that the peak memory is not the file's size.
    std::ofstream out(path, std::ios::binary);
    for (size_t written = 0; written < (size_t{512} << 20);
         written += chunk.size()) {
      out << chunk;
    }
    ASSERT_TRUE(out.good());
  }
  const int64_t kilobytes_before = MaxResidentKilobytes();
  std::unique_ptr<LibsvmFormat> format = MakeLibsvm(Libsvm(IndexBase::kOne));
  absl::StatusOr<std::unique_ptr<RecordReader>> reader = format->Open(path, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  const auto start = std::chrono::steady_clock::now();
  std::string record;
  int64_t records = 0;
  while (*(*reader)->Next(&record)) ++records;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double megabytes = (*reader)->position().offset / 1e6;
  const int64_t grown_kilobytes = MaxResidentKilobytes() - kilobytes_before;
  std::cout << records << " records, " << megabytes << " MB in " << seconds
            << " s: " << megabytes / seconds << " MB/s; peak memory grew by "
            << grown_kilobytes << " KiB\n";
  EXPECT_LT(grown_kilobytes, 4096);
}

}  // namespace
}  // namespace distrt
