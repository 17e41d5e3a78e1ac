#include "tools/gen_data/synthetic_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/splitmix64.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Independent random streams drawn from one seed. Each consumer has its own
// so that, e.g., the noise level changes labels but not features.
enum Stream : uint64_t {
  kRowStream = 1,
  kNoiseStream = 2,
  kCalibrationStream = 3,
  kWeightStream = 4,
  kBiasStream = 5,
};

// Rows drawn to fit the biases: enough to place the binary median within
// about 1% (the sd of a quantile is sqrt(p(1-p)/n)) and to give each class
// a few hundred rows, up to a limit on the K * n scores held.
constexpr int kMinCalibrationRows = 8192;
constexpr int kCalibrationRowsPerClass = 512;
constexpr int kMaxCalibrationRows = 65536;
// Weights cached when there are at most this many (64 MiB of doubles).
constexpr int64_t kMaxCachedWeights = int64_t{1} << 23;
// Sparse values are k / 1e5 for k in [50000, 150000), i.e. [0.5, 1.5);
// dense values are standard normals rounded to 1e-4. Either way at most 6
// significant digits (while |x| < 100), printed exactly as decimals.
constexpr int kSparseDecimals = 5;
constexpr int64_t kSparseGridLow = 50000;
constexpr int64_t kSparseGridSize = 100000;
constexpr int kDenseDecimals = 4;
constexpr double kPowersOfTen[] = {1, 10, 100, 1e3, 1e4, 1e5};
// E[x^2] of a sparse value: Var(U[0.5, 1.5)) + E[x]^2 = 1/12 + 1.
constexpr double kSparseSecondMoment = 13.0 / 12.0;
// Significant digits of the numbers written, as %.6g.
constexpr int kPrintPrecision = 6;
// The writers hand the kernel about this much at a time.

uint64_t StreamSeed(uint64_t seed, Stream stream) {
  return SplitMix64(SplitMix64(seed) ^ stream);
}

// [0, 1) from the top 53 bits.
double ToUnit(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Box-Muller: a standard normal from two independent uniforms in [0, 1).
// 1 - u1 is in (0, 1], so the log is finite.
double BoxMuller(double u1, double u2, double* spare) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double radius = std::sqrt(-2.0 * std::log(1.0 - u1));
  if (spare != nullptr) *spare = radius * std::sin(kTwoPi * u2);
  return radius * std::cos(kTwoPi * u2);
}

// Uniform and normal numbers from std::mt19937_64 with transforms defined
// here, so that a seed gives the same numbers with every standard library.
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}

  double Uniform() { return ToUnit(engine_()); }

  // Uniform in [0, n) for n >= 1: rejection of the 2^64 mod n lowest draws
  // removes the modulo bias.
  uint64_t UniformInt(uint64_t n) {
    const uint64_t threshold = (0 - n) % n;
    while (true) {
      const uint64_t x = engine_();
      if (x >= threshold) return x % n;
    }
  }

  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = Uniform();
    const double u2 = Uniform();
    has_spare_ = true;
    return BoxMuller(u1, u2, &spare_);
  }

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0;
};

bool IsDense(const SyntheticDataOptions& options) {
  return options.features_per_row >= options.num_features;
}

// Draws rows: sorted distinct ids and their values.
class RowSampler {
 public:
  RowSampler(const SyntheticDataOptions& options, uint64_t seed)
      : random_(seed),
        num_features_(options.num_features),
        per_row_(std::min(options.features_per_row, options.num_features)),
        dense_(IsDense(options)) {}

  // Values are multiples of 10^-decimals(): AppendDecimal prints them.
  int decimals() const { return dense_ ? kDenseDecimals : kSparseDecimals; }

