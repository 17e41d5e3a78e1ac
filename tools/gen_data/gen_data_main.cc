// gen_data: writes a synthetic data set with a known ground truth, creating
// out_dir if needed, and prints one line saying what it wrote and how well
// the true model does on the eval rows. Two shapes:
//
//   --shape=linear (the default): LIBSVM rows with a linear ground truth
//   (see synthetic_data.h) as <out_dir>/<prefix>.train.svm and
//   <out_dir>/<prefix>.eval.svm, e.g.
//     wrote 8000 train and 2000 eval rows of binary data (1000 features, 10
//     per row) to /tmp/d/binary.{train,eval}.svm; positives 49.1%; the true
//     model's eval accuracy is 90.5%
//
//   --shape=criteo: Criteo-shaped click data (see criteo_data.h) as sharded
//   TFRecord (or CSV) files <out_dir>/<prefix>.train-00000-of-0000K.tfrecord
//   ..., <out_dir>/<prefix>.eval-..., and the feature spec
//   <out_dir>/<prefix>.features.json, e.g.
//     wrote 80000 train and 20000 eval rows of criteo-shaped data (13
//     numeric, 26 categorical features of 1000000 ids, zipf 1.1) in 8
//     tfrecord files, 61.2 MiB, to /tmp/d/criteo.{train,eval}-*-of-00004.
//     tfrecord with the feature spec /tmp/d/criteo.features.json; positives
//     25.1%; the true model's eval AUC is 0.776
//
// Flags of one shape are refused with the other.
// (--help exits 1: that is absl's choice in this release.)
// Exit status: 0 on success, 2 with one line on stderr for a bad flag, 1 for
// an error writing the files.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "runtime/input/tfrecord_reader.h"
#include "runtime/util/file_system.h"
#include "runtime/util/format_bytes.h"
#include "tools/gen_data/criteo_data.h"
#include "tools/gen_data/synthetic_data.h"

namespace {
// The defaults of SyntheticDataOptions and CriteoDataOptions, which the
// flags start from.
constexpr distrt::SyntheticDataOptions kDefaults;
const distrt::CriteoDataOptions kCriteoDefaults;
}  // namespace

ABSL_FLAG(std::string, shape, "linear",
          "linear: LIBSVM rows with a linear ground truth (--task etc.). "
          "criteo: Criteo-shaped click data, 13 numeric and 26 categorical "
          "features, as sharded tfrecord or csv files with a feature spec "
          "(--format, --shards, --vocab, --zipf etc.).");
ABSL_FLAG(std::string, task, "binary",
          "binary (labels 0/1), multiclass (labels 0..classes-1) or "
          "regression (real labels).");
ABSL_FLAG(int64_t, rows, kDefaults.rows,
          "Rows in the train and eval files together.");
ABSL_FLAG(int64_t, features, kDefaults.num_features,
          "Size of the feature id space; LIBSVM indices are 1..features.");
ABSL_FLAG(int64_t, features_per_row, kDefaults.features_per_row,
          "Non-zero features per row; >= --features makes every row dense "
          "(all features, standard normal values).");
ABSL_FLAG(int, classes, kDefaults.num_classes,
          "Number of classes for --task=multiclass (2..100).");
ABSL_FLAG(double, noise, kDefaults.noise,
          "Classification: probability in [0, 1] that a row's label is "
          "replaced by a different one. Regression: standard deviation of the "
          "gaussian noise added to targets of about unit variance.");
ABSL_FLAG(double, eval_fraction, kDefaults.eval_fraction,
          "Share of the rows, in [0, 1), written to the eval file (the last "
          "ones).");
ABSL_FLAG(uint64_t, seed, kDefaults.seed,
          "Seed of everything random; the same flags give the same files on "
          "every platform.");
ABSL_FLAG(std::string, out_dir, "",
          "Directory for the files (required); created if missing.");
