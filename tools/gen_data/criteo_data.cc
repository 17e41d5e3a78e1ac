#include "tools/gen_data/criteo_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/casts.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/io/coded_stream.h"
#include "nlohmann/json.hpp"
#include "runtime/input/tfrecord_writer.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/splitmix64.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Independent random streams drawn from one seed.
enum Stream : uint64_t {
  kRowStream = 1,
  kLabelStream = 2,
  kCalibrationStream = 3,
  kNumericShapeStream = 4,
  kNumericWeightStream = 5,
  kPermutationStream = 6,
  kEffectStream = 7,
  kEffectScaleStream = 8,
};

// The true model's targets (see the header).
constexpr double kTargetLogitStddev = 1.2;
constexpr double kNumericVarianceShare = 0.3;
constexpr double kPositiveShare = 0.25;
// Rows the scale and bias are fitted on: the bias puts the positive share
// within a few tenths of a percent of its target.
constexpr int kCalibrationRows = 32768;
// Numeric feature j's count is floor(exp(location + scale * z)), location
// in [0, 4) and scale in [0.5, 2): medians from 1 to ~50, long tails.
constexpr double kMaxCountLocation = 4;
constexpr double kMinCountScale = 0.5;
constexpr double kCountScaleRange = 1.5;
// A categorical feature's effect scale before normalisation is in [0.5,
// 1.5): some features matter more than others, none is noise only.
constexpr double kMinEffectWeight = 0.5;
// IdPermutation's odd multipliers (SplitMix64's constants).
constexpr uint64_t kMultiplier0 = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kMultiplier1 = 0xbf58476d1ce4e5b9ULL;
// Effects are damped beyond this many of the most frequent ranks.
constexpr double kSignalHeadRanks = 1000;
// Probability bins of the eval AUC histogram: 2^18 bins of width ~4e-6,
// 4 MiB of counts per thread.
constexpr int kAucBins = 1 << 18;
// Rows between checks whether another thread failed.
constexpr int64_t kRowsPerCancelCheck = 4096;
// zlib level of GZIP files: level 1 writes several times faster than the
// default 6 and random ids compress little better at 6.
constexpr int kGzipLevel = 1;
// The standard deviation of a sum of four uniform 16-bit integers:
// sqrt(4 * (65536^2 - 1) / 12).
constexpr double kIrwinHallStddev = 37837.22723720648;

uint64_t StreamKey(uint64_t seed, Stream stream) {
  return SplitMix64(SplitMix64(seed) ^ stream);
}

// The key of item `item` (a row, a feature, an id) within a stream.
uint64_t ItemKey(uint64_t stream_key, uint64_t item) {
  return SplitMix64(stream_key ^ SplitMix64(item));
}

// [0, 1) from the top 53 bits.
double ToUnit(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// A roughly standard normal value from 64 random bits: the sum of their
// four 16-bit quarters (Irwin-Hall), standardised. Needs no libm, so the
// per-id effects are the same on every platform; its tails stop at +-3.5,
// which suits an effect meant to be small.
double ApproximateNormal(uint64_t bits) {
  const double sum =
      static_cast<double>((bits & 0xffff) + ((bits >> 16) & 0xffff) +
                          ((bits >> 32) & 0xffff) + (bits >> 48));
  return (sum - 2 * 65535.0) / kIrwinHallStddev;
}

// The SplitMix64 generator: one row's random numbers, from the row's key.
class RowRandom {
 public:
  explicit RowRandom(uint64_t key) : state_(key) {}

  double Uniform() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return ToUnit(SplitMix64Finalize(state_));
  }

  // Box-Muller: two independent standard normals. 1 - u1 is in (0, 1], so
  // the log is finite.
  std::pair<double, double> NormalPair() {
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    const double u1 = Uniform();
    const double u2 = Uniform();
    const double radius = std::sqrt(-2.0 * std::log(1.0 - u1));
    return {radius * std::cos(kTwoPi * u2), radius * std::sin(kTwoPi * u2)};
  }

 private:
  uint64_t state_;
};

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

