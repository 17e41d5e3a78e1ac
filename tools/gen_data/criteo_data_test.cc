#include "tools/gen_data/criteo_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/example.pb.h"
#include "runtime/input/feature_spec.h"
#include "runtime/input/tfrecord_reader.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

CriteoDataOptions SmallOptions() {
  CriteoDataOptions options;
  options.rows = 2000;
  options.eval_fraction = 0.25;
  options.shards = 3;
  options.vocab = 5000;
  options.zipf = 1.1;
  options.seed = 7;
  options.threads = 2;
  return options;
}

CriteoModel MakeModel(const CriteoDataOptions& options) {
  absl::StatusOr<CriteoModel> model = CriteoModel::Create(options);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

CriteoDataSummary Write(const CriteoDataOptions& options,
                        const std::string& dir,
                        const std::string& prefix = "criteo") {
  CriteoDataSummary summary;
  const absl::Status status = WriteCriteoData(options, dir, prefix, &summary);
  EXPECT_TRUE(status.ok()) << status;
  return summary;
}

std::string Contents(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  EXPECT_TRUE(contents.ok()) << contents.status();
  return contents.ok() ? *contents : "";
}

// The records of a TFRecord file, read with the runtime's reader.
std::vector<std::string> ReadRecords(const std::string& path,
                                     TfRecordCompression compression) {
  std::vector<std::string> records;
  absl::StatusOr<std::unique_ptr<TfRecordReader>> reader =
      TfRecordReader::Open(path, compression, /*parser=*/nullptr);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return records;
  std::string record;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    records.push_back(record);
  }
  return records;
}

// A record parsed with the generated tf.Example class and turned back into
// a row; a test failure when its features are not exactly Criteo's, one
// value each, of the right types.
CriteoRow ParseRecord(const std::string& record) {
  CriteoRow row;
  tf::Example example;
  EXPECT_TRUE(example.ParseFromString(record));
  const auto& features = example.features().feature();
  EXPECT_EQ(features.size(),
            1 + kCriteoNumericFeatures + kCriteoCategoricalFeatures);
  const auto int64_value = [&](const std::string& name) -> int64_t {
    auto it = features.find(name);
    if (it == features.end()) {
      ADD_FAILURE() << "no feature " << name;
      return -1;
    }
    EXPECT_TRUE(it->second.has_int64_list()) << name;
    EXPECT_EQ(it->second.int64_list().value_size(), 1) << name;
    return it->second.int64_list().value_size() == 1
               ? it->second.int64_list().value(0)
               : -1;
  };
  row.label = int64_value("label");
  for (int j = 0; j < kCriteoNumericFeatures; ++j) {
    const std::string name = CriteoNumericName(j);
    auto it = features.find(name);
    if (it == features.end()) {
      ADD_FAILURE() << "no feature " << name;
      continue;
    }
    EXPECT_TRUE(it->second.has_float_list()) << name;
    EXPECT_EQ(it->second.float_list().value_size(), 1) << name;
    if (it->second.float_list().value_size() == 1) {
      row.numeric[j] = it->second.float_list().value(0);
    }
  }
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    row.categorical[f] = int64_value(CriteoCategoricalName(f));
  }
  return row;
}

void ExpectSameRow(const CriteoRow& actual, const CriteoRow& expected,
                   int64_t index) {
  EXPECT_EQ(actual.label, expected.label) << "row " << index;
  EXPECT_EQ(actual.numeric, expected.numeric) << "row " << index;
  EXPECT_EQ(actual.categorical, expected.categorical) << "row " << index;
}

// The exact ROC AUC (ties as 1/2), by sorting: independent of the
// histogram the library uses.
double ExactAuc(std::vector<std::pair<double, int64_t>> scored) {
  std::sort(scored.begin(), scored.end());
  double positives = 0, negatives = 0, ordered = 0;
  size_t i = 0;
  while (i < scored.size()) {
    size_t j = i;
    double tie_pos = 0, tie_neg = 0;
    while (j < scored.size() && scored[j].first == scored[i].first) {
      (scored[j].second == 1 ? tie_pos : tie_neg) += 1;
      ++j;
    }
    ordered += tie_pos * (negatives + 0.5 * tie_neg);
    positives += tie_pos;
    negatives += tie_neg;
    i = j;
  }
  return ordered / (positives * negatives);
}

