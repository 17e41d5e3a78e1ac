#include "runtime/input/csv_reader.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

CsvOptions WithHeader(std::string label_column_name = "") {
  CsvOptions options;
  options.has_header = true;
  options.label_column_name = std::move(label_column_name);
  return options;
}

CsvOptions LabelColumn(int label_column) {
  CsvOptions options;
  options.label_column = label_column;
  return options;
}

TEST(CsvReaderTest, ParsesLabelFirstWithoutHeader) {
  TestDir dir;
  const std::string path = dir.WriteFile("train.csv", "1,2.5,3\n0, -1 ,4e2\n");
  absl::StatusOr<std::vector<Example>> examples = ParseCsvFile(path);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_THAT(*examples, SizeIs(2));
  EXPECT_EQ((*examples)[0].label, 1.0f);
  EXPECT_THAT((*examples)[0].dense, ElementsAre(2.5f, 3.0f));
  EXPECT_EQ((*examples)[1].label, 0.0f);
  EXPECT_THAT((*examples)[1].dense, ElementsAre(-1.0f, 400.0f));
  EXPECT_THAT((*examples)[0].ids, IsEmpty());
  EXPECT_THAT((*examples)[0].values, IsEmpty());
}

TEST(CsvReaderTest, NegativeLabelColumnCountsFromTheEnd) {
  TestDir dir;
  const std::string path = dir.WriteFile("t.csv", "1,2,3\n4,5,6\n");
  absl::StatusOr<std::vector<Example>> last =
      ParseCsvFile(path, LabelColumn(-1));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ((*last)[0].label, 3.0f);
  EXPECT_THAT((*last)[0].dense, ElementsAre(1.0f, 2.0f));
  EXPECT_EQ((*last)[1].label, 6.0f);
  EXPECT_THAT((*last)[1].dense, ElementsAre(4.0f, 5.0f));

  absl::StatusOr<std::vector<Example>> first =
      ParseCsvFile(path, LabelColumn(-3));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)[1].label, 4.0f);
  EXPECT_THAT((*first)[1].dense, ElementsAre(5.0f, 6.0f));

  absl::StatusOr<std::vector<Example>> middle =
      ParseCsvFile(path, LabelColumn(1));
  ASSERT_TRUE(middle.ok()) << middle.status();
  EXPECT_EQ((*middle)[0].label, 2.0f);
  EXPECT_THAT((*middle)[0].dense, ElementsAre(1.0f, 3.0f));
}