void AppendInt(int64_t value, std::string* out) {
  char buffer[24];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

// The shortest decimal that reads back as `value`.
void AppendFloat(float value, std::string* out) {
  char buffer[32];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

// Serializes rows as distrt::tf::Example (proto/example.proto) wire bytes,
// written directly rather than through the generated class: building the
// map<string, Feature> of 40 entries costs more per row than generating
// the row, and the generated serializer's map order is unspecified, while
// here the entries always come in the order label, I1..I13, C1..C26 and
// equal rows give equal bytes. Every length is known before its bytes are
// written (one value per feature), so each record is written front to back
// into one buffer. The protobuf library does the varint coding, and the
// tests parse every record back with the generated class.
class ExampleEncoder {
 public:
  ExampleEncoder() : buffer_(kBufferSize, '\0') {
    for (int j = 0; j < kCriteoNumericFeatures; ++j) {
      numeric_names_[j] = CriteoNumericName(j);
    }
    for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
      categorical_names_[f] = CriteoCategoricalName(f);
    }
  }

  // The record of `row`; valid until the next call.
  absl::string_view Encode(const CriteoRow& row) {
    // Features are written after room for the Example's own header, a tag
    // and the varint length of the Features message, which is known only
    // at the end and then written right before them.
    uint8_t* const features = Data() + kHeaderRoom;
    uint8_t* out = features;
    out = WriteInt64Feature(kCriteoLabelName, row.label, out);
    for (int j = 0; j < kCriteoNumericFeatures; ++j) {
      out = WriteFloatFeature(numeric_names_[j], row.numeric[j], out);
    }
    for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
      out = WriteInt64Feature(categorical_names_[f], row.categorical[f], out);
    }
    // Example { Features features = 1; }
    const uint64_t features_size = out - features;
    const int header_size = 1 + Coded::VarintSize64(features_size);
    uint8_t* const start = features - header_size;
    start[0] = LengthDelimitedTag(1);
    Coded::WriteVarint64ToArray(features_size, start + 1);
    return absl::string_view(reinterpret_cast<const char*>(start), out - start);
  }

 private:
  using Coded = google::protobuf::io::CodedOutputStream;

  // A tag byte and a 64-bit varint at most.
  static constexpr int kHeaderRoom = 1 + 10;
  // Far above the largest record: 40 entries of at most 25 bytes (five
  // 2-byte tag-and-length headers, a name of up to 5 bytes, a 10-byte
  // varint).
  static constexpr size_t kBufferSize = 4096;

  uint8_t* Data() { return reinterpret_cast<uint8_t*>(&buffer_[0]); }

  // The tag byte of field `field` (< 16) with wire type 2 (length
  // delimited: strings, messages, packed repeated fields).
  static uint8_t LengthDelimitedTag(int field) {
    return static_cast<uint8_t>(field << 3 | 2);
  }

  // Writes a tag of wire type 2 and a length.
  static uint8_t* WriteHeader(int field, uint64_t length, uint8_t* out) {
    *out++ = LengthDelimitedTag(field);
    return Coded::WriteVarint64ToArray(length, out);
  }

  // The bytes a length-delimited field of `length` bytes takes.
  static uint64_t FieldSize(uint64_t length) {
    return 1 + Coded::VarintSize64(length) + length;
  }

  // Writes one entry of Features { map<string, Feature> feature = 1; }, a
  // message { string key = 1; Feature value = 2; } whose Feature holds
  // `packed_size` bytes of packed values in its list `kind_field`
  // (FloatList float_list = 2, Int64List int64_list = 3; each list is
  // { repeated <type> value = 1 [packed]; }). Returns where the values go.
  static uint8_t* WriteEntryHeaders(absl::string_view name, int kind_field,
                                    uint64_t packed_size, uint8_t* out) {
    const uint64_t list_size = FieldSize(packed_size);
    const uint64_t feature_size = FieldSize(list_size);
    const uint64_t entry_size =
        FieldSize(name.size()) + FieldSize(feature_size);
    out = WriteHeader(1, entry_size, out);   // Features.feature
    out = WriteHeader(1, name.size(), out);  // key
    std::memcpy(out, name.data(), name.size());
    out += name.size();
    out = WriteHeader(2, feature_size, out);        // value: Feature
    out = WriteHeader(kind_field, list_size, out);  // Feature.<kind>
    return WriteHeader(1, packed_size, out);        // <List>.value
  }

  static uint8_t* WriteInt64Feature(absl::string_view name, int64_t value,
                                    uint8_t* out) {
    const uint64_t bits = static_cast<uint64_t>(value);
    out = WriteEntryHeaders(name, /*kind_field=*/3, Coded::VarintSize64(bits),
                            out);
    return Coded::WriteVarint64ToArray(bits, out);
  }

  static uint8_t* WriteFloatFeature(absl::string_view name, float value,
                                    uint8_t* out) {
    // A packed float is 4 bytes, little endian.
    out = WriteEntryHeaders(name, /*kind_field=*/2, 4, out);
    return Coded::WriteLittleEndian32ToArray(absl::bit_cast<uint32_t>(value),
                                             out);
  }

  std::array<std::string, kCriteoNumericFeatures> numeric_names_;
  std::array<std::string, kCriteoCategoricalFeatures> categorical_names_;
  std::string buffer_;
};

// One shard being written under a temporary name.
class ShardFile {
 public:
  virtual ~ShardFile() = default;
  virtual absl::Status Append(const CriteoRow& row) = 0;
  // Completes the file, fsyncs it and renames it into place; returns its
  // size in bytes. The directory is not fsync'd (the caller does, once).
  virtual absl::StatusOr<int64_t> Commit() = 0;
};