TEST(CriteoNamesTest, FeatureNamesAndCsvHeader) {
  EXPECT_EQ(CriteoNumericName(0), "I1");
  EXPECT_EQ(CriteoNumericName(12), "I13");
  EXPECT_EQ(CriteoCategoricalName(0), "C1");
  EXPECT_EQ(CriteoCategoricalName(25), "C26");
  const std::vector<std::string> columns =
      absl::StrSplit(CriteoCsvHeader(), ',');
  ASSERT_EQ(columns.size(), 40u);
  EXPECT_EQ(columns[0], "label");
  EXPECT_EQ(columns[1], "I1");
  EXPECT_EQ(columns[13], "I13");
  EXPECT_EQ(columns[14], "C1");
  EXPECT_EQ(columns[39], "C26");
}

TEST(CriteoShardsTest, PathsFollowTfNaming) {
  CriteoDataOptions options;
  options.shards = 4;
  EXPECT_EQ(CriteoShardPath(options, "/d", "p", CriteoSplit::kTrain, 0),
            "/d/p.train-00000-of-00004.tfrecord");
  EXPECT_EQ(CriteoShardPath(options, "/d/", "p", CriteoSplit::kEval, 3),
            "/d/p.eval-00003-of-00004.tfrecord");
  options.compression = TfRecordCompression::kGzip;
  EXPECT_EQ(CriteoShardPath(options, "/d", "p", CriteoSplit::kTrain, 1),
            "/d/p.train-00001-of-00004.tfrecord.gz");
  options.compression = TfRecordCompression::kNone;
  options.format = CriteoFileFormat::kCsv;
  options.shards = 12345;
  EXPECT_EQ(CriteoShardPath(options, "d", "p", CriteoSplit::kTrain, 678),
            "d/p.train-00678-of-12345.csv");
  EXPECT_EQ(CriteoSpecPath("/d", "p"), "/d/p.features.json");
}

TEST(CriteoShardsTest, ShardsAreContiguousRangesCoveringEachSplit) {
  CriteoDataOptions options;
  options.rows = 1003;
  options.eval_fraction = 0.1;  // 100 eval rows
  options.shards = 7;
  ASSERT_EQ(CriteoEvalRows(options), 100);
  int64_t next = 0;
  for (CriteoSplit split : {CriteoSplit::kTrain, CriteoSplit::kEval}) {
    for (int s = 0; s < options.shards; ++s) {
      const auto [begin, end] = CriteoShardRows(options, split, s);
      EXPECT_EQ(begin, next);
      EXPECT_GE(end - begin, (split == CriteoSplit::kTrain ? 903 : 100) / 7);
      EXPECT_LE(end - begin,
                (split == CriteoSplit::kTrain ? 903 : 100) / 7 + 1);
      next = end;
    }
    EXPECT_EQ(next, split == CriteoSplit::kTrain ? 903 : 1003);
  }
  // More shards than eval rows: some eval shards are empty.
  options.rows = 10;
  options.eval_fraction = 0.2;
  options.shards = 5;
  int64_t eval_total = 0;
  for (int s = 0; s < options.shards; ++s) {
    const auto [begin, end] = CriteoShardRows(options, CriteoSplit::kEval, s);
    eval_total += end - begin;
  }
  EXPECT_EQ(eval_total, 2);
  // The train split is never empty.
  options.eval_fraction = 0.99;
  EXPECT_EQ(CriteoEvalRows(options), 9);
}