  void Next(std::vector<int64_t>* ids, std::vector<double>* values) {
    ids->clear();
    values->clear();
    if (dense_) {
      for (int64_t id = 0; id < num_features_; ++id) {
        ids->push_back(id);
        // "+ 0.0" turns a -0 from rounding into 0, which prints as "0".
        constexpr double kScale = kPowersOfTen[kDenseDecimals];
        values->push_back(std::round(random_.Normal() * kScale) / kScale + 0.0);
      }
      return;
    }
    // Floyd's algorithm: a uniform k-subset of [0, n) in exactly k draws,
    // whatever k / n is (rejection sampling would slow down as k nears n).
    chosen_.clear();
    for (int64_t j = num_features_ - per_row_; j < num_features_; ++j) {
      int64_t id = static_cast<int64_t>(random_.UniformInt(j + 1));
      if (!chosen_.insert(id).second) {
        id = j;  // never chosen before: only ids below j have been drawn
        chosen_.insert(j);
      }
      ids->push_back(id);
    }
    std::sort(ids->begin(), ids->end());
    for (size_t i = 0; i < ids->size(); ++i) {
      const int64_t k =
          kSparseGridLow + static_cast<int64_t>(random_.UniformInt(
                               static_cast<uint64_t>(kSparseGridSize)));
      values->push_back(static_cast<double>(k) / kPowersOfTen[kSparseDecimals]);
    }
  }

 private:
  Random random_;
  const int64_t num_features_;
  const int64_t per_row_;
  const bool dense_;
  absl::flat_hash_set<int64_t> chosen_;
};

double Median(std::vector<double> values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

// Biases that give each of K classes about n / K of the rows whose scores
// (without bias) are scores[i * K + k]. Each pass moves every b_k halfway to
// the value that would give class k exactly its share if the other biases
// stayed put (the midpoint between the share-th and the next row in order
// of k's margin over the best other class); the damping keeps the
// simultaneous moves from overshooting. Stops when every share is within
// 2% of n / K (or one row).
std::vector<double> BalanceClasses(const std::vector<double>& scores, int n,
                                   int num_classes) {
  constexpr int kMaxPasses = 100;
  const int share = std::max(1, (n + num_classes / 2) / num_classes);
  const int tolerance = std::max(1, share / 50);
  std::vector<double> biases(num_classes, 0.0);
  std::vector<int> best(n);
  std::vector<double> first(n), second(n), margins(n);
  std::vector<int> counts(num_classes);
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    std::fill(counts.begin(), counts.end(), 0);
    for (int i = 0; i < n; ++i) {
      const double* row = &scores[static_cast<size_t>(i) * num_classes];
      int top = 0;
      double top_score = row[0] + biases[0];
      double runner_up = -std::numeric_limits<double>::infinity();
      for (int k = 1; k < num_classes; ++k) {
        const double s = row[k] + biases[k];
        if (s > top_score) {
          runner_up = top_score;
          top_score = s;
          top = k;
        } else if (s > runner_up) {
          runner_up = s;
        }
      }
      best[i] = top;
      first[i] = top_score;
      second[i] = runner_up;
      ++counts[top];
    }
    bool balanced = true;
    for (int count : counts) balanced &= std::abs(count - share) <= tolerance;
    if (balanced) break;
    std::vector<double> steps(num_classes);
    for (int k = 0; k < num_classes; ++k) {
      for (int i = 0; i < n; ++i) {
        const double own =
            scores[static_cast<size_t>(i) * num_classes + k] + biases[k];
        margins[i] = own - (best[i] == k ? second[i] : first[i]);
      }
      // The share-th largest margin and the next one: a bias between them
      // makes exactly `share` margins positive.
      std::nth_element(margins.begin(), margins.begin() + (share - 1),
                       margins.end(), std::greater<double>());
      const double last_in = margins[share - 1];
      const double first_out =
          *std::max_element(margins.begin() + share, margins.end());
      steps[k] = -(last_in + first_out) / 2;
    }
    for (int k = 0; k < num_classes; ++k) biases[k] += steps[k] / 2;
  }
  // Only differences between biases matter; centre them for readability.
  double mean = 0;
  for (double b : biases) mean += b / num_classes;
  for (double& b : biases) b -= mean;
  return biases;
}

// Appends `value` as printf("%.6g") would.
void AppendNumber(double value, std::string* out) {
  char buffer[32];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value,
                    std::chars_format::general, kPrintPrecision);
  out->append(buffer, result.ptr);
}

