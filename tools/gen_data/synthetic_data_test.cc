#include "tools/gen_data/synthetic_data.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/input/example.h"
#include "runtime/input/libsvm_reader.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

SyntheticDataOptions Options(SyntheticTask task, int64_t rows = 2000) {
  SyntheticDataOptions options;
  options.task = task;
  options.rows = rows;
  options.num_features = 200;
  options.features_per_row = 8;
  options.num_classes = 4;
  options.noise = 0.1;
  options.eval_fraction = 0.25;
  options.seed = 7;
  return options;
}

struct Written {
  std::string train_path;
  std::string eval_path;
  SyntheticDataSummary summary;
};

// Writes the data into `dir` as <name>.train.svm / <name>.eval.svm.
Written Write(const TestDir& dir, const SyntheticDataOptions& options,
              const std::string& name = "data") {
  Written written;
  written.train_path = JoinPath(dir.path(), name + ".train.svm");
  written.eval_path = JoinPath(dir.path(), name + ".eval.svm");
  absl::Status status = WriteSyntheticData(options, written.train_path,
                                           written.eval_path, &written.summary);
  EXPECT_TRUE(status.ok()) << status;
  return written;
}

std::string Contents(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  EXPECT_TRUE(contents.ok()) << contents.status();
  return contents.ok() ? *contents : "";
}

// The examples of a file, read back as training would read them: 1-based,
// indices checked against num_features.
std::vector<Example> Parse(const std::string& path,
                           const SyntheticDataOptions& options) {
  LibsvmOptions libsvm;
  libsvm.index_base = IndexBase::kOne;
  libsvm.label_kind = options.task == SyntheticTask::kBinary
                          ? LabelKind::kBinary
                          : LabelKind::kAsIs;
  libsvm.num_features = options.num_features;
  absl::StatusOr<std::vector<Example>> examples = ParseLibsvmFile(path, libsvm);
  EXPECT_TRUE(examples.ok()) << examples.status();
  return examples.ok() ? *std::move(examples) : std::vector<Example>();
}

// Both files, train rows first.
std::vector<Example> ParseAll(const Written& written,
                              const SyntheticDataOptions& options) {
  std::vector<Example> all = Parse(written.train_path, options);
  for (Example& e : Parse(written.eval_path, options)) {
    all.push_back(std::move(e));
  }
  return all;
}