TEST(CsvReaderTest, LabelColumnOutOfRangeIsAnError) {
  TestDir dir;
  const std::string path = dir.WriteFile("t.csv", "\n1,2,3\n");
  for (int column : {3, -4}) {
    absl::StatusOr<std::vector<Example>> examples =
        ParseCsvFile(path, LabelColumn(column));
    EXPECT_EQ(examples.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(examples.status().message(),
              absl::StrCat(path, ":2: label_column ", column,
                           " is out of range for 3 columns"));
  }
}

TEST(CsvReaderTest, HeaderWithNamedLabelColumn) {
  TestDir dir;
  const std::string path =
      dir.WriteFile("t.csv", "age, y ,income\n31,1,5e4\n45,0,7e4\n");
  absl::StatusOr<std::vector<Example>> examples =
      ParseCsvFile(path, WithHeader("y"));
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_THAT(*examples, SizeIs(2));
  EXPECT_EQ((*examples)[0].label, 1.0f);
  EXPECT_THAT((*examples)[0].dense, ElementsAre(31.0f, 50000.0f));
  EXPECT_EQ((*examples)[1].label, 0.0f);
  EXPECT_THAT((*examples)[1].dense, ElementsAre(45.0f, 70000.0f));

  // Without a name the header is skipped and label_column applies.
  absl::StatusOr<std::vector<Example>> by_index =
      ParseCsvFile(path, WithHeader());
  ASSERT_TRUE(by_index.ok()) << by_index.status();
  EXPECT_EQ((*by_index)[0].label, 31.0f);
  EXPECT_THAT((*by_index)[0].dense, ElementsAre(1.0f, 50000.0f));
}

TEST(CsvReaderTest, UnknownOrAmbiguousLabelNameIsAnError) {
  TestDir dir;
  const std::string path = dir.WriteFile("t.csv", "a,b,a\n1,2,3\n");
  absl::StatusOr<std::vector<Example>> missing =
      ParseCsvFile(path, WithHeader("y"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(),
            path + ":1: no column named \"y\" in the header (a, b, a)");
  absl::StatusOr<std::vector<Example>> ambiguous =
      ParseCsvFile(path, WithHeader("a"));
  EXPECT_EQ(ambiguous.status().message(),
            path + ":1: label column name \"a\" is ambiguous: columns 1 and 3");
}

TEST(CsvReaderTest, CrlfBlankLinesAndByteOrderMark) {
  TestDir dir;
  const std::string path = dir.WriteFile(
      "excel.csv", "\xEF\xBB\xBFy;x1;x2\r\n1;2;3\r\n\r\n  \r\n0;5;6\r\n");
  CsvOptions options = WithHeader("y");
  options.delimiter = ';';
  absl::StatusOr<std::vector<Example>> examples = ParseCsvFile(path, options);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_THAT(*examples, SizeIs(2));
  EXPECT_EQ((*examples)[0].label, 1.0f);
  EXPECT_THAT((*examples)[0].dense, ElementsAre(2.0f, 3.0f));
  EXPECT_EQ((*examples)[1].label, 0.0f);
  EXPECT_THAT((*examples)[1].dense, ElementsAre(5.0f, 6.0f));
}

TEST(CsvReaderTest, TabDelimiterAndNoFinalNewline) {
  TestDir dir;
  const std::string path = dir.WriteFile("t.tsv", "1\t2\n3\t4");
  CsvOptions options;
  options.delimiter = '\t';
  absl::StatusOr<std::vector<Example>> examples = ParseCsvFile(path, options);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_THAT(*examples, SizeIs(2));
  EXPECT_EQ((*examples)[1].label, 3.0f);
  EXPECT_THAT((*examples)[1].dense, ElementsAre(4.0f));
}

TEST(CsvReaderTest, EmptyAndHeaderOnlyFilesHaveNoExamples) {
  TestDir dir;
  absl::StatusOr<std::vector<Example>> empty =
      ParseCsvFile(dir.WriteFile("empty.csv", ""));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(*empty, IsEmpty());
  absl::StatusOr<std::vector<Example>> header_only =
      ParseCsvFile(dir.WriteFile("header.csv", "y,x\n"), WithHeader("y"));
  ASSERT_TRUE(header_only.ok()) << header_only.status();
  EXPECT_THAT(*header_only, IsEmpty());
}

TEST(CsvReaderTest, EveryRowHasTheColumnsOfTheFirst) {
  TestDir dir;
  const std::string path =
      dir.WriteFile("t.csv", "1,2,3,4,5,6\n1,2,3,4,5,6\n1,2,3,4,5\n");
  absl::StatusOr<std::vector<Example>> examples = ParseCsvFile(path);
  EXPECT_EQ(examples.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(examples.status().message(), path + ":3: 5 columns, expected 6");

  const std::string header = dir.WriteFile("h.csv", "y,a,b\n1,2,3\n1,2,3,4\n");
  examples = ParseCsvFile(header, WithHeader());
  EXPECT_EQ(examples.status().message(), header + ":3: 4 columns, expected 3");
}

struct BadRow {
  std::string row;
  std::string message;  // after "<path>:3: "
};

TEST(CsvReaderTest, BadFieldsAreErrorsNamingTheColumn) {
  const std::vector<BadRow> cases = {
      {"1,2,abc", "column 3 (\"age\"): \"abc\" is not a number"},
      {"1,,3", "column 2 (\"x\"): empty field"},
      {"1, ,3", "column 2 (\"x\"): empty field"},
      {"1,2,", "column 3 (\"age\"): empty field"},
      {"1,inf,3", "column 2 (\"x\"): \"inf\" is not finite"},
      {"1, NaN ,3", "column 2 (\"x\"): \"NaN\" is not finite"},
      {"1,1e39,3", "column 2 (\"x\"): \"1e39\" is not finite"},
      {"yes,2,3", "column 1 (\"label\"): \"yes\" is not a number"},
      {"1,2.5.1,3", "column 2 (\"x\"): \"2.5.1\" is not a number"},
      {"1,\"2,5\",3", "column 2 (\"x\"): quoted fields are not supported"},
      {"1,2, \"3\"", "column 3 (\"age\"): quoted fields are not supported"},
  };
  TestDir dir;
  for (const BadRow& c : cases) {
    SCOPED_TRACE(c.row);
    const std::string path = dir.WriteFile(
        "t.csv", absl::StrCat("label,x,age\n1,2,3\n", c.row, "\n1,2,3\n"));
    absl::StatusOr<std::vector<Example>> examples =
        ParseCsvFile(path, WithHeader());
    EXPECT_EQ(examples.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(examples.status().message(),
              absl::StrCat(path, ":3: ", c.message));
  }
}

TEST(CsvReaderTest, WithoutHeaderColumnsAreNumbered) {
  TestDir dir;
  const std::string path = dir.WriteFile("t.csv", "1,2,3\n1,abc,3\n");
  absl::StatusOr<std::vector<Example>> examples = ParseCsvFile(path);
  EXPECT_EQ(examples.status().message(),
            path + ":2: column 2: \"abc\" is not a number");
  // A quoted field in the first row, before the columns are known.
  const std::string quoted = dir.WriteFile("q.csv", "1,\"a,b\",3\n");
  examples = ParseCsvFile(quoted);
  EXPECT_EQ(examples.status().message(),
            quoted + ":1: column 2: quoted fields are not supported");
}

TEST(CsvReaderTest, InvalidOptions) {
  TestDir dir;
  const std::string path = dir.WriteFile("t.csv", "1,2\n");
  CsvOptions name_without_header;
  name_without_header.label_column_name = "y";
  absl::StatusOr<std::vector<Example>> examples =
      ParseCsvFile(path, name_without_header);
  EXPECT_EQ(examples.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(examples.status().message(),
            "CsvOptions: label_column_name \"y\" needs has_header");

  CsvOptions quote;
  quote.delimiter = '"';
  EXPECT_EQ(CsvLineParser::Create(quote).status().message(),
            "CsvOptions: delimiter '\\\"' cannot separate fields");
  CsvOptions newline;
  newline.delimiter = '\n';
  EXPECT_EQ(CsvLineParser::Create(newline).status().message(),
            "CsvOptions: delimiter '\\n' cannot separate fields");
}

TEST(CsvReaderTest, MissingFileIsNotFoundNamingThePath) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "missing.csv");
  absl::StatusOr<std::vector<Example>> examples = ParseCsvFile(path);
  EXPECT_EQ(examples.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(examples.status().message(),
            "cannot open " + path + ": No such file or directory");
}

TEST(CsvLineParserTest, StreamsLinesAndRemembersTheHeader) {
  CsvOptions options = WithHeader("y");
  absl::StatusOr<CsvLineParser> parser = CsvLineParser::Create(options);
  ASSERT_TRUE(parser.ok()) << parser.status();
  EXPECT_EQ(parser->num_columns(), 0);
  EXPECT_EQ(parser->label_index(), -1);

  absl::StatusOr<std::optional<Example>> line =
      parser->ParseLine("a,b,y\r", "s:1");
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_FALSE(line->has_value());
  EXPECT_EQ(parser->num_columns(), 3);
  EXPECT_EQ(parser->label_index(), 2);
  EXPECT_THAT(parser->column_names(), ElementsAre("a", "b", "y"));

  line = parser->ParseLine("", "s:2");
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_FALSE(line->has_value());

  line = parser->ParseLine("0.5,-2,1\r", "s:3");
  ASSERT_TRUE(line.ok()) << line.status();
  ASSERT_TRUE(line->has_value());
  EXPECT_EQ((*line)->label, 1.0f);
  EXPECT_THAT((*line)->dense, ElementsAre(0.5f, -2.0f));

  line = parser->ParseLine("1,2", "s:4");
  EXPECT_EQ(line.status().message(), "s:4: 2 columns, expected 3");
}

TEST(CsvLineParserTest, FailedHeaderLeavesTheColumnsUnknown) {
  absl::StatusOr<CsvLineParser> parser = CsvLineParser::Create(WithHeader("y"));
  ASSERT_TRUE(parser.ok()) << parser.status();
  EXPECT_FALSE(parser->ParseLine("a,b", "s:1").ok());
  EXPECT_EQ(parser->num_columns(), 0);
  EXPECT_THAT(parser->column_names(), IsEmpty());
}

}  // namespace
}  // namespace distrt