ABSL_FLAG(std::string, prefix, "",
          "File name prefix: <prefix>.train.svm and <prefix>.eval.svm, or "
          "for criteo <prefix>.train-SSSSS-of-KKKKK.<ext>, "
          "<prefix>.eval-... and <prefix>.features.json. Default: the task "
          "name, or criteo.");
// --shape=criteo only.
ABSL_FLAG(std::string, format, "tfrecord",
          "criteo: tfrecord (one tf.Example per row) or csv (a header line, "
          "then one line per row).");
ABSL_FLAG(std::string, compression, "none",
          "criteo: none or gzip (tfrecord only; files end in .tfrecord.gz).");
ABSL_FLAG(int, shards, kCriteoDefaults.shards,
          "criteo: files per split (train and eval each), each holding a "
          "contiguous range of the split's rows.");
ABSL_FLAG(int64_t, vocab, kCriteoDefaults.vocab,
          "criteo: ids per categorical feature (up to 2^40); no table of "
          "this size is ever built.");
ABSL_FLAG(double, zipf, kCriteoDefaults.zipf,
          "criteo: exponent s of the Zipf distribution of the ids, P(rank "
          "k) ~ k^-s.");
ABSL_FLAG(std::string, spec_kind, "hashed",
          "criteo: how the feature spec declares C1..C26: hashed (hash "
          "embedding tables on the ps tasks) or identity (buckets = "
          "--vocab).");
ABSL_FLAG(int64_t, embedding_dim, kCriteoDefaults.embedding_dim,
          "criteo: the embedding dimension of every group in the spec.");
ABSL_FLAG(int, threads, 0,
          "criteo: files written at once; 0 means one per core.");

namespace distrt {
namespace {

constexpr int kExitIoError = 1;
constexpr int kExitBadFlag = 2;

int Fail(int exit_code, absl::string_view message) {
  std::fprintf(stderr, "gen_data: %s\n", std::string(message).c_str());
  return exit_code;
}

// absl::ParseCommandLine (LTS 2022-06-23) exits with status 1 itself on an
// unknown flag or a value it cannot parse, and this tool promises 2 for
// every bad flag, so each "--name=value" or "--name value" is first parsed
// here with the flag's own parser. What this does not understand (usage
// flags such as --help, bool flags, anything after "--") is left to absl.
// Returns 0 when absl may parse the command line, else the exit status;
// adds the name of every flag given to `given`.
int CheckFlagValues(int argc, char** argv, std::set<std::string>* given) {
  // Handled by ParseCommandLine, which finds them without flag objects.
  constexpr absl::string_view kUsageFlags[] = {
      "help",    "helpfull",        "helpshort", "helppackage",
      "version", "only_check_args", "helpon",    "helpmatch"};
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "-")) continue;  // positional
    absl::ConsumePrefix(&arg, "-");
    const size_t equals = arg.find('=');
    const absl::string_view name = arg.substr(0, equals);
    if (absl::c_linear_search(kUsageFlags, name)) continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) {
      // "--nofoo" sets a bool flag foo to false.
      absl::string_view positive = name;
      if (absl::ConsumePrefix(&positive, "no")) {
        flag = absl::FindCommandLineFlag(positive);
        if (flag != nullptr && flag->IsOfType<bool>()) continue;
      }
      return Fail(kExitBadFlag,
                  absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    given->insert(std::string(flag->Name()));
    if (flag->IsOfType<bool>()) continue;
    std::string value;
    if (equals != absl::string_view::npos) {
      value = std::string(arg.substr(equals + 1));
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Fail(kExitBadFlag, absl::StrCat("--", name, " needs a value"));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return Fail(kExitBadFlag,
                  absl::StrCat("--", name, "=", value, ": ", error));
    }
  }
  return 0;
}