TEST(IdPermutationTest, IsABijectionOfTheRange) {
  for (int64_t n : {1, 2, 3, 5, 1000, 1023, 1024, 1025, 65537}) {
    for (uint64_t key : {0ull, 1ull, 0xdeadbeefull}) {
      const IdPermutation permutation(n, key);
      std::vector<bool> seen(n, false);
      for (int64_t x = 0; x < n; ++x) {
        const int64_t y = permutation(x);
        ASSERT_GE(y, 0) << n;
        ASSERT_LT(y, n) << n;
        ASSERT_FALSE(seen[y]) << "n=" << n << " key=" << key << " x=" << x;
        seen[y] = true;
        ASSERT_EQ(permutation.Inverse(y), x) << "n=" << n << " key=" << key;
      }
    }
  }
}

TEST(IdPermutationTest, InverseUndoesLargeRanges) {
  for (int64_t n : {int64_t{10'000'000}, kMaxCriteoVocab}) {
    const IdPermutation permutation(n, 7);
    for (int64_t x : {int64_t{0}, int64_t{1}, int64_t{12345}, n / 2, n - 1}) {
      const int64_t y = permutation(x);
      ASSERT_GE(y, 0);
      ASSERT_LT(y, n);
      EXPECT_EQ(permutation.Inverse(y), x) << n;
    }
  }
}

TEST(IdPermutationTest, FrequentRanksAreNotSmallIds) {
  const IdPermutation permutation(1'000'000, 42);
  int small = 0;
  for (int64_t rank = 0; rank < 100; ++rank) {
    if (permutation(rank) < 10'000) ++small;
  }
  // 1% of the range: about 1 of 100 by chance.
  EXPECT_LE(small, 5);
}

TEST(CriteoModelTest, RowsHaveCriteoShapeAndAreDeterministic) {
  const CriteoDataOptions options = SmallOptions();
  const CriteoModel model = MakeModel(options);
  const CriteoModel again = MakeModel(options);
  CriteoDataOptions other_seed = options;
  other_seed.seed = 8;
  const CriteoModel other = MakeModel(other_seed);
  int64_t positives = 0;
  int differing = 0;
  std::set<int64_t> c1_ids;
  for (int64_t i = 0; i < 2000; ++i) {
    CriteoRow row, row_again, row_other;
    const double p = model.Row(i, &row);
    EXPECT_EQ(again.Row(i, &row_again), p);
    ExpectSameRow(row_again, row, i);
    other.Row(i, &row_other);
    differing += row_other.categorical != row.categorical;
    EXPECT_GT(p, 0);
    EXPECT_LT(p, 1);
    EXPECT_DOUBLE_EQ(model.Probability(row), p);
    ASSERT_TRUE(row.label == 0 || row.label == 1);
    positives += row.label;
    for (float value : row.numeric) {
      ASSERT_TRUE(std::isfinite(value));
      ASSERT_GE(value, 0);  // log(1 + count)
    }
    for (int64_t id : row.categorical) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, options.vocab);
    }
    c1_ids.insert(row.categorical[0]);
  }
  EXPECT_GT(differing, 1900);
  // Zipf: many repeats, but more than a handful of distinct ids.
  EXPECT_GT(c1_ids.size(), 100u);
  EXPECT_LT(c1_ids.size(), 1500u);
  // About 25% positive (sd ~1%).
  EXPECT_NEAR(static_cast<double>(positives) / 2000, 0.25, 0.05);
}