// The size of the file at `path`.
absl::StatusOr<int64_t> FileSize(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return ErrnoError("cannot stat", path);
  return static_cast<int64_t>(info.st_size);
}

// fsync of the file at `path`, written and closed by another object.
absl::Status SyncFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  absl::Status status;
  if (fsync(fd) != 0) status = ErrnoError("cannot fsync", path);
  if (close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", path);
  return status;
}

// TFRecord files, through TfRecordWriter (which writes in place) on
// "<path>.tmp", renamed when complete.
class TfRecordShardFile : public ShardFile {
 public:
  static absl::StatusOr<std::unique_ptr<ShardFile>> Create(
      std::string path, TfRecordCompression compression) {
    std::string tmp = absl::StrCat(path, ".tmp");
    TfRecordWriterOptions options;
    options.compression = compression;
    options.gzip_level = kGzipLevel;
    ASSIGN_OR_RETURN(std::unique_ptr<TfRecordWriter> writer,
                     TfRecordWriter::Open(tmp, options));
    return std::unique_ptr<ShardFile>(new TfRecordShardFile(
        std::move(path), std::move(tmp), std::move(writer)));
  }

  ~TfRecordShardFile() override {
    if (!committed_) {
      writer_.reset();
      unlink(tmp_.c_str());
    }
  }

  absl::Status Append(const CriteoRow& row) override {
    return writer_->Write(encoder_.Encode(row));
  }

  absl::StatusOr<int64_t> Commit() override {
    RETURN_IF_ERROR(writer_->Close());
    RETURN_IF_ERROR(SyncFile(tmp_));
    ASSIGN_OR_RETURN(const int64_t bytes, FileSize(tmp_));
    if (rename(tmp_.c_str(), path_.c_str()) != 0) {
      return ErrnoError(absl::StrCat("cannot rename ", tmp_, " to"), path_);
    }
    committed_ = true;
    return bytes;
  }

 private:
  TfRecordShardFile(std::string path, std::string tmp,
                    std::unique_ptr<TfRecordWriter> writer)
      : path_(std::move(path)),
        tmp_(std::move(tmp)),
        writer_(std::move(writer)) {}

  const std::string path_;
  const std::string tmp_;
  std::unique_ptr<TfRecordWriter> writer_;
  ExampleEncoder encoder_;
  bool committed_ = false;
};

// CSV files, through AtomicFileWriter.
class CsvShardFile : public ShardFile {
 public:
  static absl::StatusOr<std::unique_ptr<ShardFile>> Create(
      const std::string& path) {
    ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> writer,
                     AtomicFileWriter::Create(path));
    RETURN_IF_ERROR(writer->Append(absl::StrCat(CriteoCsvHeader(), "\n")));
    return std::unique_ptr<ShardFile>(new CsvShardFile(std::move(writer)));
  }

  absl::Status Append(const CriteoRow& row) override {
    line_.clear();
    AppendInt(row.label, &line_);
    for (float value : row.numeric) {
      line_.push_back(',');
      AppendFloat(value, &line_);
    }
    for (int64_t id : row.categorical) {
      line_.push_back(',');
      AppendInt(id, &line_);
    }
    line_.push_back('\n');
    bytes_ += static_cast<int64_t>(line_.size());
    return writer_->Append(line_);
  }

  absl::StatusOr<int64_t> Commit() override {
    RETURN_IF_ERROR(writer_->Commit());
    return header_bytes_ + bytes_;
  }

 private:
  explicit CsvShardFile(std::unique_ptr<AtomicFileWriter> writer)
      : writer_(std::move(writer)),
        header_bytes_(static_cast<int64_t>(CriteoCsvHeader().size()) + 1) {}

  std::unique_ptr<AtomicFileWriter> writer_;
  const int64_t header_bytes_;
  int64_t bytes_ = 0;
  std::string line_;
};

// Counts of eval rows per probability bin and label, for the AUC.
struct AucHistogram {
  std::vector<int64_t> positives = std::vector<int64_t>(kAucBins, 0);
  std::vector<int64_t> negatives = std::vector<int64_t>(kAucBins, 0);

  void Add(double probability, bool positive) {
    const int bin =
        std::clamp(static_cast<int>(probability * kAucBins), 0, kAucBins - 1);
    ++(positive ? positives : negatives)[bin];
  }

  void Merge(const AucHistogram& other) {
    for (int b = 0; b < kAucBins; ++b) {
      positives[b] += other.positives[b];
      negatives[b] += other.negatives[b];
    }
  }

