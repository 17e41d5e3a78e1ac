#ifndef DISTRT_TOOLS_GEN_DATA_CRITEO_DATA_H_
#define DISTRT_TOOLS_GEN_DATA_CRITEO_DATA_H_

// Criteo-shaped synthetic click data with a known ground truth: rows laid
// out as the Criteo display-advertising data sets that recommendation
// models (DLRM, DCN) are measured on, written as sharded TFRecord files of
// tf.Examples or as CSV, with a feature spec (runtime/input/feature_spec.h)
// beside them, so that a training run can be compared with the AUC the
// true model reaches.
//
// A row:
//   label      int64 0/1, about 25% ones (Criteo's click rate is ~26%)
//   I1..I13    one float each: log(1 + c) for a count c = floor(exp(m + s
//              z)), z standard normal, m in [0, 4) and s in [0.5, 2) drawn
//              per feature from the seed: heavy-tailed counts, many zeros
//              for some features, already on the log scale that DLRM's
//              preprocessing applies to Criteo's integer features
//   C1..C26    one int64 id each in [0, vocab): a rank drawn from a Zipf
//              distribution with the given exponent (zipf.h), mapped to an
//              id by a bijection of [0, vocab) of its own per feature
//              (IdPermutation), so that the frequent ids are spread over
//              the range rather than being 0, 1, 2...
//
// The true model (CriteoModel) is additive, as a DLRM without interactions
// can represent it:
//   logit = bias + sum_j w_j I_j + sum_f e_f(C_f),   label ~ Bernoulli(
//   sigmoid(logit))
// where e_f(id) = s_f * g(seed, f, id) * sqrt(H / (H + rank(id) - 1)): g a
// fixed, roughly standard normal value derived by hashing (seed, f, id), so
// that an id carries the same signal in every row it appears in, and damped
// beyond the H = 1000 most frequent ranks. Without the damping the rare
// ids, which a model sees too seldom to learn (an effect of 0.2 needs ~100
// sightings), would carry as much signal as the frequent ones, and a
// learned model would stay well below the true one; with it, nearly all
// the signal sits in ids that a few million rows show often enough. In a
// trial on 2M train rows (vocab 10^6, zipf 1.1), a logistic regression
// with one weight per id, trained for one epoch, reached an eval AUC of
// 0.762 against the true model's 0.777. The numeric part carries ~30% of
// the logit's variance, the categorical part ~70%; one scale for both is
// fitted on a calibration sample so that the logit's standard deviation is
// 1.2 whatever vocab and zipf are (an AUC of about 0.77), and the bias so
// that 25% of the rows are positive.
//
// Determinism: row i is a function of (options that define the
// distribution: seed, vocab, zipf) and i alone, computed from SplitMix64
// streams (splitmix64.h), never std::*_distribution. The row count, the
// eval fraction, the shard count, the thread count and the format only
// decide which rows are written where and how: the same options give the
// same bytes, and concatenating a split's shards in order gives its rows
// in order whatever the shard count. (std::exp/std::log may differ in the
// last bit between libms, which changes a row only when a value falls
// within that bit of a rounding boundary.)
//
// The functions and CriteoModel's const methods are thread-safe.

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/tfrecord_reader.h"
#include "tools/gen_data/zipf.h"