TEST(CriteoModelTest, LogitIsTheSumOfItsParts) {
  const CriteoModel model = MakeModel(SmallOptions());
  CriteoRow row;
  model.Row(3, &row);
  double logit = model.bias();
  for (int j = 0; j < kCriteoNumericFeatures; ++j) {
    logit += model.NumericWeight(j) * row.numeric[j];
  }
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    logit += model.CategoricalEffect(f, row.categorical[f]);
  }
  EXPECT_NEAR(model.Logit(row), logit, 1e-12);
  // An id's effect is a function of the id: the same in every row.
  EXPECT_EQ(model.CategoricalEffect(4, 1234), model.CategoricalEffect(4, 1234));
  EXPECT_NE(model.CategoricalEffect(4, 1234), model.CategoricalEffect(5, 1234));
  // Ranks are a bijection of the ids, and rare ids say less: the mean
  // |effect| of ranks 1..500 is about twice that of ranks 4001..4500 (damped
  // by ~0.87 and ~0.44).
  const int64_t vocab = SmallOptions().vocab;
  std::vector<bool> seen(vocab + 1, false);
  double head = 0, tail = 0;
  for (int64_t id = 0; id < vocab; ++id) {
    const int64_t rank = model.Rank(2, id);
    ASSERT_GE(rank, 1);
    ASSERT_LE(rank, vocab);
    ASSERT_FALSE(seen[rank]);
    seen[rank] = true;
    if (rank <= 500) head += std::abs(model.CategoricalEffect(2, id));
    if (rank > 4000 && rank <= 4500) {
      tail += std::abs(model.CategoricalEffect(2, id));
    }
  }
  EXPECT_GT(head, 1.5 * tail);
  EXPECT_LT(head, 2.5 * tail);
}

TEST(CriteoDataTest, WritesTfRecordShardsThatMatchTheModel) {
  TestDir dir;
  const CriteoDataOptions options = SmallOptions();
  const CriteoDataSummary summary = Write(options, dir.path());
  EXPECT_EQ(summary.train_rows, 1500);
  EXPECT_EQ(summary.eval_rows, 500);
  EXPECT_THAT(
      summary.train_files,
      ElementsAre(dir.path() + "/criteo.train-00000-of-00003.tfrecord",
                  dir.path() + "/criteo.train-00001-of-00003.tfrecord",
                  dir.path() + "/criteo.train-00002-of-00003.tfrecord"));
  EXPECT_THAT(summary.eval_files,
              ElementsAre(dir.path() + "/criteo.eval-00000-of-00003.tfrecord",
                          dir.path() + "/criteo.eval-00001-of-00003.tfrecord",
                          dir.path() + "/criteo.eval-00002-of-00003.tfrecord"));
  EXPECT_EQ(summary.spec_file, dir.path() + "/criteo.features.json");
  // Nothing else: no temporaries left behind.
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir.path());
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(names->size(), 7u);

  const CriteoModel model = MakeModel(options);
  int64_t index = 0;
  int64_t bytes = 0;
  int64_t positives = 0;
  std::vector<std::pair<double, int64_t>> eval_scores;
  std::vector<std::string> all_files = summary.train_files;
  all_files.insert(all_files.end(), summary.eval_files.begin(),
                   summary.eval_files.end());
  for (const std::string& path : all_files) {
    bytes += static_cast<int64_t>(Contents(path).size());
    for (const std::string& record :
         ReadRecords(path, TfRecordCompression::kNone)) {
      const CriteoRow row = ParseRecord(record);
      CriteoRow expected;
      model.Row(index, &expected);
      ExpectSameRow(row, expected, index);
      positives += row.label;
      if (index >= summary.train_rows) {
        eval_scores.emplace_back(model.Probability(row), row.label);
      }
      ++index;
    }
  }
  EXPECT_EQ(index, options.rows);
  EXPECT_EQ(bytes, summary.bytes);
  EXPECT_DOUBLE_EQ(summary.positive_fraction,
                   static_cast<double>(positives) / options.rows);
  const double exact = ExactAuc(eval_scores);
  EXPECT_LE(std::abs(summary.true_eval_auc - exact),
            summary.true_eval_auc_error + 1e-12);
  EXPECT_LT(summary.true_eval_auc_error, 1e-3);
}