  // The AUC with the rows of a bin counted as ties (a positive-negative
  // pair in one bin counts 1/2), and the most that can be off from the
  // exact AUC: half the share of pairs that share a bin. NaNs when either
  // label is missing.
  std::pair<double, double> Auc() const {
    double pairs_ordered = 0;  // positive above negative, ties as 1/2
    double pairs_tied = 0;
    double negatives_below = 0;
    double total_positives = 0;
    for (int b = 0; b < kAucBins; ++b) {
      const double p = static_cast<double>(positives[b]);
      const double n = static_cast<double>(negatives[b]);
      pairs_ordered += p * (negatives_below + 0.5 * n);
      pairs_tied += p * n;
      negatives_below += n;
      total_positives += p;
    }
    const double all_pairs = total_positives * negatives_below;
    if (all_pairs == 0) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      return {nan, nan};
    }
    return {pairs_ordered / all_pairs, 0.5 * pairs_tied / all_pairs};
  }
};

struct ShardJob {
  CriteoSplit split;
  int shard;
};

// What the threads writing shards share.
class ShardWriters {
 public:
  ShardWriters(const CriteoDataOptions& options, const CriteoModel& model,
               const std::string& out_dir, const std::string& prefix,
               std::vector<ShardJob> jobs)
      : options_(options),
        model_(model),
        out_dir_(out_dir),
        prefix_(prefix),
        jobs_(std::move(jobs)) {}

  // Writes every job's shard on `threads` threads; OK or the first error,
  // after which the shards completed are removed again.
  absl::Status Run(int threads) {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back([this] { Work(); });
    for (std::thread& worker : workers) worker.join();
    absl::MutexLock lock(&mu_);
    if (!error_.ok()) {
      for (const std::string& path : committed_) unlink(path.c_str());
    }
    return error_;
  }

  int64_t bytes() const { return bytes_; }
  int64_t positives() const { return positives_; }
  const AucHistogram* histogram() const { return histogram_.get(); }

 private:
  // One thread: jobs until none are left or one failed.
  void Work() {
    int64_t bytes = 0;
    int64_t positives = 0;
    std::vector<std::string> committed;
    std::unique_ptr<AucHistogram> histogram;
    absl::Status status;
    while (status.ok() && !failed_.load(std::memory_order_relaxed)) {
      const size_t job = next_job_.fetch_add(1);
      if (job >= jobs_.size()) break;
      if (jobs_[job].split == CriteoSplit::kEval && histogram == nullptr) {
        histogram = std::make_unique<AucHistogram>();
      }
      const std::string path = CriteoShardPath(
          options_, out_dir_, prefix_, jobs_[job].split, jobs_[job].shard);
      absl::StatusOr<int64_t> written =
          WriteShard(jobs_[job], path, &positives, histogram.get());
      if (written.ok()) {
        bytes += *written;
        committed.push_back(path);
      } else {
        status = written.status();
        // Recorded before the others are told to stop, so that their
        // CANCELLED never hides this error.
        {
          absl::MutexLock lock(&mu_);
          if (error_.ok()) error_ = status;
        }
        failed_.store(true, std::memory_order_relaxed);
      }
    }
    absl::MutexLock lock(&mu_);
    bytes_ += bytes;
    positives_ += positives;
    committed_.insert(committed_.end(), committed.begin(), committed.end());
    if (histogram != nullptr) {
      if (histogram_ == nullptr) {
        histogram_ = std::move(histogram);
      } else {
        histogram_->Merge(*histogram);
      }
    }
  }

  // Writes one shard and returns its size; adds its positives, and for an
  // eval shard its rows' probabilities and labels to `histogram`.
  absl::StatusOr<int64_t> WriteShard(const ShardJob& job,
                                     const std::string& path,
                                     int64_t* positives,
                                     AucHistogram* histogram) {
    std::unique_ptr<ShardFile> file;
    if (options_.format == CriteoFileFormat::kCsv) {
      ASSIGN_OR_RETURN(file, CsvShardFile::Create(path));
    } else {
      ASSIGN_OR_RETURN(file,
                       TfRecordShardFile::Create(path, options_.compression));
    }
    const auto [begin, end] = CriteoShardRows(options_, job.split, job.shard);
    CriteoRow row;
    for (int64_t index = begin; index < end; ++index) {
      if ((index - begin) % kRowsPerCancelCheck == kRowsPerCancelCheck - 1 &&
          failed_.load(std::memory_order_relaxed)) {
        return absl::CancelledError("another shard failed");
      }
      const double probability = model_.Row(index, &row);
      *positives += row.label;
      if (job.split == CriteoSplit::kEval) {
        histogram->Add(probability, row.label == 1);
      }
      RETURN_IF_ERROR(file->Append(row));
    }
    return file->Commit();
  }

  // Constant after construction.
  const CriteoDataOptions& options_;
  const CriteoModel& model_;
  const std::string& out_dir_;
  const std::string& prefix_;
  const std::vector<ShardJob> jobs_;

  std::atomic<size_t> next_job_{0};
  std::atomic<bool> failed_{false};

  absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> committed_ ABSL_GUARDED_BY(mu_);
  // Totals, read once the threads are joined.
  int64_t bytes_ = 0;
  int64_t positives_ = 0;
  std::unique_ptr<AucHistogram> histogram_;  // null without eval rows
};

}  // namespace