std::vector<double> AsDoubles(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

class SyntheticDataTaskTest : public ::testing::TestWithParam<SyntheticTask> {};

INSTANTIATE_TEST_SUITE_P(
    AllTasks, SyntheticDataTaskTest,
    ::testing::Values(SyntheticTask::kBinary, SyntheticTask::kMulticlass,
                      SyntheticTask::kRegression),
    [](const ::testing::TestParamInfo<SyntheticTask>& info) {
      return std::string(SyntheticTaskName(info.param));
    });

TEST_P(SyntheticDataTaskTest, TheSeedDeterminesTheFiles) {
  TestDir dir;
  SyntheticDataOptions options = Options(GetParam());
  const Written first = Write(dir, options, "first");
  const Written again = Write(dir, options, "again");
  EXPECT_EQ(Contents(first.train_path), Contents(again.train_path));
  EXPECT_EQ(Contents(first.eval_path), Contents(again.eval_path));

  options.seed = 8;
  const Written other = Write(dir, options, "other");
  EXPECT_NE(Contents(first.train_path), Contents(other.train_path));
  EXPECT_NE(Contents(first.eval_path), Contents(other.eval_path));
}

TEST_P(SyntheticDataTaskTest, SplitsTheRowsAndEveryLineParses) {
  TestDir dir;
  const SyntheticDataOptions options = Options(GetParam());
  const Written written = Write(dir, options);
  EXPECT_EQ(written.summary.train_rows, 1500);
  EXPECT_EQ(written.summary.eval_rows, 500);
  const std::vector<Example> train = Parse(written.train_path, options);
  const std::vector<Example> eval = Parse(written.eval_path, options);
  EXPECT_EQ(train.size(), 1500);
  EXPECT_EQ(eval.size(), 500);
  for (const std::vector<Example>* split : {&train, &eval}) {
    for (const Example& e : *split) {
      // The reader has checked that ids increase strictly and are below
      // num_features.
      ASSERT_EQ(e.ids.size(), options.features_per_row);
      for (float v : e.values) {
        ASSERT_GE(v, 0.5f);
        ASSERT_LT(v, 1.5f);
      }
      if (GetParam() != SyntheticTask::kRegression) {
        ASSERT_EQ(e.label, std::floor(e.label));
        ASSERT_GE(e.label, 0);
        ASSERT_LT(e.label, GetParam() == SyntheticTask::kBinary
                               ? 2
                               : options.num_classes);
      }
    }
  }
}

TEST_P(SyntheticDataTaskTest, TheLinesAreCompactLibsvm) {
  TestDir dir;
  SyntheticDataOptions options = Options(GetParam(), 20);
  options.num_features = 5;
  options.features_per_row = 2;
  const Written written = Write(dir, options);
  for (absl::string_view line :
       absl::StrSplit(Contents(written.train_path), '\n', absl::SkipEmpty())) {
    const std::vector<std::string> tokens = absl::StrSplit(line, ' ');
    ASSERT_EQ(tokens.size(), 3) << line;
    // 1-based ids; values with at most 6 significant digits.
    for (int i = 1; i < 3; ++i) {
      EXPECT_THAT(tokens[i], ::testing::MatchesRegex("[1-5]:[01]\\.?[0-9]*"))
          << line;
      EXPECT_LE(tokens[i].size(), 2 + 7) << line;
    }
  }
}

TEST_P(SyntheticDataTaskTest, NoiseFreeLabelsAreTheGroundTruthsOnTheFile) {
  TestDir dir;
  SyntheticDataOptions options = Options(GetParam());
  options.noise = 0;
  const Written written = Write(dir, options);
  if (GetParam() == SyntheticTask::kRegression) {
    // Only the rounding of labels to 6 digits remains.
    EXPECT_LT(written.summary.true_model_eval_rmse, 1e-4);
  } else {
    EXPECT_EQ(written.summary.true_model_eval_accuracy, 1.0);
  }
  // Checked independently of the summary: the model, applied to the file
  // as the reader returns it, gives its labels.
  absl::StatusOr<SyntheticGroundTruth> truth =
      SyntheticGroundTruth::Create(options);
  ASSERT_TRUE(truth.ok()) << truth.status();
  for (const Example& e : ParseAll(written, options)) {
    const double label = truth->Label(e.ids, AsDoubles(e.values));
    if (GetParam() == SyntheticTask::kRegression) {
      ASSERT_NEAR(e.label, label, 1e-4 * (1 + std::abs(label)));
    } else {
      ASSERT_EQ(e.label, label);
    }
  }
}

TEST_P(SyntheticDataTaskTest, NoiseChangesOnlyTheLabels) {
  TestDir dir;
  SyntheticDataOptions options = Options(GetParam());
  options.noise = 0;
  const std::vector<Example> clean =
      ParseAll(Write(dir, options, "a"), options);
  options.noise = 0.3;
  const std::vector<Example> noisy =
      ParseAll(Write(dir, options, "b"), options);
  ASSERT_EQ(clean.size(), noisy.size());
  int changed = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    ASSERT_EQ(clean[i].ids, noisy[i].ids);
    ASSERT_EQ(clean[i].values, noisy[i].values);
    changed += clean[i].label != noisy[i].label;
  }
  EXPECT_GT(changed, 0);
}

TEST_P(SyntheticDataTaskTest, MoreRowsExtendFewerRows) {
  TestDir dir;
  SyntheticDataOptions options = Options(GetParam(), 100);
  options.eval_fraction = 0;
  const std::string small = Contents(Write(dir, options, "small").train_path);
  options.rows = 300;
  const std::string large = Contents(Write(dir, options, "large").train_path);
  EXPECT_THAT(large, StartsWith(small));
}