// The stated range: on 20000 eval rows (the AUC's sd is then ~0.004) the
// true model's AUC lies in [0.74, 0.81], and the positive share in
// [0.23, 0.27], for several exponents and vocabularies (the scale and bias
// are fitted per data set).
TEST(CriteoDataTest, TrueAucAndPositiveShareAreInTheStatedRange) {
  for (const auto& [vocab, zipf] : std::vector<std::pair<int64_t, double>>{
           {1'000'000, 1.1}, {10'000, 0.8}, {10'000'000, 1.5}}) {
    TestDir dir;
    CriteoDataOptions options;
    options.rows = 40000;
    options.eval_fraction = 0.5;
    options.shards = 2;
    options.vocab = vocab;
    options.zipf = zipf;
    options.seed = 3;
    const CriteoDataSummary summary = Write(options, dir.path());
    EXPECT_GE(summary.true_eval_auc, 0.74) << vocab << " " << zipf;
    EXPECT_LE(summary.true_eval_auc, 0.81) << vocab << " " << zipf;
    EXPECT_LT(summary.true_eval_auc_error, 1e-4);
    EXPECT_GE(summary.positive_fraction, 0.23) << vocab << " " << zipf;
    EXPECT_LE(summary.positive_fraction, 0.27) << vocab << " " << zipf;
  }
}

TEST(CriteoDataTest, SameOptionsGiveSameBytesWhateverTheThreads) {
  TestDir one, two;
  CriteoDataOptions options = SmallOptions();
  options.threads = 1;
  const CriteoDataSummary first = Write(options, one.path());
  options.threads = 3;
  const CriteoDataSummary second = Write(options, two.path());
  ASSERT_EQ(first.train_files.size(), second.train_files.size());
  for (size_t i = 0; i < first.train_files.size(); ++i) {
    EXPECT_EQ(Contents(first.train_files[i]), Contents(second.train_files[i]));
    EXPECT_EQ(Contents(first.eval_files[i]), Contents(second.eval_files[i]));
  }
  EXPECT_EQ(Contents(first.spec_file), Contents(second.spec_file));
  EXPECT_EQ(first.true_eval_auc, second.true_eval_auc);
  EXPECT_EQ(first.positive_fraction, second.positive_fraction);
}

TEST(CriteoDataTest, ShardCountOnlyRecutsTheSameRows) {
  TestDir one, two;
  CriteoDataOptions options = SmallOptions();
  options.shards = 1;
  const CriteoDataSummary single = Write(options, one.path());
  options.shards = 4;
  const CriteoDataSummary four = Write(options, two.path());
  std::vector<std::string> concatenated;
  for (const std::string& path : four.train_files) {
    for (std::string& record : ReadRecords(path, TfRecordCompression::kNone)) {
      concatenated.push_back(std::move(record));
    }
  }
  EXPECT_EQ(concatenated,
            ReadRecords(single.train_files[0], TfRecordCompression::kNone));
}

TEST(CriteoDataTest, GzipFilesHoldTheSameRecords) {
  TestDir plain_dir, gzip_dir;
  CriteoDataOptions options = SmallOptions();
  const CriteoDataSummary plain = Write(options, plain_dir.path());
  options.compression = TfRecordCompression::kGzip;
  const CriteoDataSummary gzip = Write(options, gzip_dir.path());
  ASSERT_EQ(gzip.train_files.size(), 3u);
  EXPECT_THAT(gzip.train_files[0], testing::EndsWith(".tfrecord.gz"));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(TfRecordCompressionForPath(gzip.train_files[i]),
              TfRecordCompression::kGzip);
    const std::string compressed = Contents(gzip.train_files[i]);
    ASSERT_GE(compressed.size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>(compressed[0]), 0x1f);  // gzip magic
    EXPECT_EQ(static_cast<unsigned char>(compressed[1]), 0x8b);
    EXPECT_EQ(ReadRecords(gzip.train_files[i], TfRecordCompression::kGzip),
              ReadRecords(plain.train_files[i], TfRecordCompression::kNone));
  }
  EXPECT_LT(gzip.bytes, plain.bytes);
  EXPECT_EQ(gzip.true_eval_auc, plain.true_eval_auc);
}

TEST(CriteoDataTest, CsvFilesHoldAHeaderAndTheSameRows) {
  TestDir dir;
  CriteoDataOptions options = SmallOptions();
  options.format = CriteoFileFormat::kCsv;
  const CriteoDataSummary summary = Write(options, dir.path(), "c");
  EXPECT_EQ(summary.train_files[1], dir.path() + "/c.train-00001-of-00003.csv");
  const CriteoModel model = MakeModel(options);
  int64_t index = 0;
  int64_t bytes = 0;
  std::vector<std::string> all_files = summary.train_files;
  all_files.insert(all_files.end(), summary.eval_files.begin(),
                   summary.eval_files.end());
  for (const std::string& path : all_files) {
    const std::string contents = Contents(path);
    bytes += static_cast<int64_t>(contents.size());
    std::vector<absl::string_view> lines =
        absl::StrSplit(contents, '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty()) << path;
    EXPECT_EQ(lines[0], CriteoCsvHeader()) << path;
    for (size_t l = 1; l < lines.size(); ++l, ++index) {
      const std::vector<absl::string_view> fields =
          absl::StrSplit(lines[l], ',');
      ASSERT_EQ(fields.size(), 40u) << path << ":" << l + 1;
      CriteoRow expected;
      model.Row(index, &expected);
      CriteoRow row;
      std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(),
                      row.label);
      for (int j = 0; j < kCriteoNumericFeatures; ++j) {
        const absl::string_view field = fields[1 + j];
        std::from_chars(field.data(), field.data() + field.size(),
                        row.numeric[j]);
      }
      for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
        const absl::string_view field = fields[14 + f];
        std::from_chars(field.data(), field.data() + field.size(),
                        row.categorical[f]);
      }
      // Floats are printed so that they read back exactly.
      ExpectSameRow(row, expected, index);
    }
  }
  EXPECT_EQ(index, options.rows);
  EXPECT_EQ(bytes, summary.bytes);
}