std::string CriteoNumericName(int j) { return absl::StrCat("I", j + 1); }

std::string CriteoCategoricalName(int f) { return absl::StrCat("C", f + 1); }

absl::string_view CriteoFileFormatName(CriteoFileFormat format) {
  switch (format) {
    case CriteoFileFormat::kTfRecord:
      return "tfrecord";
    case CriteoFileFormat::kCsv:
      return "csv";
  }
  return "unknown";
}

absl::StatusOr<CriteoFileFormat> ParseCriteoFileFormat(absl::string_view name) {
  for (CriteoFileFormat format :
       {CriteoFileFormat::kTfRecord, CriteoFileFormat::kCsv}) {
    if (name == CriteoFileFormatName(format)) return format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("format \"", name, "\" is not one of tfrecord, csv"));
}

absl::string_view CriteoSpecKindName(CriteoSpecKind kind) {
  switch (kind) {
    case CriteoSpecKind::kHashed:
      return "hashed";
    case CriteoSpecKind::kIdentity:
      return "identity";
  }
  return "unknown";
}

absl::StatusOr<CriteoSpecKind> ParseCriteoSpecKind(absl::string_view name) {
  for (CriteoSpecKind kind :
       {CriteoSpecKind::kHashed, CriteoSpecKind::kIdentity}) {
    if (name == CriteoSpecKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("spec_kind \"", name, "\" is not one of hashed, identity"));
}

absl::string_view CriteoSplitName(CriteoSplit split) {
  return split == CriteoSplit::kTrain ? "train" : "eval";
}

absl::Status ValidateCriteoDataOptions(const CriteoDataOptions& options) {
  if (options.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows must be at least 1, got ", options.rows));
  }
  // Written so that NaN fails too.
  if (!(options.eval_fraction >= 0 && options.eval_fraction < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval_fraction must be in [0, 1), got ", options.eval_fraction));
  }
  if (options.shards < 1 || options.shards > kMaxCriteoShards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shards must be in 1..", kMaxCriteoShards, ", got ", options.shards));
  }
  if (options.vocab < 1 || options.vocab > kMaxCriteoVocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vocab must be in 1..", kMaxCriteoVocab, ", got ", options.vocab));
  }
  if (!(options.zipf > 0 && options.zipf <= ZipfSampler::kMaxExponent)) {
    return absl::InvalidArgumentError(
        absl::StrCat("zipf must be an exponent in (0, ",
                     ZipfSampler::kMaxExponent, "], got ", options.zipf));
  }
  if (CriteoFileFormatName(options.format) == "unknown") {
    return absl::InvalidArgumentError(
        absl::StrCat("format ", static_cast<int>(options.format),
                     " is not a CriteoFileFormat"));
  }
  if (options.compression != TfRecordCompression::kNone &&
      options.format != CriteoFileFormat::kTfRecord) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression ", TfRecordCompressionName(options.compression),
        " is for tfrecord files only, not ",
        CriteoFileFormatName(options.format)));
  }
  if (CriteoSpecKindName(options.spec_kind) == "unknown") {
    return absl::InvalidArgumentError(
        absl::StrCat("spec_kind ", static_cast<int>(options.spec_kind),
                     " is not a CriteoSpecKind"));
  }
  if (options.embedding_dim < 1 || options.embedding_dim > 65536) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding_dim must be in 1..65536, got ", options.embedding_dim));
  }
  if (options.threads < 1 || options.threads > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be in 1..256, got ", options.threads));
  }
  return absl::OkStatus();
}

int64_t CriteoEvalRows(const CriteoDataOptions& options) {
  // Rounded, not truncated: 100 * 0.29 is 28.999999999999996.
  const int64_t eval_rows =
      std::llround(static_cast<double>(options.rows) * options.eval_fraction);
  return std::clamp<int64_t>(eval_rows, 0, options.rows - 1);
}

std::pair<int64_t, int64_t> CriteoShardRows(const CriteoDataOptions& options,
                                            CriteoSplit split, int shard) {
  const int64_t eval_rows = CriteoEvalRows(options);
  const int64_t train_rows = options.rows - eval_rows;
  const int64_t first = split == CriteoSplit::kTrain ? 0 : train_rows;
  const int64_t count = split == CriteoSplit::kTrain ? train_rows : eval_rows;
  // count * shard / shards without overflow: count < 2^63, shard < 2^17.
  const auto boundary = [&](int s) {
    return first + static_cast<int64_t>(static_cast<__int128>(count) * s /
                                        options.shards);
  };
  return {boundary(shard), boundary(shard + 1)};
}

