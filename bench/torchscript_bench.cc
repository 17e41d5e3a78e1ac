// The torchscript family: see torchscript_bench.h.

#include "bench/torchscript_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "bench/local_jobs.h"
#include "runtime/input/batch.h"
#include "runtime/models/model.h"
#include "runtime/torchscript/torchscript_model.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"
#include "tests/util/subprocess.h"

namespace distrt::bench {
namespace {

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kMlpScript[] = "examples/torch/mlp.py";
constexpr char kBaselineScript[] = "bench/torch_baseline.py";
constexpr absl::Duration kTimeout = absl::Minutes(5);

// (a): an MLP of 128 features, 512 hidden units and 10 classes (71k
// parameters), batch 256, plain SGD in both.
constexpr int kFeatures = 128;
constexpr int kHidden = 512;
constexpr int kClasses = 10;
constexpr int kBatch = 256;

// (b): 1024 features, 960 hidden units, 10 classes: 993k parameters.
constexpr int kBigFeatures = 1024;
constexpr int kBigHidden = 960;

absl::StatusOr<testing::SubprocessResult> Run(std::vector<std::string> argv,
                                              const std::string& what) {
  testing::SubprocessOptions options;
  options.argv = std::move(argv);
  options.timeout = kTimeout;
  ASSIGN_OR_RETURN(testing::SubprocessResult result,
                   testing::RunSubprocess(options));
  if (result.exit_code != 0) {
    return absl::InternalError(absl::StrCat(what, " failed (exit ",
                                            result.exit_code,
                                            "): ", Tail(result.stderr_text)));
  }
  return result;
}

// examples/torch/mlp.py writes the module.
absl::Status WriteMlp(const std::string& path, int features, int hidden) {
  return Run({kPython, kMlpScript, absl::StrCat("--features=", features),
              absl::StrCat("--classes=", kClasses),
              absl::StrCat("--hidden=", hidden), "--out=" + path},
             absl::StrCat(kMlpScript, " (Debian's python3-torch)"))
      .status();
}

// The worker alone (no TF_CONFIG), one CPU replica: its metrics.json's
// examples/s of the training loop.
absl::StatusOr<double> WorkerExamplesPerSec(const ProjectBinaries& binaries,
                                            const std::string& module,
                                            const std::string& data, int steps,
                                            const std::string& dir) {
  const std::string metrics = JoinPath(dir, "worker_metrics.json");
  RETURN_IF_ERROR(
      Run({binaries.worker, "--model=torchscript",
           "--torchscript_file=" + module, "--loss=softmax_cross_entropy",
           "--train_data=" + data, absl::StrCat("--num_features=", kFeatures),
           "--num_cpu_replicas=1", "--devices=cpu", "--optimizer=sgd",
           "--learning_rate=0.01", absl::StrCat("--global_batch_size=", kBatch),
           absl::StrCat("--train_steps=", steps), "--log_every_secs=60",
           "--metrics_out=" + metrics},
          "the worker")
          .status());
  ASSIGN_OR_RETURN(JobMetrics job, ReadJobMetrics(metrics));
  return job.examples_per_sec;
}

absl::StatusOr<double> PyTorchExamplesPerSec(const std::string& module,
                                             const std::string& data,
                                             int steps) {
  ASSIGN_OR_RETURN(
      testing::SubprocessResult result,
      Run({kPython, kBaselineScript, "--module=" + module, "--data=" + data,
           absl::StrCat("--features=", kFeatures),
           absl::StrCat("--batch=", kBatch), absl::StrCat("--steps=", steps)},
          kBaselineScript));
  double value = 0;
  absl::string_view line = result.stdout_text;
  if (!absl::ConsumePrefix(&line, "examples/s ") ||
      !absl::SimpleAtod(absl::StripAsciiWhitespace(line), &value)) {
    return absl::InternalError(absl::StrCat(kBaselineScript, " printed \"",
                                            result.stdout_text,
                                            "\", not \"examples/s N\""));
  }
  return value;
}

// The median seconds of `repeats` steps with gradients of `model` on a
// batch of `size` random examples.
absl::StatusOr<double> StepSeconds(const Model& model, int features, int size,
                                   int repeats) {
  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  Batch batch;
  batch.size = size;
  batch.num_dense = features;
  for (int i = 0; i < size * features; ++i)
    batch.dense.push_back(normal(random));
  for (int i = 0; i < size; ++i) batch.labels.push_back(i % kClasses);
  batch.offsets.assign(size + 1, 0);
  std::vector<VariableSlice> values;
  for (const ModelVariable& v : model.variables()) {
    values.push_back({v.initial_values, {}, {}});
  }
  std::vector<double> seconds;
  for (int r = 0; r < repeats + 2; ++r) {
    ModelStepResult result;
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(model.Compute(batch, values, true, &result));
    const std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start;
    if (r >= 2) seconds.push_back(took.count());  // after two warm-ups
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

absl::Status RunTorchScriptBench(const BenchConfig& config,
                                 BenchReport* report) {
  report->BeginFamily(
      "torchscript: a user's PyTorch module (--model=torchscript)",
      "examples/s: higher is better (ratio = the worker / PyTorch in Python, "
      "target >= 1); adapter: the step at 1 example / at 256, an upper bound "
      "on the adapter's share of a step (target < 0.1)");
  ASSIGN_OR_RETURN(ProjectBinaries binaries, FindProjectBinaries(config));
  const std::string dir = JoinPath(config.scratch_dir, "torchscript");
  RETURN_IF_ERROR(CreateDirectories(dir));
  const int rows = config.quick ? 5000 : 20000;
  const int steps = config.quick ? 100 : 400;
  RETURN_IF_ERROR(
      GenerateData(binaries,
                   {"--task=multiclass", absl::StrCat("--rows=", rows),
                    absl::StrCat("--features=", kFeatures),
                    absl::StrCat("--features_per_row=", kFeatures),
                    absl::StrCat("--classes=", kClasses), "--seed=7",
                    "--out_dir=" + dir, "--prefix=d"},
                   kTimeout)
          .status());
  const std::string data = JoinPath(dir, "d.train.svm");
  const std::string module = JoinPath(dir, "mlp.pt");
  RETURN_IF_ERROR(WriteMlp(module, kFeatures, kHidden));
  // Alternated, best of two each: a burst of load elsewhere hits one run.
  double ours = 0, pytorch = 0;
  for (int run = 0; run < 2; ++run) {
    ASSIGN_OR_RETURN(double o,
                     WorkerExamplesPerSec(binaries, module, data, steps, dir));
    ASSIGN_OR_RETURN(double p, PyTorchExamplesPerSec(module, data, steps));
    ours = std::max(ours, o);
    pytorch = std::max(pytorch, p);
  }
  report->Add(absl::StrFormat("torchscript/mlp_%dx%dx%d/batch%d", kFeatures,
                              kHidden, kClasses, kBatch),
              ours, "examples/s", "pytorch_python", pytorch);

  const std::string big = JoinPath(dir, "mlp_1m.pt");
  RETURN_IF_ERROR(WriteMlp(big, kBigFeatures, kBigHidden));
  TorchScriptModelConfig model_config;
  model_config.path = big;
  model_config.num_features = kBigFeatures;
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                   LoadTorchScriptModel(model_config));
  int64_t parameters = 0;
  for (const ModelVariable& v : model->variables()) {
    parameters += static_cast<int64_t>(v.initial_values.size());
  }
  const int repeats = config.quick ? 5 : 15;
  ASSIGN_OR_RETURN(double one, StepSeconds(*model, kBigFeatures, 1, repeats));
  ASSIGN_OR_RETURN(double full,
                   StepSeconds(*model, kBigFeatures, kBatch, repeats));
  report->Add(
      absl::StrFormat("torchscript/adapter/%dk_params", parameters / 1000),
      one * 1e3, "ms", absl::StrCat("step_at_batch", kBatch), full * 1e3);
  return absl::OkStatus();
}

}  // namespace distrt::bench