namespace distrt {

inline constexpr int kCriteoNumericFeatures = 13;
inline constexpr int kCriteoCategoricalFeatures = 26;
// Ids per categorical feature: up to 2^40. A hash embedding table does not
// care how large the id space is; beyond this it is no longer data.
inline constexpr int64_t kMaxCriteoVocab = int64_t{1} << 40;
// At most this many shards per split (5-digit shard numbers, as TF's
// "-00000-of-00010").
inline constexpr int kMaxCriteoShards = 99999;

// "label", "I1".."I13" (j = 0..12), "C1".."C26" (f = 0..25).
inline constexpr absl::string_view kCriteoLabelName = "label";
std::string CriteoNumericName(int j);
std::string CriteoCategoricalName(int f);

enum class CriteoFileFormat { kTfRecord, kCsv };
// "tfrecord", "csv"; the inverse is INVALID_ARGUMENT listing the names.
absl::string_view CriteoFileFormatName(CriteoFileFormat format);
absl::StatusOr<CriteoFileFormat> ParseCriteoFileFormat(absl::string_view name);

// How the feature spec declares the categorical features (feature_spec.h):
// "hashed" (ids kept whole for a hash embedding table on the ps tasks) or
// "identity" (ids in [0, vocab), one table row per id).
enum class CriteoSpecKind { kHashed, kIdentity };
absl::string_view CriteoSpecKindName(CriteoSpecKind kind);
absl::StatusOr<CriteoSpecKind> ParseCriteoSpecKind(absl::string_view name);

struct CriteoDataOptions {
  // Rows in both splits together, at least 1.
  int64_t rows = 10000;
  // The share of rows, in [0, 1), in the eval split: the last
  // round(rows * eval_fraction) rows, at most rows - 1.
  double eval_fraction = 0.2;
  // Files per split, 1..kMaxCriteoShards. Shard s of a split holds the
  // split's rows [s * n / shards, (s + 1) * n / shards): contiguous ranges,
  // so a shard is a function of its range, not of how work was scheduled.
  int shards = 1;
  // Ids per categorical feature, 1..kMaxCriteoVocab.
  int64_t vocab = 1000000;
  // The Zipf exponent of the ids' ranks, in (0, ZipfSampler::kMaxExponent].
  // 1.1 puts ~70% of the draws on the 1000 most frequent of 10^6 ids.
  double zipf = 1.1;
  uint64_t seed = 1;
  CriteoFileFormat format = CriteoFileFormat::kTfRecord;
  // GZIP is for TFRecord files only (TF's TFRecordOptions("GZIP")).
  TfRecordCompression compression = TfRecordCompression::kNone;
  CriteoSpecKind spec_kind = CriteoSpecKind::kHashed;
  // The embedding dimension the spec gives every group, 1..65536.
  int64_t embedding_dim = 16;
  // Files written at once, 1..256; each thread writes whole shards.
  int threads = 2;
};

// OK, or INVALID_ARGUMENT whose message starts with the name of the first
// bad field, e.g. "vocab must be in 1..1099511627776, got 0".
absl::Status ValidateCriteoDataOptions(const CriteoDataOptions& options);

// Rows in the eval split (see eval_fraction).
int64_t CriteoEvalRows(const CriteoDataOptions& options);

enum class CriteoSplit { kTrain, kEval };
absl::string_view CriteoSplitName(CriteoSplit split);  // "train", "eval"

// The rows [first, second) of `split`'s shard `shard` as row indices of the
// whole data set (train rows come first, then eval rows).
std::pair<int64_t, int64_t> CriteoShardRows(const CriteoDataOptions& options,
                                            CriteoSplit split, int shard);

// "<out_dir>/<prefix>.<train|eval>-<shard>-of-<shards>.<ext>" with 5-digit
// numbers and ext "tfrecord", "tfrecord.gz" (GZIP, so that a reader's
// compression "auto" recognises it) or "csv".
std::string CriteoShardPath(const CriteoDataOptions& options,
                            absl::string_view out_dir, absl::string_view prefix,
                            CriteoSplit split, int shard);
// "<out_dir>/<prefix>.features.json".
std::string CriteoSpecPath(absl::string_view out_dir, absl::string_view prefix);

// The feature spec of the files as JSON (the format ParseFeatureSpec
// reads): the label, I1..I13 as numeric features of length 1 with default
// 0.0, C1..C26 as categorical features of options.spec_kind (identity with
// vocab buckets), and one embedding group per categorical feature, named
// after it, of options.embedding_dim and combiner "sum".
std::string CriteoFeatureSpecJson(const CriteoDataOptions& options);

// "label,I1,...,I13,C1,...,C26", the CSV files' first line.
std::string CriteoCsvHeader();

struct CriteoRow {
  int64_t label = 0;
  std::array<float, kCriteoNumericFeatures> numeric{};
  std::array<int64_t, kCriteoCategoricalFeatures> categorical{};
};

// A bijection of [0, n): a keyed permutation of the b-bit numbers (b the
// bits of n - 1), by rounds of xor, odd multiplication and xor-shift, each
// invertible mod 2^b, applied again while the result is >= n ("cycle
// walking", which stays a bijection of [0, n); fewer than 2 rounds on
// average). Copyable, a few words.
class IdPermutation {
 public:
  // n >= 1.
  IdPermutation(int64_t n, uint64_t key);
  // `x` in [0, n).
  int64_t operator()(int64_t x) const;
  // The x with (*this)(x) == y, for `y` in [0, n).
  int64_t Inverse(int64_t y) const;

 private:
  uint64_t Mix(uint64_t x) const;
  uint64_t Unmix(uint64_t x) const;
  // Undoes x ^= x >> shift_.
  uint64_t UnXorShift(uint64_t y) const;

  uint64_t n_;
  uint64_t mask_;
  int shift_;
  uint64_t key0_, key1_;
  // The inverses of Mix's multipliers mod 2^64.
  uint64_t inverse0_, inverse1_;
};

// The distribution of the rows and the true model of their labels.
// Copyable; a few KB.
class CriteoModel {
 public:
  // INVALID_ARGUMENT as ValidateCriteoDataOptions. Fits its scale and bias
  // on 32768 calibration rows (tens of milliseconds).
  static absl::StatusOr<CriteoModel> Create(const CriteoDataOptions& options);