std::string CriteoShardPath(const CriteoDataOptions& options,
                            absl::string_view out_dir, absl::string_view prefix,
                            CriteoSplit split, int shard) {
  absl::string_view extension = "csv";
  if (options.format == CriteoFileFormat::kTfRecord) {
    extension = options.compression == TfRecordCompression::kGzip
                    ? "tfrecord.gz"
                    : "tfrecord";
  }
  return JoinPath(out_dir, absl::StrFormat("%s.%s-%05d-of-%05d.%s", prefix,
                                           CriteoSplitName(split), shard,
                                           options.shards, extension));
}

std::string CriteoSpecPath(absl::string_view out_dir,
                           absl::string_view prefix) {
  return JoinPath(out_dir, absl::StrCat(prefix, ".features.json"));
}

std::string CriteoFeatureSpecJson(const CriteoDataOptions& options) {
  using Json = nlohmann::ordered_json;
  Json numeric = Json::array();
  for (int j = 0; j < kCriteoNumericFeatures; ++j) {
    numeric.push_back(Json::object(
        {{"name", CriteoNumericName(j)}, {"length", 1}, {"default", 0.0}}));
  }
  Json categorical = Json::array();
  Json groups = Json::array();
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    const std::string name = CriteoCategoricalName(f);
    Json feature = Json::object(
        {{"name", name},
         {"kind", std::string(CriteoSpecKindName(options.spec_kind))}});
    if (options.spec_kind == CriteoSpecKind::kIdentity) {
      feature["buckets"] = options.vocab;
    }
    categorical.push_back(std::move(feature));
    groups.push_back(Json::object({{"name", name},
                                   {"features", Json::array({name})},
                                   {"dim", options.embedding_dim},
                                   {"combiner", "sum"}}));
  }
  const Json spec = Json::object({{"label", std::string(kCriteoLabelName)},
                                  {"numeric", std::move(numeric)},
                                  {"categorical", std::move(categorical)},
                                  {"embedding_groups", std::move(groups)}});
  return spec.dump(2) + "\n";
}

std::string CriteoCsvHeader() {
  std::vector<std::string> names = {std::string(kCriteoLabelName)};
  for (int j = 0; j < kCriteoNumericFeatures; ++j) {
    names.push_back(CriteoNumericName(j));
  }
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    names.push_back(CriteoCategoricalName(f));
  }
  return absl::StrJoin(names, ",");
}

IdPermutation::IdPermutation(int64_t n, uint64_t key)
    : n_(static_cast<uint64_t>(n)) {
  int bits = 0;
  while (bits < 63 && (uint64_t{1} << bits) < n_) ++bits;
  mask_ = (uint64_t{1} << bits) - 1;
  shift_ = std::max(1, (bits + 1) / 2);
  key0_ = SplitMix64(key) & mask_;
  key1_ = SplitMix64(key + 1) & mask_;
  // Newton's iteration for the inverse of an odd number mod 2^64: each
  // step doubles the correct low bits, from 3 (m * m = 1 mod 8).
  const auto inverse = [](uint64_t m) {
    uint64_t x = m;
    for (int i = 0; i < 5; ++i) x *= 2 - m * x;
    return x;
  };
  inverse0_ = inverse(kMultiplier0);
  inverse1_ = inverse(kMultiplier1);
}

uint64_t IdPermutation::Mix(uint64_t x) const {
  // Each step is a bijection of [0, 2^b): xor with a constant, an odd
  // multiplier mod 2^b, and x ^ (x >> shift).
  x = ((x ^ key0_) * kMultiplier0) & mask_;
  x ^= x >> shift_;
  x = ((x ^ key1_) * kMultiplier1) & mask_;
  x ^= x >> shift_;
  return x;
}

uint64_t IdPermutation::UnXorShift(uint64_t y) const {
  // x = y ^ (x >> shift): each pass fixes shift_ more of the high bits.
  uint64_t x = y;
  for (int fixed = 0; fixed < 64; fixed += shift_) x = y ^ (x >> shift_);
  return x;
}

uint64_t IdPermutation::Unmix(uint64_t x) const {
  x = UnXorShift(x);
  x = ((x * inverse1_) & mask_) ^ key1_;
  x = UnXorShift(x);
  return ((x * inverse0_) & mask_) ^ key0_;
}

int64_t IdPermutation::Inverse(int64_t y) const {
  uint64_t x = static_cast<uint64_t>(y);
  do {
    x = Unmix(x);
  } while (x >= n_);
  return static_cast<int64_t>(x);
}

int64_t IdPermutation::operator()(int64_t x) const {
  uint64_t y = static_cast<uint64_t>(x);
  do {
    y = Mix(y);
  } while (y >= n_);
  return static_cast<int64_t>(y);
}

absl::StatusOr<CriteoModel> CriteoModel::Create(
    const CriteoDataOptions& options) {
  RETURN_IF_ERROR(ValidateCriteoDataOptions(options));
  ASSIGN_OR_RETURN(ZipfSampler zipf,
                   ZipfSampler::Create(options.vocab, options.zipf));
  CriteoModel model(options, std::move(zipf));
  model.Calibrate();
  return model;
}