// The flag behind each field whose name ValidateSyntheticDataOptions puts
// first in its messages.
constexpr std::pair<absl::string_view, absl::string_view> kFlagOfField[] = {
    {"rows", "--rows"},
    {"num_features", "--features"},
    {"features_per_row", "--features_per_row"},
    {"num_classes", "--classes"},
    {"noise", "--noise"},
    {"eval_fraction", "--eval_fraction"},
};

// "num_features must be ..." -> "--features must be ...".
std::string InTermsOfFlags(absl::string_view message) {
  for (const auto& [field, flag] : kFlagOfField) {
    if (absl::StartsWith(message, absl::StrCat(field, " "))) {
      return absl::StrCat(flag, message.substr(field.size()));
    }
  }
  return std::string(message);
}

std::string Percent(double fraction) {
  return absl::StrFormat("%.1f%%", 100 * fraction);
}

// What the summary line says after the file names.
std::string Statistics(const SyntheticDataOptions& options,
                       const SyntheticDataSummary& summary) {
  std::string text;
  switch (options.task) {
    case SyntheticTask::kBinary:
      absl::StrAppend(&text, "; positives ",
                      Percent(summary.positive_fraction));
      break;
    case SyntheticTask::kMulticlass: {
      const auto [smallest, largest] = std::minmax_element(
          summary.class_counts.begin(), summary.class_counts.end());
      const double rows = static_cast<double>(options.rows);
      absl::StrAppend(&text, "; class shares ",
                      Percent(static_cast<double>(*smallest) / rows), " to ",
                      Percent(static_cast<double>(*largest) / rows));
      break;
    }
    case SyntheticTask::kRegression:
      break;
  }
  if (summary.eval_rows == 0) {
    absl::StrAppend(&text, "; no eval rows");
  } else if (options.task == SyntheticTask::kRegression) {
    absl::StrAppend(
        &text, "; the true model's eval RMSE is ",
        absl::StrFormat("%.4g", summary.true_model_eval_rmse),
        absl::StrFormat(" (label stddev %.4g)", summary.eval_label_stddev));
  } else {
    absl::StrAppend(&text, "; the true model's eval accuracy is ",
                    Percent(summary.true_model_eval_accuracy));
  }
  return text;
}

// The flags that only one shape reads.
constexpr absl::string_view kLinearOnlyFlags[] = {
    "task", "features", "features_per_row", "classes", "noise"};
constexpr absl::string_view kCriteoOnlyFlags[] = {
    "format",    "compression",   "shards",  "vocab",
    "spec_kind", "embedding_dim", "threads", "zipf"};

// 0, or the exit status after saying which flag does not apply.
int CheckShapeFlags(absl::string_view shape,
                    const std::set<std::string>& given) {
  const auto& others = shape == "criteo"
                           ? absl::MakeConstSpan(kLinearOnlyFlags)
                           : absl::MakeConstSpan(kCriteoOnlyFlags);
  for (absl::string_view name : others) {
    if (given.count(std::string(name)) > 0) {
      return Fail(kExitBadFlag,
                  absl::StrCat("--", name, " does not apply to --shape=", shape,
                               " (see --help)"));
    }
  }
  return 0;
}

// The prefix flag, or `fallback`; empty (after saying why) if unusable.
std::string Prefix(absl::string_view fallback) {
  std::string prefix = absl::GetFlag(FLAGS_prefix);
  if (prefix.empty()) prefix = std::string(fallback);
  if (absl::StrContains(prefix, '/') || prefix == "." || prefix == "..") {
    Fail(kExitBadFlag,
         absl::StrCat("--prefix=", prefix, " must be a file name, not a path"));
    return "";
  }
  return prefix;
}

