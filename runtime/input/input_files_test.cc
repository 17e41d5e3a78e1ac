#include "runtime/input/input_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/input/example.h"
#include "runtime/input/feature_spec.h"
#include "runtime/input/input_context.h"
#include "runtime/util/file_privileges.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

std::vector<float> Labels(const std::vector<Example>& examples) {
  std::vector<float> labels;
  for (const Example& example : examples) labels.push_back(example.label);
  return labels;
}

InputFormatOptions Csv(bool has_header = false) {
  InputFormatOptions options;
  options.format = InputFormat::kCsv;
  options.csv.has_header = has_header;
  return options;
}

TEST(ParseInputFormatTest, AcceptsTheFormatNames) {
  for (const char* name : {"libsvm", "svm", "LIBSVM", "Svm"}) {
    absl::StatusOr<InputFormat> format = ParseInputFormat(name);
    ASSERT_TRUE(format.ok()) << name << ": " << format.status();
    EXPECT_EQ(*format, InputFormat::kLibsvm) << name;
  }
  for (const char* name : {"csv", "CSV"}) {
    absl::StatusOr<InputFormat> format = ParseInputFormat(name);
    ASSERT_TRUE(format.ok()) << name << ": " << format.status();
    EXPECT_EQ(*format, InputFormat::kCsv) << name;
  }
  EXPECT_EQ(InputFormatName(InputFormat::kLibsvm), "libsvm");
  EXPECT_EQ(InputFormatName(InputFormat::kCsv), "csv");
}

TEST(ParseInputFormatTest, UnknownNameListsTheAcceptedOnes) {
  for (const char* name : {"json", "", "csv "}) {
    absl::Status status = ParseInputFormat(name).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(),
              absl::StrCat("unknown input format \"", name,
                           "\"; expected one of: libsvm, svm, csv, tfrecord"));
  }
}

TEST(InputFormatForPathTest, ByExtension) {
  EXPECT_EQ(InputFormatForPath("a/train.csv"), InputFormat::kCsv);
  EXPECT_EQ(InputFormatForPath("a/train.svm"), InputFormat::kLibsvm);
  EXPECT_EQ(InputFormatForPath("a/part-0"), InputFormat::kLibsvm);
  for (const char* name : {"d.tfrecord", "d.tfrecords", "d.tfrec",
                           "d.tfrecord.gz", "d.tfrecords.gzip"}) {
    EXPECT_EQ(InputFormatForPath(name), InputFormat::kTfRecord) << name;
  }
}

FeatureSpec LabelAndOneNumeric() {
  FeatureSpec spec;
  spec.label = "y";
  NumericFeature x;
  x.name = "x";
  spec.numeric.push_back(x);
  return spec;
}

TEST(MakeRecordFormatTest, RefusesWhatCannotBeRead) {
  InputFormatOptions tfrecord;
  tfrecord.format = InputFormat::kTfRecord;
  EXPECT_THAT(MakeRecordFormat(tfrecord).status().message(),
              HasSubstr("TFRecord data needs a feature spec (--features)"));

  InputFormatOptions libsvm;
  libsvm.features = std::make_shared<const FeatureSpec>(LabelAndOneNumeric());
  EXPECT_THAT(MakeRecordFormat(libsvm).status().message(),
              HasSubstr("which LIBSVM data does not have"));

  InputFormatOptions csv;
  csv.format = InputFormat::kCsv;
  csv.features = libsvm.features;
  EXPECT_THAT(MakeRecordFormat(csv).status().message(),
              HasSubstr("the files need a header line"));
}

TEST(ReadInputFileTest, NamedCsvColumnsThroughASpec) {
  TestDir dir;
  const std::string path =
      dir.WriteFile("named.csv", "x,other,y\n2.5,7,1\n-1,8,0\n");
  InputFormatOptions csv;
  csv.format = InputFormat::kCsv;
  csv.csv.has_header = true;
  csv.features = std::make_shared<const FeatureSpec>(LabelAndOneNumeric());
  absl::StatusOr<std::vector<Example>> examples = ReadInputFile(path, csv);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 2u);
  EXPECT_EQ((*examples)[0].label, 1.0f);
  EXPECT_EQ((*examples)[0].dense, std::vector<float>({2.5f}));
  EXPECT_EQ((*examples)[1].label, 0.0f);
  EXPECT_EQ((*examples)[1].dense, std::vector<float>({-1.0f}));
  EXPECT_EQ((*examples)[1].line, 3);
}

TEST(ReadInputFileTest, ReadsEitherFormat) {
  TestDir dir;
  const std::string svm = dir.WriteFile("a.svm", "1 1:0.5 3:2\n0 2:1\n");
  absl::StatusOr<std::vector<Example>> sparse =
      ReadInputFile(svm, InputFormatOptions{});
  ASSERT_TRUE(sparse.ok()) << sparse.status();
  ASSERT_EQ(sparse->size(), 2u);
  EXPECT_THAT((*sparse)[0].ids, ElementsAre(0, 2));  // 1-based in the file

  const std::string csv = dir.WriteFile("a.csv", "y,x\n1,2\n0,3\n");
  absl::StatusOr<std::vector<Example>> dense =
      ReadInputFile(csv, Csv(/*has_header=*/true));
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_THAT(Labels(*dense), ElementsAre(1, 0));
  EXPECT_THAT((*dense)[1].dense, ElementsAre(3));
}