TEST(SyntheticDataTest, BinaryLabelsAreBalanced) {
  TestDir dir;
  // Few features make a skewed score distribution likely; the bias is
  // fitted to its median anyway.
  for (int64_t num_features : {1, 3, 50, 1000}) {
    for (uint64_t seed : {1, 2, 3}) {
      SyntheticDataOptions options = Options(SyntheticTask::kBinary, 4000);
      options.num_features = num_features;
      options.features_per_row = std::min<int64_t>(num_features, 5);
      options.noise = 0;
      options.seed = seed;
      const Written written = Write(dir, options);
      EXPECT_NEAR(written.summary.positive_fraction, 0.5, 0.05)
          << num_features << " features, seed " << seed;
      EXPECT_EQ(
          written.summary.class_counts[0] + written.summary.class_counts[1],
          options.rows);
    }
  }
}

TEST(SyntheticDataTest, BinaryNoiseFlipsThatShareOfLabels) {
  TestDir dir;
  SyntheticDataOptions options = Options(SyntheticTask::kBinary, 20000);
  options.noise = 0.2;
  options.eval_fraction = 0.5;
  const Written written = Write(dir, options);
  // 10000 eval rows: the sd of the accuracy is 0.004.
  EXPECT_NEAR(written.summary.true_model_eval_accuracy, 0.8, 0.02);
  EXPECT_NEAR(written.summary.positive_fraction, 0.5, 0.05);
}

