#include "runtime/input/libsvm_reader.h"

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
using ::testing::FloatEq;
using ::testing::IsEmpty;
using ::testing::SizeIs;

LibsvmOptions Options(IndexBase base, LabelKind label_kind = LabelKind::kAsIs,
                      int64_t num_features = 0) {
  LibsvmOptions options;
  options.index_base = base;
  options.label_kind = label_kind;
  options.num_features = num_features;
  return options;
}

// 1-based, as liblinear writes it, with what the format allows besides
// features: comments, a blank line, a qid, tabs, CRLF, no final newline.
constexpr absl::string_view kOneBased =
    "+1 1:0.5 3:1.5 # first\n"
    "-1\t2:2  10:-0.25\r\n"
    "\n"
    "   # only a comment\n"
    "0 qid:7 4:1e-3\n"
    "1";

TEST(LibsvmReaderTest, ParsesAOneBasedFile) {
  TestDir dir;
  const std::string path = dir.WriteFile("train.svm", kOneBased);
  absl::StatusOr<std::vector<Example>> examples = ParseLibsvmFile(path);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_THAT(*examples, SizeIs(4));
  const std::vector<Example>& e = *examples;
  EXPECT_EQ(e[0].label, 1.0f);
  EXPECT_THAT(e[0].ids, ElementsAre(0, 2));
  EXPECT_THAT(e[0].values, ElementsAre(0.5f, 1.5f));
  EXPECT_EQ(e[1].label, -1.0f);
  EXPECT_THAT(e[1].ids, ElementsAre(1, 9));
  EXPECT_THAT(e[1].values, ElementsAre(2.0f, -0.25f));
  EXPECT_EQ(e[2].label, 0.0f);
  EXPECT_THAT(e[2].ids, ElementsAre(3));
  EXPECT_THAT(e[2].values, ElementsAre(FloatEq(0.001f)));
  EXPECT_EQ(e[3].label, 1.0f);
  EXPECT_THAT(e[3].ids, IsEmpty());
  EXPECT_THAT(e[3].values, IsEmpty());
  EXPECT_THAT(e[0].dense, IsEmpty());

  // The same, said rather than detected.
  absl::StatusOr<std::vector<Example>> said =
      ParseLibsvmFile(path, Options(IndexBase::kOne));
  ASSERT_TRUE(said.ok()) << said.status();
  EXPECT_THAT((*said)[1].ids, ElementsAre(1, 9));
  EXPECT_EQ(*DetectIndexBase(path), IndexBase::kOne);
}

TEST(LibsvmReaderTest, DetectsAZeroBasedFile) {
  TestDir dir;
  // The 0 comes late: ids of earlier lines must not have been shifted.
  const std::string path =
      dir.WriteFile("zero.svm", "1 3:4\n1 2:1 7:1\n0 0:1 5:2\n");
  EXPECT_EQ(*DetectIndexBase(path), IndexBase::kZero);
  absl::StatusOr<std::vector<Example>> examples = ParseLibsvmFile(path);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_THAT(*examples, SizeIs(3));
  EXPECT_THAT((*examples)[0].ids, ElementsAre(3));
  EXPECT_THAT((*examples)[1].ids, ElementsAre(2, 7));
  EXPECT_THAT((*examples)[2].ids, ElementsAre(0, 5));
  EXPECT_THAT((*examples)[2].values, ElementsAre(1.0f, 2.0f));
}

TEST(LibsvmReaderTest, ExplicitZeroBaseKeepsIndices) {
  TestDir dir;
  const std::string path = dir.WriteFile("f.svm", "1 1:1 4:2\n");
  absl::StatusOr<std::vector<Example>> examples =
      ParseLibsvmFile(path, Options(IndexBase::kZero));
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_THAT((*examples)[0].ids, ElementsAre(1, 4));
  // Detected, the same file is 1-based.
  EXPECT_THAT((*ParseLibsvmFile(path))[0].ids, ElementsAre(0, 3));
}

TEST(LibsvmReaderTest, EmptyFileHasNoExamples) {
  TestDir dir;
  const std::string path = dir.WriteFile("empty.svm", "");
  absl::StatusOr<std::vector<Example>> examples = ParseLibsvmFile(path);
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_THAT(*examples, IsEmpty());
  EXPECT_EQ(*DetectIndexBase(path), IndexBase::kOne);
}

TEST(LibsvmReaderTest, BinaryLabelsMapToZeroAndOne) {
  TestDir dir;
  const std::string path =
      dir.WriteFile("b.svm", "-1 1:1\n+1 1:1\n0 1:1\n1 1:1\n-1.0 1:1\n");
  absl::StatusOr<std::vector<Example>> examples =
      ParseLibsvmFile(path, Options(IndexBase::kDetect, LabelKind::kBinary));
  ASSERT_TRUE(examples.ok()) << examples.status();
  std::vector<float> labels;
  for (const Example& e : *examples) labels.push_back(e.label);
  EXPECT_THAT(labels, ElementsAre(0.0f, 1.0f, 0.0f, 1.0f, 0.0f));
}

