// gen_data: writes a synthetic LIBSVM data set with a known ground truth
// (see synthetic_data.h) as <out_dir>/<prefix>.train.svm and
// <out_dir>/<prefix>.eval.svm, creating out_dir if needed, and prints one
// line saying what it wrote and what accuracy (or RMSE) the true model
// reaches on the eval file, e.g.
//   wrote 8000 train and 2000 eval rows of binary data (1000 features, 10
//   per row) to /tmp/d/binary.{train,eval}.svm; positives 49.1%; the true
//   model's eval accuracy is 90.5%
// (--help exits 1: that is absl's choice in this release.)
// Exit status: 0 on success, 2 with one line on stderr for a bad flag, 1 for
// an error writing the files.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
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
#include "runtime/util/file_system.h"
#include "tools/gen_data/synthetic_data.h"

namespace {
// The defaults of SyntheticDataOptions, which the flags start from.
constexpr distrt::SyntheticDataOptions kDefaults;
}  // namespace

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
          "File name prefix: <prefix>.train.svm and <prefix>.eval.svm. "
          "Default: the task name.");

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
// Returns 0 when absl may parse the command line, else the exit status.
int CheckFlagValues(int argc, char** argv) {
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

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "gen_data --out_dir=DIR [--task=binary|multiclass|regression] "
      "[--rows=N] [--features=N] [--features_per_row=N] [--classes=N] "
      "[--noise=X] [--eval_fraction=X] [--seed=N] [--prefix=NAME]\n"
      "Writes synthetic LIBSVM data with a known linear ground truth to "
      "DIR/NAME.train.svm and DIR/NAME.eval.svm (NAME defaults to the "
      "task) and prints the accuracy the true model reaches on the eval "
      "file.");
  if (int exit_code = CheckFlagValues(argc, argv); exit_code != 0) {
    return exit_code;
  }
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() > 1) {
    return Fail(kExitBadFlag,
                absl::StrCat("unexpected argument \"", args[1],
                             "\" (everything is set with flags; see --help)"));
  }

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
  std::string prefix = absl::GetFlag(FLAGS_prefix);
  if (prefix.empty()) prefix = std::string(SyntheticTaskName(options.task));
  if (absl::StrContains(prefix, '/') || prefix == "." || prefix == "..") {
    return Fail(kExitBadFlag, absl::StrCat("--prefix=", prefix,
                                           " must be a file name, not a path"));
  }

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

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) { return distrt::Main(argc, argv); }