TEST(SyntheticDataTest, DenseRowsHoldEveryFeature) {
  TestDir dir;
  SyntheticDataOptions options = Options(SyntheticTask::kBinary, 300);
  options.num_features = 12;
  options.features_per_row = 100;  // >= num_features: dense
  options.noise = 0;
  const Written written = Write(dir, options);
  double sum = 0;
  double sum_squares = 0;
  int64_t n = 0;
  for (const Example& e : ParseAll(written, options)) {
    ASSERT_THAT(e.ids, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
    for (float v : e.values) {
      sum += v;
      sum_squares += v * v;
      ++n;
    }
  }
  // Standard normal values: 3600 of them.
  EXPECT_NEAR(sum / n, 0, 0.1);
  EXPECT_NEAR(sum_squares / n, 1, 0.1);
  EXPECT_EQ(written.summary.true_model_eval_accuracy, 1.0);
  EXPECT_NEAR(written.summary.positive_fraction, 0.5, 0.1);
}

TEST(SyntheticDataTest, MulticlassLabelsCoverEveryClassEvenly) {
  TestDir dir;
  for (int num_classes : {2, 3, 10}) {
    for (int64_t num_features : {4, 1000}) {
      SyntheticDataOptions options = Options(SyntheticTask::kMulticlass, 5000);
      options.num_classes = num_classes;
      options.num_features = num_features;
      options.features_per_row = 3;
      options.noise = 0;
      const Written written = Write(dir, options);
      ASSERT_EQ(written.summary.class_counts.size(), num_classes);
      int64_t total = 0;
      for (int64_t count : written.summary.class_counts) {
        EXPECT_NEAR(static_cast<double>(count) / options.rows,
                    1.0 / num_classes, 0.25 / num_classes)
            << num_classes << " classes, " << num_features << " features";
        total += count;
      }
      EXPECT_EQ(total, options.rows);
    }
  }
}

TEST(SyntheticDataTest, MulticlassNoiseFlipsThatShareOfLabels) {
  TestDir dir;
  SyntheticDataOptions options = Options(SyntheticTask::kMulticlass, 20000);
  options.num_classes = 5;
  options.noise = 0.3;
  options.eval_fraction = 0.5;
  const Written written = Write(dir, options);
  EXPECT_NEAR(written.summary.true_model_eval_accuracy, 0.7, 0.02);
}

TEST(SyntheticDataTest, RegressionNoiseIsTheRequestedStddev) {
  TestDir dir;
  for (double noise : {0.05, 0.5, 2.0}) {
    SyntheticDataOptions options = Options(SyntheticTask::kRegression, 20000);
    options.noise = noise;
    options.eval_fraction = 0.5;
    const Written written = Write(dir, options);
    // 10000 eval rows: the RMSE is within about 1.5% (3 sd).
    EXPECT_NEAR(written.summary.true_model_eval_rmse, noise, 0.03 * noise);
    // The signal has unit variance: labels vary by sqrt(1 + noise^2).
    EXPECT_NEAR(written.summary.eval_label_stddev, std::sqrt(1 + noise * noise),
                0.1 * std::sqrt(1 + noise * noise));
  }
}

TEST(SyntheticDataTest, EvalRowsAreTheLastShareOfRows) {
  SyntheticDataOptions options = Options(SyntheticTask::kBinary, 100);
  options.eval_fraction = 0.29;  // 100 * 0.29 is 28.999999999999996
  EXPECT_EQ(SyntheticEvalRows(options), 29);
  options.eval_fraction = 0;
  EXPECT_EQ(SyntheticEvalRows(options), 0);
  options.rows = 2;
  options.eval_fraction = 0.9;  // the train file keeps a row
  EXPECT_EQ(SyntheticEvalRows(options), 1);

  // The eval file holds what a larger train file would have.
  TestDir dir;
  options = Options(SyntheticTask::kBinary, 10);
  options.eval_fraction = 0.3;
  const Written split = Write(dir, options, "split");
  options.eval_fraction = 0;
  const Written whole = Write(dir, options, "whole");
  EXPECT_EQ(Contents(split.train_path) + Contents(split.eval_path),
            Contents(whole.train_path));
  EXPECT_EQ(Contents(whole.eval_path), "");
  EXPECT_EQ(split.summary.eval_rows, 3);
  EXPECT_EQ(whole.summary.eval_rows, 0);
  EXPECT_TRUE(std::isnan(whole.summary.true_model_eval_accuracy));
}

TEST(SyntheticDataTest, InvalidOptionsNameTheField) {
  struct Case {
    std::function<void(SyntheticDataOptions&)> change;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](SyntheticDataOptions& o) { o.rows = 0; }, "rows "},
      {[](SyntheticDataOptions& o) { o.num_features = 0; }, "num_features "},
      {[](SyntheticDataOptions& o) { o.features_per_row = -1; },
       "features_per_row "},
      {[](SyntheticDataOptions& o) {
         o.task = SyntheticTask::kMulticlass;
         o.num_classes = 1;
       },
       "num_classes "},
      {[](SyntheticDataOptions& o) {
         o.task = SyntheticTask::kMulticlass;
         o.num_classes = kMaxSyntheticClasses + 1;
       },
       "num_classes "},
      {[](SyntheticDataOptions& o) { o.noise = -0.1; }, "noise "},
      {[](SyntheticDataOptions& o) { o.noise = 1.5; }, "noise "},
      {[](SyntheticDataOptions& o) { o.noise = std::nan(""); }, "noise "},
      {[](SyntheticDataOptions& o) {
         o.task = SyntheticTask::kRegression;
         o.noise = -1;
       },
       "noise "},
      {[](SyntheticDataOptions& o) { o.eval_fraction = 1; }, "eval_fraction "},
      {[](SyntheticDataOptions& o) { o.eval_fraction = -0.5; },
       "eval_fraction "},
      {[](SyntheticDataOptions& o) { o.task = static_cast<SyntheticTask>(9); },
       "task "},
  };
  TestDir dir;
  for (const Case& c : cases) {
    SyntheticDataOptions options = Options(SyntheticTask::kBinary);
    c.change(options);
    absl::Status status = ValidateSyntheticDataOptions(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), StartsWith(c.field));
    status = WriteSyntheticData(options, JoinPath(dir.path(), "t"),
                                JoinPath(dir.path(), "e"), nullptr);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  }
  // Nothing was written for any of them.
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir.path());
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ::testing::IsEmpty());

  // Valid edge cases.
  SyntheticDataOptions options = Options(SyntheticTask::kBinary);
  options.noise = 1;
  EXPECT_TRUE(ValidateSyntheticDataOptions(options).ok());
  options.task = SyntheticTask::kRegression;
  options.noise = 3;
  options.num_classes = 0;  // ignored but for multiclass
  EXPECT_TRUE(ValidateSyntheticDataOptions(options).ok());
}