CriteoModel::CriteoModel(const CriteoDataOptions& options, ZipfSampler zipf)
    : seed_(options.seed),
      row_key_(StreamKey(options.seed, kRowStream)),
      label_key_(StreamKey(options.seed, kLabelStream)),
      zipf_(std::move(zipf)) {
  const uint64_t shape_key = StreamKey(seed_, kNumericShapeStream);
  for (int j = 0; j < kCriteoNumericFeatures; ++j) {
    const uint64_t key = ItemKey(shape_key, j);
    count_location_[j] = kMaxCountLocation * ToUnit(SplitMix64(key));
    count_scale_[j] =
        kMinCountScale + kCountScaleRange * ToUnit(SplitMix64(key + 1));
  }
  const uint64_t permutation_key = StreamKey(seed_, kPermutationStream);
  const uint64_t effect_key = StreamKey(seed_, kEffectStream);
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    permutations_.emplace_back(options.vocab, ItemKey(permutation_key, f));
    effect_keys_[f] = ItemKey(effect_key, f);
  }
}

void CriteoModel::Features(
    uint64_t stream_key, int64_t index, CriteoRow* row,
    std::array<int64_t, kCriteoCategoricalFeatures>* ranks) const {
  RowRandom random(ItemKey(stream_key, static_cast<uint64_t>(index)));
  for (int j = 0; j < kCriteoNumericFeatures; j += 2) {
    const auto [z0, z1] = random.NormalPair();
    for (int k = j; k < std::min(j + 2, kCriteoNumericFeatures); ++k) {
      const double z = k == j ? z0 : z1;
      const double count =
          std::floor(std::exp(count_location_[k] + count_scale_[k] * z));
      row->numeric[k] = static_cast<float>(std::log1p(count));
    }
  }
  const auto uniform = [&random] { return random.Uniform(); };
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    // Ranks are 1-based, ids 0-based.
    (*ranks)[f] = zipf_.Sample(uniform);
    row->categorical[f] = permutations_[f]((*ranks)[f] - 1);
  }
}

void CriteoModel::Calibrate() {
  // Direction and relative size of each weight, before the common scale.
  const uint64_t weight_key = StreamKey(seed_, kNumericWeightStream);
  double numeric_norm = 0;
  for (int j = 0; j < kCriteoNumericFeatures; ++j) {
    numeric_weights_[j] = ApproximateNormal(ItemKey(weight_key, j));
    numeric_norm += numeric_weights_[j] * numeric_weights_[j];
  }
  const uint64_t scale_key = StreamKey(seed_, kEffectScaleStream);
  double effect_norm = 0;
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    effect_scales_[f] = kMinEffectWeight + ToUnit(ItemKey(scale_key, f));
    effect_norm += effect_scales_[f] * effect_scales_[f];
  }

  // The numeric features' spread on the calibration sample, so that each
  // weight applies to a standardised feature.
  const uint64_t calibration_key = StreamKey(seed_, kCalibrationStream);
  std::vector<CriteoRow> rows(kCalibrationRows);
  std::vector<std::array<int64_t, kCriteoCategoricalFeatures>> ranks(
      kCalibrationRows);
  std::array<double, kCriteoNumericFeatures> sum{}, sum_squares{};
  for (int i = 0; i < kCalibrationRows; ++i) {
    Features(calibration_key, i, &rows[i], &ranks[i]);
    for (int j = 0; j < kCriteoNumericFeatures; ++j) {
      sum[j] += rows[i].numeric[j];
      sum_squares[j] +=
          static_cast<double>(rows[i].numeric[j]) * rows[i].numeric[j];
    }
  }
  for (int j = 0; j < kCriteoNumericFeatures; ++j) {
    const double mean = sum[j] / kCalibrationRows;
    const double variance =
        std::max(0.0, sum_squares[j] / kCalibrationRows - mean * mean);
    const double stddev = std::sqrt(variance);
    // A feature that never varies carries no signal.
    numeric_weights_[j] =
        stddev > 1e-9 ? numeric_weights_[j] / stddev *
                            std::sqrt(kNumericVarianceShare / numeric_norm)
                      : 0;
  }
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    effect_scales_[f] *= std::sqrt((1 - kNumericVarianceShare) / effect_norm);
  }

  // One scale for everything so that the logit has the target spread.
  bias_ = 0;
  std::vector<double> logits(kCalibrationRows);
  double logit_sum = 0;
  double logit_sum_squares = 0;
  for (int i = 0; i < kCalibrationRows; ++i) {
    logits[i] = LogitWithRanks(rows[i], ranks[i]);
    logit_sum += logits[i];
    logit_sum_squares += logits[i] * logits[i];
  }
  const double mean = logit_sum / kCalibrationRows;
  const double stddev = std::sqrt(
      std::max(0.0, logit_sum_squares / kCalibrationRows - mean * mean));
  const double scale = stddev > 1e-9 ? kTargetLogitStddev / stddev : 1;
  for (double& w : numeric_weights_) w *= scale;
  for (double& s : effect_scales_) s *= scale;
  for (double& logit : logits) logit *= scale;

  // The bias that makes the mean probability the positive share: the mean
  // is increasing in the bias, so bisect.
  double low = -50;
  double high = 50;
  for (int step = 0; step < 100; ++step) {
    const double middle = (low + high) / 2;
    double mean_probability = 0;
    for (double logit : logits) mean_probability += Sigmoid(logit + middle);
    mean_probability /= kCalibrationRows;
    (mean_probability < kPositiveShare ? low : high) = middle;
  }
  bias_ = (low + high) / 2;
}