int RunLinear() {
  SyntheticDataOptions options;
  absl::StatusOr<SyntheticTask> task =
      ParseSyntheticTask(absl::GetFlag(FLAGS_task));
  if (!task.ok()) {
    return Fail(kExitBadFlag,
                absl::StrCat("--task=", absl::GetFlag(FLAGS_task),
                             ": expected binary, multiclass or regression"));
  }
  options.task = *task;
  options.rows = absl::GetFlag(FLAGS_rows);
  options.num_features = absl::GetFlag(FLAGS_features);
  options.features_per_row = absl::GetFlag(FLAGS_features_per_row);
  options.num_classes = absl::GetFlag(FLAGS_classes);
  options.noise = absl::GetFlag(FLAGS_noise);
  options.eval_fraction = absl::GetFlag(FLAGS_eval_fraction);
  options.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status s = ValidateSyntheticDataOptions(options); !s.ok()) {
    return Fail(kExitBadFlag, InTermsOfFlags(s.message()));
  }
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  if (out_dir.empty()) return Fail(kExitBadFlag, "--out_dir is required");
  const std::string prefix = Prefix(SyntheticTaskName(options.task));
  if (prefix.empty()) return kExitBadFlag;

  if (absl::Status s = CreateDirectories(out_dir); !s.ok()) {
    return Fail(kExitIoError, s.message());
  }
  const std::string base = JoinPath(out_dir, prefix);
  SyntheticDataSummary summary;
  if (absl::Status s = WriteSyntheticData(options, base + ".train.svm",
                                          base + ".eval.svm", &summary);
      !s.ok()) {
    return Fail(kExitIoError, s.message());
  }

  const std::string per_row =
      options.features_per_row >= options.num_features
          ? "dense"
          : absl::StrCat(options.features_per_row, " per row");
  std::printf(
      "wrote %lld train and %lld eval rows of %s data (%lld features, "
      "%s) to %s.{train,eval}.svm%s\n",
      static_cast<long long>(summary.train_rows),
      static_cast<long long>(summary.eval_rows),
      std::string(SyntheticTaskName(options.task)).c_str(),
      static_cast<long long>(options.num_features), per_row.c_str(),
      base.c_str(), Statistics(options, summary).c_str());
  return 0;
}

// "vocab must be ..." -> "--vocab must be ...": CriteoDataOptions' fields
// are named as the flags.
std::string CriteoMessageInTermsOfFlags(absl::string_view message) {
  return absl::StrCat("--", message);
}