  // Row `index` of the data set (>= 0), label included, and its true
  // click probability.
  double Row(int64_t index, CriteoRow* row) const;

  // The true logit of a row's features (its label is not read).
  double Logit(const CriteoRow& row) const;
  // sigmoid(Logit(row)).
  double Probability(const CriteoRow& row) const;

  double bias() const { return bias_; }
  // The logit's weight on numeric feature j.
  double NumericWeight(int j) const { return numeric_weights_[j]; }
  // e_f(id): what id `id` (in [0, vocab)) of categorical feature f adds to
  // the logit.
  double CategoricalEffect(int f, int64_t id) const;
  // The Zipf rank (1 = most frequent) of id `id` of categorical feature f.
  int64_t Rank(int f, int64_t id) const;

 private:
  explicit CriteoModel(const CriteoDataOptions& options, ZipfSampler zipf);

  // The features (not the label) of row `index` of the stream whose key is
  // `stream_key`: the data's rows, or the calibration sample's.
  // `ranks` receives the ids' ranks.
  void Features(uint64_t stream_key, int64_t index, CriteoRow* row,
                std::array<int64_t, kCriteoCategoricalFeatures>* ranks) const;
  // e_f(id) for an id of known rank.
  double Effect(int f, int64_t id, int64_t rank) const;
  // Logit(row) for ids of known ranks.
  double LogitWithRanks(
      const CriteoRow& row,
      const std::array<int64_t, kCriteoCategoricalFeatures>& ranks) const;
  // Fits the weights' scale and the bias (see the top comment).
  void Calibrate();

  // Constant after construction.
  uint64_t seed_;
  uint64_t row_key_;    // the rows' features
  uint64_t label_key_;  // the rows' labels, given their features
  ZipfSampler zipf_;
  // Numeric feature j's count is floor(exp(location + scale * z)).
  std::array<double, kCriteoNumericFeatures> count_location_{};
  std::array<double, kCriteoNumericFeatures> count_scale_{};
  std::vector<IdPermutation> permutations_;  // one per categorical feature
  // The keys of the per-id effects, and each feature's effect scale.
  std::array<uint64_t, kCriteoCategoricalFeatures> effect_keys_{};
  std::array<double, kCriteoCategoricalFeatures> effect_scales_{};
  std::array<double, kCriteoNumericFeatures> numeric_weights_{};
  double bias_ = 0;
};

struct CriteoDataSummary {
  int64_t train_rows = 0;
  int64_t eval_rows = 0;
  // Shard paths in order; eval_files is empty when there are no eval rows.
  std::vector<std::string> train_files;
  std::vector<std::string> eval_files;
  std::string spec_file;
  // Bytes of the data files, as written (compressed for GZIP).
  int64_t bytes = 0;
  // The share of rows, over both splits, labelled 1.
  double positive_fraction = 0;
  // The ROC AUC of the true probabilities on the eval labels: the best a
  // model can reach in expectation. Computed over every eval row in
  // bounded memory, from per-probability-bin counts (2^18 bins of
  // probability), with the rows of a bin counted as ties: the exact AUC is
  // within true_eval_auc_error (typically < 1e-5) of it. NaN when there are
  // no eval rows, or they all have one label.
  double true_eval_auc = std::numeric_limits<double>::quiet_NaN();
  double true_eval_auc_error = std::numeric_limits<double>::quiet_NaN();
};

// Writes the data set: `options.shards` files per split named by
// CriteoShardPath (no eval files when there are no eval rows), then the
// feature spec at CriteoSpecPath. TFRecord files hold one serialized
// distrt::tf::Example (proto/example.proto) per row, its features label
// (int64_list), I1..I13 (float_list) and C1..C26 (int64_list), one value
// each; CSV files hold CriteoCsvHeader() and then one line per row, floats
// as the shortest decimal that reads back as the same float.
//
// Memory stays constant whatever the row count: rows are streamed, each of
// `options.threads` threads holds one open file and a fixed-size AUC
// histogram (4 MiB) at a time.
//
// Each file is written under a temporary name beside it and renamed into
// place once complete and fsync'd. Any spec already at the spec path is
// removed first and the new one written last, so a spec file beside the
// shards says that they form a complete data set. On an error the shards
// this call had completed are removed again.
//
// Errors: INVALID_ARGUMENT as ValidateCriteoDataOptions, or for an empty
// prefix or one holding '/'; NOT_FOUND when out_dir does not exist;
// otherwise a code that follows errno, the message naming the path.
// `summary` may be null; it is filled only on success.
absl::Status WriteCriteoData(const CriteoDataOptions& options,
                             const std::string& out_dir,
                             const std::string& prefix,
                             CriteoDataSummary* summary);

}  // namespace distrt

#endif  // DISTRT_TOOLS_GEN_DATA_CRITEO_DATA_H_