void AppendInt(int64_t value, std::string* out) {
  char buffer[24];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

// Appends `value`, a multiple of 10^-decimals, as the shortest exact
// decimal ("0.5", "1.25", "-0.0003", "2"): what %.6g prints for a value of
// at most 6 significant digits, several times faster than general-purpose
// formatting, which dominated the run time for dense data.
void AppendDecimal(double value, int decimals, std::string* out) {
  int64_t scaled = std::llround(value * kPowersOfTen[decimals]);
  if (scaled < 0) {
    out->push_back('-');
    scaled = -scaled;
  }
  const int64_t unit = static_cast<int64_t>(kPowersOfTen[decimals]);
  AppendInt(scaled / unit, out);
  int64_t fraction = scaled % unit;
  if (fraction == 0) return;
  char digits[8];
  for (int i = decimals - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + fraction % 10);
    fraction /= 10;
  }
  int length = decimals;
  while (digits[length - 1] == '0') --length;
  out->push_back('.');
  out->append(digits, length);
}

// `value` as it reads back after AppendNumber.
double AsPrinted(double value) {
  char buffer[32];
  const std::to_chars_result printed =
      std::to_chars(buffer, buffer + sizeof(buffer), value,
                    std::chars_format::general, kPrintPrecision);
  double parsed = value;
  std::from_chars(buffer, printed.ptr, parsed);
  return parsed;
}

bool IsClassification(SyntheticTask task) {
  return task == SyntheticTask::kBinary || task == SyntheticTask::kMulticlass;
}

}  // namespace

absl::string_view SyntheticTaskName(SyntheticTask task) {
  switch (task) {
    case SyntheticTask::kBinary:
      return "binary";
    case SyntheticTask::kMulticlass:
      return "multiclass";
    case SyntheticTask::kRegression:
      return "regression";
  }
  return "unknown";
}

absl::StatusOr<SyntheticTask> ParseSyntheticTask(absl::string_view name) {
  for (SyntheticTask task : {SyntheticTask::kBinary, SyntheticTask::kMulticlass,
                             SyntheticTask::kRegression}) {
    if (name == SyntheticTaskName(task)) return task;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "task \"", name, "\" is not one of binary, multiclass, regression"));
}

absl::Status ValidateSyntheticDataOptions(const SyntheticDataOptions& options) {
  if (SyntheticTaskName(options.task) == "unknown") {
    return absl::InvalidArgumentError(absl::StrCat(
        "task ", static_cast<int>(options.task), " is not a SyntheticTask"));
  }
  if (options.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows must be at least 1, got ", options.rows));
  }
  if (options.num_features < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_features must be at least 1, got ", options.num_features));
  }
  if (options.features_per_row < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "features_per_row must be at least 1, got ", options.features_per_row));
  }
  if (options.task == SyntheticTask::kMulticlass &&
      (options.num_classes < 2 || options.num_classes > kMaxSyntheticClasses)) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_classes must be in 2..", kMaxSyntheticClasses,
                     " for multiclass data, got ", options.num_classes));
  }
  // Written so that NaN fails too.
  if (IsClassification(options.task)) {
    if (!(options.noise >= 0 && options.noise <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "noise must be a label-flip probability in [0, 1] for ",
          SyntheticTaskName(options.task), " data, got ", options.noise));
    }
  } else if (!(options.noise >= 0 && std::isfinite(options.noise))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "noise must be a standard deviation >= 0 for regression data, got ",
        options.noise));
  }
  if (!(options.eval_fraction >= 0 && options.eval_fraction < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval_fraction must be in [0, 1), got ", options.eval_fraction));
  }
  return absl::OkStatus();
}

int64_t SyntheticEvalRows(const SyntheticDataOptions& options) {
  // Rounded, not truncated: 100 * 0.29 is 28.999999999999996.
  const int64_t eval_rows =
      std::llround(static_cast<double>(options.rows) * options.eval_fraction);
  return std::clamp<int64_t>(eval_rows, 0, options.rows - 1);
}