int RunCriteo() {
  CriteoDataOptions options;
  options.rows = absl::GetFlag(FLAGS_rows);
  options.eval_fraction = absl::GetFlag(FLAGS_eval_fraction);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.shards = absl::GetFlag(FLAGS_shards);
  options.vocab = absl::GetFlag(FLAGS_vocab);
  options.zipf = absl::GetFlag(FLAGS_zipf);
  options.embedding_dim = absl::GetFlag(FLAGS_embedding_dim);
  absl::StatusOr<CriteoFileFormat> format =
      ParseCriteoFileFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) {
    return Fail(kExitBadFlag,
                CriteoMessageInTermsOfFlags(format.status().message()));
  }
  options.format = *format;
  absl::StatusOr<TfRecordCompression> compression =
      ParseTfRecordCompression(absl::GetFlag(FLAGS_compression));
  if (!compression.ok()) {
    return Fail(kExitBadFlag, absl::StrCat("--compression: ",
                                           compression.status().message()));
  }
  options.compression = *compression;
  absl::StatusOr<CriteoSpecKind> spec_kind =
      ParseCriteoSpecKind(absl::GetFlag(FLAGS_spec_kind));
  if (!spec_kind.ok()) {
    return Fail(kExitBadFlag,
                CriteoMessageInTermsOfFlags(spec_kind.status().message()));
  }
  options.spec_kind = *spec_kind;
  options.threads = absl::GetFlag(FLAGS_threads);
  if (options.threads == 0) {
    options.threads = static_cast<int>(
        std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
  }
  if (absl::Status s = ValidateCriteoDataOptions(options); !s.ok()) {
    return Fail(kExitBadFlag, CriteoMessageInTermsOfFlags(s.message()));
  }
  const std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  if (out_dir.empty()) return Fail(kExitBadFlag, "--out_dir is required");
  const std::string prefix = Prefix("criteo");
  if (prefix.empty()) return kExitBadFlag;

  if (absl::Status s = CreateDirectories(out_dir); !s.ok()) {
    return Fail(kExitIoError, s.message());
  }
  CriteoDataSummary summary;
  if (absl::Status s = WriteCriteoData(options, out_dir, prefix, &summary);
      !s.ok()) {
    return Fail(kExitIoError, s.message());
  }

  const size_t files = summary.train_files.size() + summary.eval_files.size();
  // ".../criteo.train-00000-of-00004.tfrecord" -> "...-of-00004.tfrecord".
  const std::string& first = summary.train_files.front();
  const std::string ending = first.substr(first.rfind("-of-"));
  std::string auc = "; no eval rows";
  if (summary.eval_rows > 0) {
    auc = std::isnan(summary.true_eval_auc)
              ? "; the eval rows all have one label (no AUC)"
              : absl::StrFormat("; the true model's eval AUC is %.3f",
                                summary.true_eval_auc);
  }
  std::printf(
      "wrote %lld train and %lld eval rows of criteo-shaped data (13 "
      "numeric, 26 categorical features of %lld ids, zipf %g) in %zu %s "
      "files, %s, to %s.{train,eval}-*%s with the feature spec %s; "
      "positives %s%s\n",
      static_cast<long long>(summary.train_rows),
      static_cast<long long>(summary.eval_rows),
      static_cast<long long>(options.vocab), options.zipf, files,
      std::string(CriteoFileFormatName(options.format)).c_str(),
      FormatBytes(summary.bytes).c_str(), JoinPath(out_dir, prefix).c_str(),
      ending.c_str(), summary.spec_file.c_str(),
      Percent(summary.positive_fraction).c_str(), auc.c_str());
  return 0;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "gen_data --out_dir=DIR [--task=binary|multiclass|regression] "
      "[--rows=N] [--features=N] [--features_per_row=N] [--classes=N] "
      "[--noise=X] [--eval_fraction=X] [--seed=N] [--prefix=NAME]\n"
      "Writes synthetic LIBSVM data with a known linear ground truth to "
      "DIR/NAME.train.svm and DIR/NAME.eval.svm (NAME defaults to the "
      "task) and prints the accuracy the true model reaches on the eval "
      "file.\n"
      "gen_data --shape=criteo --out_dir=DIR [--format=tfrecord|csv] "
      "[--compression=none|gzip] [--rows=N] [--shards=K] [--vocab=N] "
      "[--zipf=S] [--eval_fraction=X] [--seed=N] [--prefix=NAME] "
      "[--spec_kind=hashed|identity] [--embedding_dim=D] [--threads=T]\n"
      "Writes Criteo-shaped click data (label, I1..I13, C1..C26) with a "
      "known ground truth to DIR/NAME.train-SSSSS-of-KKKKK.tfrecord, "
      "DIR/NAME.eval-..., and its feature spec DIR/NAME.features.json, and "
      "prints the AUC the true model reaches on the eval rows.");
  std::set<std::string> given;
  if (int exit_code = CheckFlagValues(argc, argv, &given); exit_code != 0) {
    return exit_code;
  }
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() > 1) {
    return Fail(kExitBadFlag,
                absl::StrCat("unexpected argument \"", args[1],
                             "\" (everything is set with flags; see --help)"));
  }
  const std::string shape = absl::GetFlag(FLAGS_shape);
  if (shape != "linear" && shape != "criteo") {
    return Fail(kExitBadFlag,
                absl::StrCat("--shape=", shape, ": expected linear or criteo"));
  }
  if (int exit_code = CheckShapeFlags(shape, given); exit_code != 0) {
    return exit_code;
  }
  return shape == "criteo" ? RunCriteo() : RunLinear();
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) { return distrt::Main(argc, argv); }