TEST(LibsvmReaderTest, NonBinaryLabelIsAnErrorWithBinaryLabels) {
  TestDir dir;
  const std::string path = dir.WriteFile("b.svm", "1 1:1\n2 1:1\n");
  absl::StatusOr<std::vector<Example>> examples =
      ParseLibsvmFile(path, Options(IndexBase::kDetect, LabelKind::kBinary));
  EXPECT_EQ(examples.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(examples.status().message(),
            path + ":2: label \"2\" is not binary: expected -1, 0 or +1");
}

TEST(LibsvmReaderTest, MulticlassAndRealLabelsAreKeptAsIs) {
  TestDir dir;
  const std::string path =
      dir.WriteFile("m.svm", "3 1:1\n-1 1:1\n17.25 2:1\n-0.5\n");
  absl::StatusOr<std::vector<Example>> examples = ParseLibsvmFile(path);
  ASSERT_TRUE(examples.ok()) << examples.status();
  std::vector<float> labels;
  for (const Example& e : *examples) labels.push_back(e.label);
  EXPECT_THAT(labels, ElementsAre(3.0f, -1.0f, 17.25f, -0.5f));
}

struct BadLine {
  std::string line;
  IndexBase base;
  std::string message;  // after "<path>:4: "
};

TEST(LibsvmReaderTest, MalformedLinesAreErrorsNamingFileAndLine) {
  const std::vector<BadLine> cases = {
      {"1 3:x", IndexBase::kDetect,
       "feature \"3:x\": value \"x\" is not a number"},
      {"1 3:0.5x", IndexBase::kDetect,
       "feature \"3:0.5x\": value \"0.5x\" is not a number"},
      {"1 3:", IndexBase::kDetect,
       "feature \"3:\": value \"\" is not a number"},
      {"1 3:1:2", IndexBase::kDetect,
       "feature \"3:1:2\": value \"1:2\" is not a number"},
      {"1 3:inf", IndexBase::kDetect,
       "feature \"3:inf\": value \"inf\" is not finite"},
      {"1 3:nan", IndexBase::kOne,
       "feature \"3:nan\": value \"nan\" is not finite"},
      {"1 3:1e50", IndexBase::kZero,
       "feature \"3:1e50\": value \"1e50\" is not finite"},
      {"1 35", IndexBase::kDetect,
       "feature \"35\" has no ':' (expected index:value)"},
      {"1 3:1 junk", IndexBase::kDetect,
       "feature \"junk\" has no ':' (expected index:value)"},
      {"1 a:1", IndexBase::kDetect,
       "feature \"a:1\": index \"a\" is not an integer"},
      {"1 1.5:1", IndexBase::kDetect,
       "feature \"1.5:1\": index \"1.5\" is not an integer"},
      {"1 :1", IndexBase::kDetect,
       "feature \":1\": index \"\" is not an integer"},
      {"1 99999999999999999999:1", IndexBase::kDetect,
       "feature \"99999999999999999999:1\": index \"99999999999999999999\" is "
       "not an integer"},
      {"1 -2:1", IndexBase::kDetect, "feature \"-2:1\": index -2 is negative"},
      {"1 0:1 2:1", IndexBase::kOne,
       "feature \"0:1\": index 0, but indices are 1-based (index_base kOne)"},
      {"1 5:1 3:1", IndexBase::kDetect,
       "feature \"3:1\": index 3 is not greater than the previous index 5; "
       "indices must be strictly increasing"},
      {"1 3:1 3:2", IndexBase::kZero,
       "feature \"3:2\": index 3 is not greater than the previous index 3; "
       "indices must be strictly increasing"},
      {"abc 1:1", IndexBase::kDetect, "label \"abc\" is not a number"},
      {"1:0.5 2:1", IndexBase::kDetect, "label \"1:0.5\" is not a number"},
      {"nan 1:1", IndexBase::kDetect, "label \"nan\" is not finite"},
      {"-inf 1:1", IndexBase::kDetect, "label \"-inf\" is not finite"},
      {"1 qid:x 3:1", IndexBase::kDetect,
       "\"qid:x\": query id \"x\" is not an integer"},
  };
  TestDir dir;
  for (const BadLine& c : cases) {
    SCOPED_TRACE(c.line);
    // Line 4, after a good line, a blank one and a comment.
    const std::string path = dir.WriteFile(
        "bad.svm", absl::StrCat("1 1:1\n\n# c\n", c.line, "\n1 2:2\n"));
    absl::StatusOr<std::vector<Example>> examples =
        ParseLibsvmFile(path, Options(c.base));
    EXPECT_EQ(examples.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(examples.status().message(),
              absl::StrCat(path, ":4: ", c.message));
  }
}

TEST(LibsvmReaderTest, DetectIndexBaseReportsMalformedLines) {
  TestDir dir;
  const std::string path = dir.WriteFile("bad.svm", "1 1:1\n1 2:x\n");
  absl::StatusOr<IndexBase> base = DetectIndexBase(path);
  EXPECT_EQ(base.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(base.status().message(),
            path + ":2: feature \"2:x\": value \"x\" is not a number");
}

TEST(LibsvmReaderTest, NumFeaturesBoundsTheIds) {
  TestDir dir;
  // 1-based, detected: index 10 is id 9, the last allowed with 10 features.
  const std::string one =
      dir.WriteFile("one.svm", "1 1:1 10:1\n\n0 2:1 11:1\n");
  EXPECT_TRUE(
      ParseLibsvmFile(one, Options(IndexBase::kDetect, LabelKind::kAsIs, 11))
          .ok());
  absl::StatusOr<std::vector<Example>> detected =
      ParseLibsvmFile(one, Options(IndexBase::kDetect, LabelKind::kAsIs, 10));
  EXPECT_EQ(detected.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(detected.status().message(),
            one +
                ":3: feature index 11 is out of range: num_features is 10 "
                "and indices are 1-based");
  absl::StatusOr<std::vector<Example>> said =
      ParseLibsvmFile(one, Options(IndexBase::kOne, LabelKind::kAsIs, 10));
  EXPECT_EQ(said.status().message(), detected.status().message());

  const std::string zero = dir.WriteFile("zero.svm", "1 0:1 10:1\n");
  absl::StatusOr<std::vector<Example>> examples =
      ParseLibsvmFile(zero, Options(IndexBase::kDetect, LabelKind::kAsIs, 10));
  EXPECT_EQ(examples.status().message(),
            zero +
                ":1: feature index 10 is out of range: num_features is 10 "
                "and indices are 0-based");
}

TEST(LibsvmReaderTest, NegativeNumFeaturesIsInvalid) {
  TestDir dir;
  const std::string path = dir.WriteFile("f.svm", "1 1:1\n");
  absl::StatusOr<std::vector<Example>> examples =
      ParseLibsvmFile(path, Options(IndexBase::kOne, LabelKind::kAsIs, -1));
  EXPECT_EQ(examples.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(examples.status().message(),
            "LibsvmOptions: num_features -1 is negative");
}

TEST(LibsvmReaderTest, MissingFileIsNotFoundNamingThePath) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "missing.svm");
  absl::StatusOr<std::vector<Example>> examples = ParseLibsvmFile(path);
  EXPECT_EQ(examples.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(examples.status().message(),
            "cannot open " + path + ": No such file or directory");
  EXPECT_EQ(DetectIndexBase(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(LibsvmLineTest, ParsesOneLine) {
  absl::StatusOr<std::optional<Example>> example =
      ParseLibsvmLine("-1 qid:3 2:0.5 7:-4 # note\r",
                      Options(IndexBase::kOne, LabelKind::kBinary), "stdin:5");
  ASSERT_TRUE(example.ok()) << example.status();
  ASSERT_TRUE(example->has_value());
  EXPECT_EQ((*example)->label, 0.0f);
  EXPECT_THAT((*example)->ids, ElementsAre(1, 6));
  EXPECT_THAT((*example)->values, ElementsAre(0.5f, -4.0f));

  example = ParseLibsvmLine("1 0:2", Options(IndexBase::kZero), "x");
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_THAT((*example)->ids, ElementsAre(0));
}

TEST(LibsvmLineTest, BlankAndCommentLinesHoldNoExample) {
  for (absl::string_view line : {"", "  \t", "# all comment", "\r"}) {
    absl::StatusOr<std::optional<Example>> example =
        ParseLibsvmLine(line, Options(IndexBase::kOne), "f:1");
    ASSERT_TRUE(example.ok()) << example.status();
    EXPECT_FALSE(example->has_value()) << "\"" << line << "\"";
  }
}

TEST(LibsvmLineTest, ErrorsArePrefixedWithTheLocation) {
  absl::StatusOr<std::optional<Example>> example =
      ParseLibsvmLine("1 3:x", Options(IndexBase::kOne), "train.svm:17");
  EXPECT_EQ(example.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(example.status().message(),
            "train.svm:17: feature \"3:x\": value \"x\" is not a number");

  example = ParseLibsvmLine("1 4:1 9:1",
                            Options(IndexBase::kOne, LabelKind::kAsIs, 8),
                            "train.svm:18");
  EXPECT_EQ(example.status().message(),
            "train.svm:18: feature index 9 is out of range: num_features is 8 "
            "and indices are 1-based");
}

TEST(LibsvmLineTest, DetectNeedsTheWholeFile) {
  absl::StatusOr<std::optional<Example>> example =
      ParseLibsvmLine("1 1:1", Options(IndexBase::kDetect), "f:1");
  EXPECT_EQ(example.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(example.status().message(),
            "ParseLibsvmLine needs index_base kZero or kOne: telling the base "
            "needs the whole file (DetectIndexBase)");
}

}  // namespace
}  // namespace distrt