TEST(CriteoDataTest, NoEvalRowsMeansNoEvalFilesAndNoAuc) {
  TestDir dir;
  CriteoDataOptions options = SmallOptions();
  options.eval_fraction = 0;
  const CriteoDataSummary summary = Write(options, dir.path());
  EXPECT_EQ(summary.eval_rows, 0);
  EXPECT_TRUE(summary.eval_files.empty());
  EXPECT_TRUE(std::isnan(summary.true_eval_auc));
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 4u);  // 3 train shards and the spec
}

TEST(CriteoSpecTest, SpecJsonHasTheExpectedEntries) {
  TestDir dir;
  CriteoDataOptions options = SmallOptions();
  options.embedding_dim = 8;
  const CriteoDataSummary summary = Write(options, dir.path());
  const nlohmann::json spec =
      nlohmann::json::parse(Contents(summary.spec_file), nullptr,
                            /*allow_exceptions=*/false);
  ASSERT_FALSE(spec.is_discarded()) << Contents(summary.spec_file);
  EXPECT_EQ(spec["label"], "label");
  ASSERT_EQ(spec["numeric"].size(), 13u);
  EXPECT_EQ(
      spec["numeric"][0],
      nlohmann::json::parse(R"({"name": "I1", "length": 1, "default": 0.0})"));
  EXPECT_EQ(spec["numeric"][12]["name"], "I13");
  ASSERT_EQ(spec["categorical"].size(), 26u);
  EXPECT_EQ(spec["categorical"][25],
            nlohmann::json::parse(R"({"name": "C26", "kind": "hashed"})"));
  ASSERT_EQ(spec["embedding_groups"].size(), 26u);
  EXPECT_EQ(spec["embedding_groups"][0],
            nlohmann::json::parse(R"({"name": "C1", "features": ["C1"],
                                      "dim": 8, "combiner": "sum"})"));
  EXPECT_EQ(spec.size(), 4u);

  // The runtime's own parser accepts it.
  absl::StatusOr<FeatureSpec> parsed = ReadFeatureSpec(summary.spec_file);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->num_dense(), 13);
  EXPECT_EQ(parsed->groups.size(), 26u);
  EXPECT_EQ(parsed->categorical[0].kind, CategoricalKind::kHashed);
}