TEST(ReadInputShardTest, WholeFilesInOrder) {
  TestDir dir;
  InputShard shard;
  shard.files = {dir.WriteFile("b.svm", "3 1:1\n4 1:1\n"),
                 dir.WriteFile("a.svm", "1 1:1\n"),
                 dir.WriteFile("c.svm", "5 1:1\n6 1:1\n")};
  absl::StatusOr<std::vector<Example>> examples =
      ReadInputShard(shard, InputFormatOptions{});
  ASSERT_TRUE(examples.ok()) << examples.status();
  // shard.files' order, not sorted again.
  EXPECT_THAT(Labels(*examples), ElementsAre(3, 4, 1, 5, 6));
}

TEST(ReadInputShardTest, ByRecordCountsExamplesNotLines) {
  TestDir dir;
  // Comments and blank lines take no record index: records are 0..5.
  const std::string svm = dir.WriteFile(
      "t.svm",
      "# written by a test\n0 1:1\n\n1 1:1\n2 1:1 # two\n\n3 1:1\n"
      "# more\n4 1:1\n5 1:1\n");
  InputShard shard;
  shard.files = {svm};
  shard.by_record = true;
  shard.count = 3;
  std::vector<std::vector<float>> labels;
  for (int index = 0; index < 3; ++index) {
    shard.index = index;
    absl::StatusOr<std::vector<Example>> examples =
        ReadInputShard(shard, InputFormatOptions{});
    ASSERT_TRUE(examples.ok()) << examples.status();
    labels.push_back(Labels(*examples));
  }
  EXPECT_THAT(labels[0], ElementsAre(0, 3));
  EXPECT_THAT(labels[1], ElementsAre(1, 4));
  EXPECT_THAT(labels[2], ElementsAre(2, 5));
}

TEST(ReadInputShardTest, ByRecordRestartsCountingInEachFile) {
  TestDir dir;
  InputShard shard;
  // The header line holds no record either.
  shard.files = {dir.WriteFile("a.csv", "label,x\n0,0\n1,0\n2,0\n"),
                 dir.WriteFile("b.csv", "label,x\n10,0\n11,0\n")};
  shard.by_record = true;
  shard.count = 2;
  shard.index = 1;
  absl::StatusOr<std::vector<Example>> examples =
      ReadInputShard(shard, Csv(/*has_header=*/true));
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_THAT(Labels(*examples), ElementsAre(1, 11));
}

TEST(ReadInputShardTest, EmptyFileGivesNoExamples) {
  TestDir dir;
  InputShard shard;
  shard.files = {dir.WriteFile("empty.svm", "")};
  absl::StatusOr<std::vector<Example>> examples =
      ReadInputShard(shard, InputFormatOptions{});
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_THAT(*examples, IsEmpty());
}

TEST(ReadInputShardTest, MalformedLineErrorNamesFileAndLine) {
  TestDir dir;
  InputShard shard;
  shard.files = {dir.WriteFile("good.svm", "1 1:1\n"),
                 dir.WriteFile("bad.svm", "1 1:1\n0 2:1\n1 3:x\n")};
  // Even the worker whose records are elsewhere sees the error.
  shard.by_record = true;
  shard.count = 4;
  shard.index = 3;
  absl::Status status = ReadInputShard(shard, InputFormatOptions{}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              StartsWith(shard.files[1] + ":3: "));
  EXPECT_THAT(status.message(), HasSubstr("\"x\" is not a number"));

  InputShard csv_shard;
  csv_shard.files = {dir.WriteFile("bad.csv", "1,2,3\n4,5\n")};
  status = ReadInputShard(csv_shard, Csv()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            absl::StrCat(csv_shard.files[0], ":2: 2 columns, expected 3"));
}

TEST(ReadInputShardTest, MissingFileIsNotFound) {
  TestDir dir;
  InputShard shard;
  shard.files = {JoinPath(dir.path(), "missing.svm")};
  absl::Status status = ReadInputShard(shard, InputFormatOptions{}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(shard.files[0]));
}

TEST(ReadInputShardTest, InvalidShardIsAnError) {
  InputShard shard;
  shard.count = 2;
  shard.index = 2;
  absl::Status status = ReadInputShard(shard, InputFormatOptions{}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "input shard 2 of 2 is not a shard");
}