SyntheticGroundTruth::SyntheticGroundTruth(const SyntheticDataOptions& options)
    : task_(options.task),
      num_features_(options.num_features),
      num_outputs_(
          options.task == SyntheticTask::kMulticlass ? options.num_classes : 1),
      seed_(StreamSeed(options.seed, kWeightStream)),
      weight_scale_(
          IsDense(options)
              ? 1 / std::sqrt(static_cast<double>(options.num_features))
              : 1 / std::sqrt(static_cast<double>(options.features_per_row) *
                              kSparseSecondMoment)),
      biases_(num_outputs_, 0.0) {}

absl::StatusOr<SyntheticGroundTruth> SyntheticGroundTruth::Create(
    const SyntheticDataOptions& options) {
  RETURN_IF_ERROR(ValidateSyntheticDataOptions(options));
  SyntheticGroundTruth truth(options);
  if (static_cast<double>(truth.num_outputs_) *
          static_cast<double>(truth.num_features_) <=
      kMaxCachedWeights) {
    truth.weights_.resize(truth.num_outputs_ * truth.num_features_);
    for (int k = 0; k < truth.num_outputs_; ++k) {
      for (int64_t id = 0; id < truth.num_features_; ++id) {
        truth.weights_[k * truth.num_features_ + id] = truth.DrawWeight(k, id);
      }
    }
  }
  if (options.task == SyntheticTask::kRegression) {
    truth.biases_[0] = Random(StreamSeed(options.seed, kBiasStream)).Normal();
    return truth;
  }
  // Classification: fit the biases on a sample of rows (from a stream of
  // their own, so the model does not depend on options.rows).
  RowSampler sampler(options, StreamSeed(options.seed, kCalibrationStream));
  std::vector<int64_t> ids;
  std::vector<double> values;
  const int calibration_rows =
      std::clamp(kCalibrationRowsPerClass * truth.num_outputs_,
                 kMinCalibrationRows, kMaxCalibrationRows);
  std::vector<double> scores;
  scores.reserve(static_cast<size_t>(calibration_rows) * truth.num_outputs_);
  for (int i = 0; i < calibration_rows; ++i) {
    sampler.Next(&ids, &values);
    for (int k = 0; k < truth.num_outputs_; ++k) {
      scores.push_back(truth.Score(k, ids, values));
    }
  }
  if (options.task == SyntheticTask::kBinary) {
    truth.biases_[0] = -Median(std::move(scores));
  } else {
    truth.biases_ =
        BalanceClasses(scores, calibration_rows, truth.num_outputs_);
  }
  return truth;
}

double SyntheticGroundTruth::DrawWeight(int output, int64_t id) const {
  // Counter-based: weight (output, id) needs no other weight, so huge
  // feature spaces need no table.
  const uint64_t base = SplitMix64(seed_ + static_cast<uint64_t>(output));
  const uint64_t counter = static_cast<uint64_t>(id) * 2;
  return weight_scale_ *
         BoxMuller(ToUnit(SplitMix64(base ^ SplitMix64(counter))),
                   ToUnit(SplitMix64(base ^ SplitMix64(counter + 1))),
                   /*spare=*/nullptr);
}

double SyntheticGroundTruth::Weight(int output, int64_t id) const {
  if (!weights_.empty()) return weights_[output * num_features_ + id];
  return DrawWeight(output, id);
}

double SyntheticGroundTruth::Score(int output, absl::Span<const int64_t> ids,
                                   absl::Span<const double> values) const {
  double sum = biases_[output];
  if (!weights_.empty()) {
    const double* w = &weights_[output * num_features_];
    for (size_t i = 0; i < ids.size(); ++i) sum += w[ids[i]] * values[i];
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      sum += DrawWeight(output, ids[i]) * values[i];
    }
  }
  return sum;
}

double SyntheticGroundTruth::Label(absl::Span<const int64_t> ids,
                                   absl::Span<const double> values) const {
  switch (task_) {
    case SyntheticTask::kBinary:
      return Score(0, ids, values) > 0 ? 1 : 0;
    case SyntheticTask::kRegression:
      return Score(0, ids, values);
    case SyntheticTask::kMulticlass:
      break;
  }
  int best = 0;
  double best_score = Score(0, ids, values);
  for (int k = 1; k < num_outputs_; ++k) {
    const double s = Score(k, ids, values);
    if (s > best_score) {
      best_score = s;
      best = k;
    }
  }
  return best;
}