TEST(SyntheticDataTest, AMissingDirectoryIsNotFoundAndWritesNothing) {
  TestDir dir;
  const std::string missing = JoinPath(dir.path(), "missing");
  const std::string train = JoinPath(dir.path(), "data.train.svm");
  const std::string eval = JoinPath(missing, "data.eval.svm");
  absl::Status status = WriteSyntheticData(Options(SyntheticTask::kBinary),
                                           train, eval, /*summary=*/nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(eval));
  EXPECT_THAT(std::string(status.message()), HasSubstr("does not exist"));
  // Not even the train file (or its temporary), whose directory exists.
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir.path());
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ::testing::IsEmpty());
}

TEST(SyntheticDataTest, ReplacesExistingFilesWhole) {
  TestDir dir;
  const std::string train = dir.WriteFile("t.svm", "old train\n");
  const std::string eval = dir.WriteFile("e.svm", "old eval\n");
  SyntheticDataOptions options = Options(SyntheticTask::kRegression, 10);
  ASSERT_TRUE(WriteSyntheticData(options, train, eval, nullptr).ok());
  EXPECT_THAT(Contents(train), ::testing::Not(HasSubstr("old")));
  EXPECT_THAT(Contents(eval), ::testing::Not(HasSubstr("old")));
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir.path());
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre("e.svm", "t.svm"));  // no temporaries
}

TEST(SyntheticDataTest, RejectsBadPaths) {
  TestDir dir;
  const std::string path = JoinPath(dir.path(), "data.svm");
  const SyntheticDataOptions options = Options(SyntheticTask::kBinary);
  absl::Status status = WriteSyntheticData(options, path, path, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(path));
  status = WriteSyntheticData(options, "", path, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  // A directory where the file should be.
  status = WriteSyntheticData(options, dir.path(), path, nullptr);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(dir.path()));
}

TEST(SyntheticDataTest, TaskNamesRoundTrip) {
  for (SyntheticTask task : {SyntheticTask::kBinary, SyntheticTask::kMulticlass,
                             SyntheticTask::kRegression}) {
    absl::StatusOr<SyntheticTask> parsed =
        ParseSyntheticTask(SyntheticTaskName(task));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, task);
  }
  absl::StatusOr<SyntheticTask> bad = ParseSyntheticTask("ranking");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("\"ranking\""));
}

TEST(SyntheticDataTest, HugeFeatureSpacesNeedNoWeightTable) {
  // 2^40 features: weights are computed from the seed as they are needed.
  TestDir dir;
  SyntheticDataOptions options = Options(SyntheticTask::kBinary, 500);
  options.num_features = int64_t{1} << 40;
  options.noise = 0;
  const Written written = Write(dir, options);
  EXPECT_EQ(written.summary.true_model_eval_accuracy, 1.0);
  EXPECT_NEAR(written.summary.positive_fraction, 0.5, 0.1);
  absl::StatusOr<SyntheticGroundTruth> truth =
      SyntheticGroundTruth::Create(options);
  ASSERT_TRUE(truth.ok()) << truth.status();
  for (const Example& e : ParseAll(written, options)) {
    ASSERT_EQ(e.label, truth->Label(e.ids, AsDoubles(e.values)));
  }
}

}  // namespace
}  // namespace distrt