TEST(ExpandInputFilesTest, FilesGlobsAndDirectoriesSortedWithoutDuplicates) {
  TestDir dir;
  const std::string b = dir.WriteFile("part-b.svm", "");
  const std::string a = dir.WriteFile("part-a.svm", "");
  const std::string other = dir.WriteFile("other.csv", "");
  const std::string sub = JoinPath(dir.path(), "sub");
  ASSERT_TRUE(CreateDirectories(JoinPath(sub, "nested")).ok());
  const std::string y = dir.WriteFile("sub/y.svm", "");
  const std::string x = dir.WriteFile("sub/x.svm", "");
  dir.WriteFile("sub/.hidden", "");
  dir.WriteFile("sub/nested/deep.svm", "");

  absl::StatusOr<std::vector<std::string>> files =
      ExpandInputFiles(absl::StrCat(" ", JoinPath(dir.path(), "part-*.svm"),
                                    " ,", sub, ",", a, ",,", other, " "));
  ASSERT_TRUE(files.ok()) << files.status();
  // part-a.svm twice (glob and name): once.
  EXPECT_THAT(*files, ElementsAre(other, a, b, x, y));
}

TEST(ExpandInputFilesTest, DirectoryWithTrailingSlash) {
  TestDir dir;
  const std::string file = dir.WriteFile("f.csv", "");
  absl::StatusOr<std::vector<std::string>> files =
      ExpandInputFiles(dir.path() + "/");
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre(file));
}

TEST(ExpandInputFilesTest, AnEntryMatchingNothingIsNotFound) {
  TestDir dir;
  const std::string good = dir.WriteFile("good.svm", "");
  const std::string pattern = JoinPath(dir.path(), "*.csv");
  absl::Status status =
      ExpandInputFiles(absl::StrCat(good, ",", pattern)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            absl::StrCat("no input files match \"", pattern, "\""));

  const std::string missing = JoinPath(dir.path(), "missing.svm");
  status = ExpandInputFiles(missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            absl::StrCat("input \"", missing, "\" does not exist"));

  // A wildcard under a directory that does not exist.
  const std::string under_missing = JoinPath(dir.path(), "nodir/*.svm");
  status = ExpandInputFiles(under_missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            absl::StrCat("no input files match \"", under_missing, "\""));
}

TEST(ExpandInputFilesTest, DirectoryWithoutFilesIsNotFound) {
  TestDir dir;
  const std::string empty = JoinPath(dir.path(), "empty");
  ASSERT_TRUE(CreateDirectories(JoinPath(empty, "sub")).ok());
  dir.WriteFile("empty/.hidden", "");
  absl::Status status = ExpandInputFiles(empty).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            absl::StrCat("no input files in \"", empty,
                         "\" (subdirectories and hidden files are not read)"));
}

TEST(ExpandInputFilesTest, NoEntriesIsInvalid) {
  for (const char* spec : {"", " , ,"}) {
    absl::Status status = ExpandInputFiles(spec).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_EQ(status.message(),
              absl::StrCat("no input files given (\"", spec, "\")"));
  }
}

TEST(ExpandInputFilesTest, UnreadableDirectoryIsReportedAsSuch) {
  TestDir dir;
  const std::string locked = JoinPath(dir.path(), "locked");
  ASSERT_TRUE(CreateDirectories(locked).ok());
  dir.WriteFile("locked/a.svm", "");
  ASSERT_EQ(chmod(locked.c_str(), 0), 0);
  // In a child held to file modes (root, as in CI, is not otherwise).
  auto denied = [&](const absl::Status& s) {
    const bool ok = s.code() == absl::StatusCode::kPermissionDenied &&
                    absl::StrContains(s.message(), locked);
    if (!ok) std::cerr << s << "\n";
    return ok;
  };
  EXPECT_EXIT(
      {
        const absl::Status dropped = DropFilePrivileges();
        if (!dropped.ok()) std::cerr << dropped << "\n";
        const bool as_directory = denied(ExpandInputFiles(locked).status());
        const bool as_pattern =
            denied(ExpandInputFiles(JoinPath(locked, "*")).status());
        std::exit(dropped.ok() && as_directory && as_pattern ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  ASSERT_EQ(chmod(locked.c_str(), 0700), 0);  // so that TestDir can remove it
}

TEST(ExpandInputFilesTest, ShardsOfTheExpandedListCoverEveryFileOnce) {
  TestDir dir;
  for (int i = 0; i < 5; ++i) dir.WriteFile(absl::StrCat("p", i, ".svm"), "");
  absl::StatusOr<std::vector<std::string>> files =
      ExpandInputFiles(JoinPath(dir.path(), "p*.svm"));
  ASSERT_TRUE(files.ok()) << files.status();
  std::vector<std::string> seen;
  for (int worker = 0; worker < 2; ++worker) {
    absl::StatusOr<InputShard> shard =
        ShardInput(*files, InputContext{2, worker, 1});
    ASSERT_TRUE(shard.ok()) << shard.status();
    seen.insert(seen.end(), shard->files.begin(), shard->files.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, *files);
}

}  // namespace
}  // namespace distrt