TEST(CriteoSpecTest, IdentityKindDeclaresTheVocabularyAsBuckets) {
  CriteoDataOptions options = SmallOptions();
  options.spec_kind = CriteoSpecKind::kIdentity;
  const std::string json = CriteoFeatureSpecJson(options);
  const nlohmann::json spec = nlohmann::json::parse(json);
  EXPECT_EQ(spec["categorical"][3],
            nlohmann::json::parse(
                R"({"name": "C4", "kind": "identity", "buckets": 5000})"));
  absl::StatusOr<FeatureSpec> parsed = ParseFeatureSpec(json, "spec.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->categorical[3].kind, CategoricalKind::kIdentity);
  EXPECT_EQ(parsed->categorical[3].buckets, 5000);
}

TEST(CriteoDataTest, RejectsBadOptionsNamingTheField) {
  const auto error = [](void (*change)(CriteoDataOptions*)) {
    CriteoDataOptions options = SmallOptions();
    change(&options);
    return ValidateCriteoDataOptions(options);
  };
  const auto expect = [](const absl::Status& status, absl::string_view start) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), StartsWith(std::string(start)));
  };
  expect(error([](CriteoDataOptions* o) { o->rows = 0; }), "rows ");
  expect(error([](CriteoDataOptions* o) { o->eval_fraction = 1; }),
         "eval_fraction ");
  expect(error([](CriteoDataOptions* o) { o->shards = 0; }), "shards ");
  expect(error([](CriteoDataOptions* o) { o->shards = 100000; }), "shards ");
  expect(error([](CriteoDataOptions* o) { o->vocab = 0; }), "vocab ");
  expect(error([](CriteoDataOptions* o) { o->zipf = 0; }), "zipf ");
  expect(error([](CriteoDataOptions* o) { o->zipf = std::nan(""); }), "zipf ");
  expect(error([](CriteoDataOptions* o) {
           o->format = CriteoFileFormat::kCsv;
           o->compression = TfRecordCompression::kGzip;
         }),
         "compression gzip is for tfrecord files only");
  expect(error([](CriteoDataOptions* o) { o->embedding_dim = 0; }),
         "embedding_dim ");
  expect(error([](CriteoDataOptions* o) { o->threads = 0; }), "threads ");
  EXPECT_TRUE(ValidateCriteoDataOptions(SmallOptions()).ok());

  EXPECT_THAT(ParseCriteoFileFormat("parquet").status().message(),
              HasSubstr("tfrecord, csv"));
  EXPECT_EQ(*ParseCriteoSpecKind("identity"), CriteoSpecKind::kIdentity);
  EXPECT_FALSE(ParseCriteoSpecKind("hash_bucket").ok());
}

TEST(CriteoDataTest, WriteErrorsNameTheProblem) {
  TestDir dir;
  const CriteoDataOptions options = SmallOptions();
  absl::Status missing = WriteCriteoData(options, dir.path() + "/missing", "p",
                                         /*summary=*/nullptr);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  EXPECT_THAT(missing.message(), HasSubstr("/missing"));

  absl::Status path_prefix =
      WriteCriteoData(options, dir.path(), "a/b", /*summary=*/nullptr);
  EXPECT_EQ(path_prefix.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(path_prefix.message(), HasSubstr("a/b"));
}

// A shard that cannot be put in place (a directory holds its name) fails
// the run, and the shards already completed are removed: no partial data
// set and no spec remain.
TEST(CriteoDataTest, AFailedShardLeavesNoPartialDataSet) {
  TestDir dir;
  CriteoDataOptions options = SmallOptions();
  options.threads = 1;
  // An old spec from an earlier run, which must not describe the new files.
  dir.WriteFile("p.features.json", "{}");
  const std::string blocked =
      CriteoShardPath(options, dir.path(), "p", CriteoSplit::kEval, 1);
  ASSERT_EQ(mkdir(blocked.c_str(), 0755), 0);
  const absl::Status status =
      WriteCriteoData(options, dir.path(), "p", /*summary=*/nullptr);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(blocked));
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, ElementsAre("p.eval-00001-of-00003.tfrecord"));
}

}  // namespace
}  // namespace distrt