int64_t CriteoModel::Rank(int f, int64_t id) const {
  return permutations_[f].Inverse(id) + 1;
}

double CriteoModel::Effect(int f, int64_t id, int64_t rank) const {
  const double damping = std::sqrt(
      kSignalHeadRanks / (kSignalHeadRanks + static_cast<double>(rank - 1)));
  return effect_scales_[f] * damping *
         ApproximateNormal(ItemKey(effect_keys_[f], static_cast<uint64_t>(id)));
}

double CriteoModel::CategoricalEffect(int f, int64_t id) const {
  return Effect(f, id, Rank(f, id));
}

double CriteoModel::LogitWithRanks(
    const CriteoRow& row,
    const std::array<int64_t, kCriteoCategoricalFeatures>& ranks) const {
  double logit = bias_;
  for (int j = 0; j < kCriteoNumericFeatures; ++j) {
    logit += numeric_weights_[j] * row.numeric[j];
  }
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    logit += Effect(f, row.categorical[f], ranks[f]);
  }
  return logit;
}

double CriteoModel::Logit(const CriteoRow& row) const {
  std::array<int64_t, kCriteoCategoricalFeatures> ranks;
  for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
    ranks[f] = Rank(f, row.categorical[f]);
  }
  return LogitWithRanks(row, ranks);
}

double CriteoModel::Probability(const CriteoRow& row) const {
  return Sigmoid(Logit(row));
}

double CriteoModel::Row(int64_t index, CriteoRow* row) const {
  std::array<int64_t, kCriteoCategoricalFeatures> ranks;
  Features(row_key_, index, row, &ranks);
  const double probability = Sigmoid(LogitWithRanks(*row, ranks));
  const double u = ToUnit(ItemKey(label_key_, static_cast<uint64_t>(index)));
  row->label = u < probability ? 1 : 0;
  return probability;
}

absl::Status WriteCriteoData(const CriteoDataOptions& options,
                             const std::string& out_dir,
                             const std::string& prefix,
                             CriteoDataSummary* summary) {
  if (prefix.empty() || absl::StrContains(prefix, '/')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prefix \"", prefix, "\" must be a non-empty file name, not a path"));
  }
  ASSIGN_OR_RETURN(const CriteoModel model, CriteoModel::Create(options));
  RETURN_IF_ERROR(CheckIsDirectory(out_dir));
  const std::string spec_path = CriteoSpecPath(out_dir, prefix);
  if (unlink(spec_path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot remove the old feature spec", spec_path);
  }

  const int64_t eval_rows = CriteoEvalRows(options);
  std::vector<ShardJob> jobs;
  for (int s = 0; s < options.shards; ++s) {
    jobs.push_back({CriteoSplit::kTrain, s});
  }
  if (eval_rows > 0) {
    for (int s = 0; s < options.shards; ++s) {
      jobs.push_back({CriteoSplit::kEval, s});
    }
  }
  const int threads =
      static_cast<int>(std::min<size_t>(options.threads, jobs.size()));
  ShardWriters writers(options, model, out_dir, prefix, jobs);
  RETURN_IF_ERROR(writers.Run(threads));
  RETURN_IF_ERROR(SyncDirectory(out_dir));
  const std::string spec = CriteoFeatureSpecJson(options);
  RETURN_IF_ERROR(WriteFileAtomically(spec_path, {spec}));

  if (summary == nullptr) return absl::OkStatus();
  CriteoDataSummary result;
  result.eval_rows = eval_rows;
  result.train_rows = options.rows - eval_rows;
  for (const ShardJob& job : jobs) {
    (job.split == CriteoSplit::kTrain ? result.train_files : result.eval_files)
        .push_back(
            CriteoShardPath(options, out_dir, prefix, job.split, job.shard));
  }
  result.spec_file = spec_path;
  result.bytes = writers.bytes();
  result.positive_fraction = static_cast<double>(writers.positives()) /
                             static_cast<double>(options.rows);
  if (writers.histogram() != nullptr) {
    std::tie(result.true_eval_auc, result.true_eval_auc_error) =
        writers.histogram()->Auc();
  }
  *summary = std::move(result);
  return absl::OkStatus();
}

}  // namespace distrt