absl::Status WriteSyntheticData(const SyntheticDataOptions& options,
                                const std::string& train_path,
                                const std::string& eval_path,
                                SyntheticDataSummary* summary) {
  if (train_path.empty() || eval_path.empty()) {
    return absl::InvalidArgumentError(
        "the train and eval paths must not be empty");
  }
  if (train_path == eval_path) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the train and eval paths must differ, both are ", train_path));
  }
  ASSIGN_OR_RETURN(SyntheticGroundTruth truth,
                   SyntheticGroundTruth::Create(options));
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> train,
                   AtomicFileWriter::Create(train_path));
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> eval,
                   AtomicFileWriter::Create(eval_path));

  const int64_t eval_rows = SyntheticEvalRows(options);
  const int64_t train_rows = options.rows - eval_rows;
  const bool classification = IsClassification(options.task);
  const int num_labels = options.task == SyntheticTask::kBinary ? 2
                         : options.task == SyntheticTask::kMulticlass
                             ? options.num_classes
                             : 0;
  SyntheticDataSummary result;
  result.train_rows = train_rows;
  result.eval_rows = eval_rows;
  result.class_counts.assign(num_labels, 0);
  int64_t eval_correct = 0;
  double eval_squared_error = 0;
  // Welford's running mean and sum of squared deviations of eval labels.
  double label_mean = 0;
  double label_m2 = 0;

  RowSampler sampler(options, StreamSeed(options.seed, kRowStream));
  Random noise(StreamSeed(options.seed, kNoiseStream));
  std::vector<int64_t> ids;
  std::vector<double> values;
  std::string line;
  for (int64_t row = 0; row < options.rows; ++row) {
    sampler.Next(&ids, &values);
    const double clean = truth.Label(ids, values);
    const bool is_eval = row >= train_rows;
    line.clear();
    std::string* const out = &line;
    // Every row draws the same noise numbers whatever options.noise is, so
    // that rows stay aligned with the noise stream across noise levels.
    if (classification) {
      const bool flip = noise.Uniform() < options.noise;
      // A different label, uniform among the other num_labels - 1.
      const int64_t other =
          (static_cast<int64_t>(clean) + 1 +
           static_cast<int64_t>(noise.UniformInt(num_labels - 1))) %
          num_labels;
      const int64_t label_id = flip ? other : static_cast<int64_t>(clean);
      ++result.class_counts[label_id];
      if (is_eval && label_id == static_cast<int64_t>(clean)) ++eval_correct;
      AppendInt(label_id, out);
    } else {
      const double label = AsPrinted(clean + options.noise * noise.Normal());
      AppendNumber(label, out);
      if (is_eval) {
        eval_squared_error += (label - clean) * (label - clean);
        const double n = static_cast<double>(row - train_rows + 1);
        const double delta = label - label_mean;
        label_mean += delta / n;
        label_m2 += delta * (label - label_mean);
      }
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      out->push_back(' ');
      AppendInt(ids[i] + 1, out);
      out->push_back(':');
      AppendDecimal(values[i], sampler.decimals(), out);
    }
    out->push_back('\n');
    RETURN_IF_ERROR((is_eval ? eval : train)->Append(line));
  }

  // Both complete before either replaces its path.
  RETURN_IF_ERROR(train->Finish());
  RETURN_IF_ERROR(eval->Finish());
  RETURN_IF_ERROR(train->Commit());
  RETURN_IF_ERROR(eval->Commit());

  if (summary == nullptr) return absl::OkStatus();
  if (options.task == SyntheticTask::kBinary) {
    result.positive_fraction = static_cast<double>(result.class_counts[1]) /
                               static_cast<double>(options.rows);
  }
  if (eval_rows > 0) {
    const double n = static_cast<double>(eval_rows);
    if (classification) {
      result.true_model_eval_accuracy = static_cast<double>(eval_correct) / n;
    } else {
      result.true_model_eval_rmse = std::sqrt(eval_squared_error / n);
      result.eval_label_stddev = std::sqrt(label_m2 / n);
    }
  }
  *summary = std::move(result);
  return absl::OkStatus();
}

}  // namespace distrt
