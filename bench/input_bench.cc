// The input family: see input_bench.h.

#include "bench/input_bench.h"

#include <signal.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "bench/local_jobs.h"
#include "runtime/device/cpu_device.h"
#include "runtime/distribute/one_device_strategy.h"
#include "runtime/input/example.h"
#include "runtime/input/feature_spec.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_files.h"
#include "runtime/input/input_pipeline.h"
#include "runtime/input/tfrecord_reader.h"
#include "runtime/models/model.h"
#include "runtime/models/model_config.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/torchscript/torchscript_model.h"
#include "runtime/training/model_variables.h"
#include "runtime/training/training_loop.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"
#include "tests/util/subprocess.h"
#include "tools/gen_data/criteo_data.h"

namespace distrt::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kDlrmScript[] = "examples/torch/dlrm.py";
constexpr char kBaselineScript[] = "bench/input_pytorch_baseline.py";
constexpr char kExampleProto[] = "proto/example.proto";
constexpr absl::Duration kTimeout = absl::Minutes(5);
// The worker's epoch over 10 GB takes minutes on two cores.
constexpr absl::Duration kWorkerTimeout = absl::Minutes(30);

// Every pipeline's and job's batch (per replica: there is one).
constexpr int kBatch = 256;
// (1), (2) and (4) read one Criteo-shaped data set of this many shards;
// PyTorch reads the first kPyTorchShards of them (Python's protobuf parses
// ~10x slower, so it gets fewer rows), and so does our pipeline for (4).
constexpr int kShards = 16;
constexpr int kPyTorchShards = 2;
// (2): steps before the timed ones (the shuffle buffer's fill, first
// inserts into the hash tables), and the shuffle buffer both pipelines use.
constexpr int kWarmupSteps = 5;
constexpr int64_t kShuffleBuffer = 10000;

constexpr int64_t kMiB = int64_t{1} << 20;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

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

// A Criteo-shaped TFRecord data set (train split only) in `dir`.
absl::StatusOr<CriteoDataSummary> WriteCriteo(const std::string& dir,
                                              int64_t rows, int shards,
                                              int64_t vocab, int64_t dim) {
  RETURN_IF_ERROR(CreateDirectories(dir));
  CriteoDataOptions options;
  options.rows = rows;
  options.eval_fraction = 0;
  options.shards = shards;
  options.vocab = vocab;
  options.embedding_dim = dim;
  options.seed = 7;
  options.threads = 2;
  CriteoDataSummary summary;
  RETURN_IF_ERROR(WriteCriteoData(options, dir, "criteo", &summary));
  return summary;
}

// ---- (1) parse throughput --------------------------------------------------

// Records/s of reading `files` with TfRecordReader::Next, which checks
// every record's CRCs, without parsing them.
absl::StatusOr<double> CrcReadRecordsPerSec(
    const std::vector<std::string>& files) {
  const Clock::time_point start = Clock::now();
  int64_t records = 0;
  std::string record;
  for (const std::string& path : files) {
    ASSIGN_OR_RETURN(std::unique_ptr<TfRecordReader> reader,
                     TfRecordReader::Open(path, TfRecordCompression::kNone,
                                          /*parser=*/nullptr));
    while (true) {
      ASSIGN_OR_RETURN(bool more, reader->Next(&record));
      if (!more) break;
      ++records;
    }
  }
  return records / SecondsSince(start);
}

InputPipeline::Options PipelineOptions(int parse_threads) {
  InputPipeline::Options options;
  options.per_replica_batch_size = kBatch;
  options.parse_threads = parse_threads;
  return options;
}

absl::StatusOr<InputShard> AllFiles(std::vector<std::string> files) {
  return ShardInput(std::move(files), InputContext{}, AutoShardPolicy::kFile);
}

// Examples/s of one epoch of a streaming pipeline over `files` (creating
// it included): parse and batch, nothing else.
absl::StatusOr<double> PipelineExamplesPerSec(
    const std::vector<std::string>& files,
    const std::shared_ptr<const RecordFormat>& format, int parse_threads) {
  ASSIGN_OR_RETURN(InputShard shard, AllFiles(files));
  const Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(
      std::unique_ptr<InputPipeline> pipeline,
      InputPipeline::Create(shard, format, PipelineOptions(parse_threads)));
  int64_t examples = 0;
  while (true) {
    absl::StatusOr<InputStep> step = pipeline->Next();
    if (absl::IsOutOfRange(step.status())) break;
    RETURN_IF_ERROR(step.status());
    examples += step->num_examples();
  }
  return examples / SecondsSince(start);
}

// The best of two runs of `measure`: a burst of load elsewhere on a shared
// two-core machine hits one run.
absl::StatusOr<double> BestOfTwo(
    const std::function<absl::StatusOr<double>()>& measure) {
  double best = 0;
  for (int run = 0; run < 2; ++run) {
    ASSIGN_OR_RETURN(double value, measure());
    best = std::max(best, value);
  }
  return best;
}

// ---- (2) streaming against preloaded ---------------------------------------

// The model to train, freshly created for each measurement (hash tables
// that already hold a batch's ids would make the second job cheaper).
using ModelFactory = std::function<absl::StatusOr<std::unique_ptr<Model>>()>;
// A pipeline of `options` over the data, streamed or preloaded.
using PipelineFactory =
    std::function<absl::StatusOr<std::unique_ptr<InputPipeline>>(
        InputPipeline::Options)>;

// Examples/s of `steps` training steps on one CPU device after
// kWarmupSteps untimed ones, with fresh variables.
absl::StatusOr<double> TrainingExamplesPerSec(const ModelFactory& make_model,
                                              const PipelineFactory& make_data,
                                              int64_t steps) {
  CpuDevice cpu(DeviceName(), 0);
  ASSIGN_OR_RETURN(std::unique_ptr<OneDeviceStrategy> strategy,
                   OneDeviceStrategy::Create(&cpu));
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, make_model());
  ASSIGN_OR_RETURN(ModelVariables variables,
                   ModelVariables::Create(*strategy, *model));
  RETURN_IF_ERROR(variables.AssignInitialValues(*strategy, *model));
  InputPipeline::Options options = PipelineOptions(/*parse_threads=*/2);
  options.shuffle = true;
  options.seed = 1;
  options.shuffle_buffer = kShuffleBuffer;
  options.num_epochs = 0;  // as many steps as asked for
  ASSIGN_OR_RETURN(std::unique_ptr<InputPipeline> pipeline, make_data(options));
  TrainingLoopOptions loop;
  loop.log_every = absl::Hours(1);
  loop.max_steps = kWarmupSteps;
  RETURN_IF_ERROR(
      RunTrainingLoop(*strategy, *model, variables, *pipeline, loop).status());
  loop.max_steps = steps;
  ASSIGN_OR_RETURN(
      TrainingLoopResult result,
      RunTrainingLoop(*strategy, *model, variables, *pipeline, loop));
  if (result.steps != steps) {
    return absl::InternalError(absl::StrCat(
        "the training loop ran ", result.steps, " steps, not ", steps));
  }
  return result.examples_per_sec;
}

struct StreamingFigures {
  double streaming = 0;  // examples/s
  double preloaded = 0;  // examples/s
};

// Alternated, best of two each.
absl::StatusOr<StreamingFigures> StreamingAgainstPreloaded(
    const ModelFactory& make_model, const InputShard& shard,
    const std::shared_ptr<const RecordFormat>& format,
    const InputFormatOptions& format_options, int64_t steps) {
  // Read beforehand, as a job that holds its data in memory does; each
  // preloaded pipeline takes a copy, outside the timed steps.
  ASSIGN_OR_RETURN(std::vector<Example> examples,
                   ReadInputShard(shard, format_options));
  const PipelineFactory streamed = [&](InputPipeline::Options options) {
    return InputPipeline::Create(shard, format, std::move(options));
  };
  const PipelineFactory preloaded = [&](InputPipeline::Options options) {
    return InputPipeline::Create(examples, std::move(options));
  };
  StreamingFigures figures;
  for (int run = 0; run < 2; ++run) {
    ASSIGN_OR_RETURN(double s,
                     TrainingExamplesPerSec(make_model, streamed, steps));
    ASSIGN_OR_RETURN(double p,
                     TrainingExamplesPerSec(make_model, preloaded, steps));
    figures.streaming = std::max(figures.streaming, s);
    figures.preloaded = std::max(figures.preloaded, p);
  }
  return figures;
}

// The rows of (2) for `model`: the ratio, and the parse cost per example
// (one parse thread, no training) against the preloaded step's time per
// example, so that a ratio below the target can be read against what
// parsing takes of two cores.
void AddStreamingFigures(const std::string& model, const StreamingFigures& f,
                         double parse_examples_per_sec, BenchReport* report) {
  report->Add(absl::StrCat("input/streaming/", model, "/batch", kBatch),
              f.streaming, "examples/s", "preloaded_in_memory", f.preloaded);
  report->Add(absl::StrCat("input/streaming/", model, "/parse_cost"),
              1e6 / parse_examples_per_sec, "us/example",
              "preloaded_step_per_example", 1e6 / f.preloaded);
  if (f.streaming < 0.95 * f.preloaded) {
    report->Note(absl::StrFormat(
        "%s: streaming at %.2f of preloaded (target >= 0.95): parsing takes "
        "%.2f us of a core per example against a step of %.2f us per "
        "example, and on two cores the parse threads compete with the step "
        "for them",
        model, f.streaming / f.preloaded, 1e6 / parse_examples_per_sec,
        1e6 / f.preloaded));
  }
}

// ---- (3) memory ------------------------------------------------------------

// The line the worker prints once training is done, before it writes its
// metrics and exits (worker/final_metrics.cc).
constexpr absl::string_view kTrainedLine = "trained to global step ";

// VmHWM of /proc/<pid>/status ("VmHWM:\t  123456 kB"): the most memory
// the process ever had resident.
absl::StatusOr<int64_t> PeakRssBytes(int pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/status");
  // Not ReadFileToString: /proc files report a size of 0.
  std::ifstream file(path);
  if (!file) {
    return absl::UnavailableError(
        absl::StrCat("cannot read ", path, " (needs Linux's /proc)"));
  }
  std::string text;
  while (std::getline(file, text)) {
    absl::string_view line = text;
    if (!absl::ConsumePrefix(&line, "VmHWM:")) continue;
    line = absl::StripAsciiWhitespace(line);
    int64_t kib = 0;
    if (absl::ConsumeSuffix(&line, " kB") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib)) {
      return kib * 1024;
    }
  }
  return absl::InternalError(absl::StrCat(path, " has no VmHWM line"));
}

// Runs the worker alone (no TF_CONFIG) with `flags` to the end of its
// training and returns its peak RSS: stopped (SIGSTOP) when it prints
// kTrainedLine, its VmHWM is read, then it continues, writes its metrics
// and must exit 0. (Not wait4's ru_maxrss: a forked child's counts the
// pages it shared with this process, which holds far more than the worker,
// until its exec.) Killed after `timeout` (DEADLINE_EXCEEDED).
absl::StatusOr<int64_t> WorkerPeakRssBytes(const ProjectBinaries& binaries,
                                           std::vector<std::string> flags,
                                           absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  testing::SubprocessOptions options;
  options.argv = {binaries.worker};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  options.env["BUILD_WORKING_DIRECTORY"] = std::nullopt;
  options.env["TF_CONFIG"] = std::nullopt;
  options.timeout = timeout;
  ASSIGN_OR_RETURN(std::unique_ptr<testing::Subprocess> worker,
                   testing::Subprocess::Start(options));
  while (true) {
    absl::StatusOr<std::string> line =
        worker->ReadStdoutLine(deadline - absl::Now());
    if (!line.ok()) {
      absl::StatusOr<testing::SubprocessResult> ended =
          worker->Wait(absl::Seconds(10));
      return absl::InternalError(absl::StrCat(
          "the worker did not finish training: ", line.status().message(),
          ended.ok() ? absl::StrCat(" (exit ", ended->exit_code,
                                    "): ", Tail(ended->stderr_text))
                     : ""));
    }
    if (absl::StartsWith(*line, kTrainedLine)) break;
  }
  RETURN_IF_ERROR(worker->Stop());
  ASSIGN_OR_RETURN(int64_t peak, PeakRssBytes(worker->pid()));
  worker->Signal(SIGCONT);
  ASSIGN_OR_RETURN(
      testing::SubprocessResult result,
      worker->Wait(std::max(deadline - absl::Now(), absl::Seconds(10))));
  if (result.exit_code != 0) {
    return absl::InternalError(absl::StrCat("the worker failed (exit ",
                                            result.exit_code,
                                            "): ", Tail(result.stderr_text)));
  }
  return peak;
}

// Bytes free to this process on the file system of `path`.
absl::StatusOr<int64_t> FreeBytes(const std::string& path) {
  struct statvfs fs {};
  if (statvfs(path.c_str(), &fs) != 0) {
    return absl::InternalError(
        absl::StrCat("statvfs ", path, ": ", std::strerror(errno)));
  }
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

// (3) into `report`, in `dir` (removed afterwards).
absl::Status MemoryFigure(const BenchConfig& config,
                          const ProjectBinaries& binaries,
                          const std::string& dir, BenchReport* report) {
  const int64_t gb = config.quick ? 1 : 10;
  const int64_t target_bytes = gb * 1000 * 1000 * 1000;
  const std::string name =
      absl::StrCat("input/memory/worker_wide_deep/", gb, "GB");
  ASSIGN_OR_RETURN(int64_t free_bytes, FreeBytes(config.scratch_dir));
  if (free_bytes < 2 * target_bytes) {
    report->Note(absl::StrFormat(
        "%s skipped: %.1f GB free on the file system of %s, the figure needs "
        "twice the data's %d GB",
        name, free_bytes / 1e9, config.scratch_dir, gb));
    return absl::OkStatus();
  }
  // A small vocabulary and embedding width, so that the model's hash tables
  // stay a few MB whatever the rows: what grows with the data is then the
  // input pipeline's, if anything. Rows from the bytes a row takes.
  constexpr int64_t kVocab = 10000;
  constexpr int64_t kDim = 4;
  constexpr int kMemoryShards = 16;
  ASSIGN_OR_RETURN(
      CriteoDataSummary sample,
      WriteCriteo(JoinPath(dir, "sample"), 10000, 1, kVocab, kDim));
  RETURN_IF_ERROR(RemoveDirectoryTree(JoinPath(dir, "sample")));
  const int64_t rows = static_cast<int64_t>(std::ceil(
      static_cast<double>(target_bytes) * sample.train_rows / sample.bytes));
  const std::string data_dir = JoinPath(dir, "data");
  ASSIGN_OR_RETURN(CriteoDataSummary data,
                   WriteCriteo(data_dir, rows, kMemoryShards, kVocab, kDim));
  constexpr int kWorkerBatch = 4096;
  const std::string metrics = JoinPath(dir, "metrics.json");
  ASSIGN_OR_RETURN(
      int64_t peak_rss,
      WorkerPeakRssBytes(binaries,
                         {"--model=wide_deep", "--features=" + data.spec_file,
                          "--train_data=" + JoinPath(data_dir, "*.tfrecord"),
                          "--epochs=1", "--hidden_units=16", "--optimizer=sgd",
                          absl::StrCat("--global_batch_size=", kWorkerBatch),
                          "--log_every_secs=60", "--metrics_out=" + metrics},
                         kWorkerTimeout));
  // The data goes as soon as it is read (the caller removes it on errors).
  RETURN_IF_ERROR(RemoveDirectoryTree(data_dir));
  ASSIGN_OR_RETURN(JobMetrics job, ReadJobMetrics(metrics));
  const int64_t steps = (rows + kWorkerBatch - 1) / kWorkerBatch;
  if (job.global_step != steps) {
    return absl::InternalError(absl::StrCat("the worker's epoch over ", rows,
                                            " rows took ", job.global_step,
                                            " steps, not ", steps));
  }
  report->Add(name, static_cast<double>(peak_rss) / kMiB, "MiB", "data_size",
              static_cast<double>(data.bytes) / kMiB);
  report->Note(absl::StrFormat(
      "%s: one epoch, %d rows in %d files, %.0f examples/s; peak RSS / 1 GB "
      "= %.3f (target < 1)",
      name, rows, kMemoryShards, job.examples_per_sec, peak_rss / 1e9));
  return absl::OkStatus();
}

// ---- (4) against PyTorch ---------------------------------------------------

absl::StatusOr<double> PyTorchExamplesPerSec(
    const std::string& proto_dir, const std::vector<std::string>& files,
    int num_workers) {
  ASSIGN_OR_RETURN(testing::SubprocessResult result,
                   Run({kPython, kBaselineScript, "--proto_dir=" + proto_dir,
                        "--files=" + absl::StrJoin(files, ","),
                        absl::StrCat("--batch=", kBatch),
                        absl::StrCat("--num_workers=", num_workers)},
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

}  // namespace

absl::Status RunInputBench(const BenchConfig& config, BenchReport* report) {
  report->BeginFamily(
      "input: the streaming input pipeline (TFRecord, LIBSVM)",
      "examples/s: higher is better (parse: ratio = pipeline / reading the "
      "records with their CRCs; streaming: ratio = streaming / preloaded, "
      "target >= 0.95; vs_pytorch: ratio = ours (2 parse threads) / a "
      "PyTorch DataLoader); memory: ratio = the worker's peak RSS / the "
      "data's size; parse_cost: ratio = parsing's share of a step");
  ASSIGN_OR_RETURN(ProjectBinaries binaries, FindProjectBinaries(config));
  const std::string dir = JoinPath(config.scratch_dir, "input");
  RETURN_IF_ERROR(CreateDirectories(dir));
  absl::Status status = [&]() -> absl::Status {
    // (1) parse throughput, on the Criteo-shaped data.
    const int64_t rows = config.quick ? 160000 : 800000;
    ASSIGN_OR_RETURN(CriteoDataSummary criteo,
                     WriteCriteo(JoinPath(dir, "criteo"), rows, kShards,
                                 /*vocab=*/1000000, /*dim=*/16));
    ASSIGN_OR_RETURN(FeatureSpec spec_value, ReadFeatureSpec(criteo.spec_file));
    auto spec = std::make_shared<const FeatureSpec>(std::move(spec_value));
    InputFormatOptions tfrecord;
    tfrecord.format = InputFormat::kTfRecord;
    tfrecord.compression = TfRecordCompression::kNone;
    tfrecord.features = spec;
    ASSIGN_OR_RETURN(std::shared_ptr<const RecordFormat> tfrecord_format,
                     MakeRecordFormat(tfrecord));
    const std::vector<std::string>& files = criteo.train_files;
    RETURN_IF_ERROR(CrcReadRecordsPerSec(files).status());  // page cache
    ASSIGN_OR_RETURN(double crc_read,
                     BestOfTwo([&] { return CrcReadRecordsPerSec(files); }));
    double parse_one_thread = 0;
    for (int threads : {1, 2}) {
      ASSIGN_OR_RETURN(double rate, BestOfTwo([&] {
                         return PipelineExamplesPerSec(files, tfrecord_format,
                                                       threads);
                       }));
      if (threads == 1) parse_one_thread = rate;
      report->Add(
          absl::StrCat("input/parse/criteo_tfrecord/parse_threads", threads),
          rate, "examples/s", "crc_read_records", crc_read);
    }
    report->Note(absl::StrFormat(
        "parse: %d rows of 13 numeric and 26 categorical features in %d "
        "files, %.1f MiB, in the page cache; batch %d",
        rows, kShards, static_cast<double>(criteo.bytes) / kMiB, kBatch));

    // (2) streaming against preloaded: DLRM on the Criteo-shaped data.
    const std::string dlrm = JoinPath(dir, "dlrm.pt");
    RETURN_IF_ERROR(Run({kPython, kDlrmScript, "--num_dense=13",
                         "--num_tables=26", "--dim=16", "--out=" + dlrm},
                        absl::StrCat(kDlrmScript, " (Debian's python3-torch)"))
                        .status());
    const ModelFactory make_dlrm = [&]() {
      TorchScriptModelConfig model;
      model.path = dlrm;
      model.loss = TorchScriptLoss::kSigmoidCrossEntropy;
      model.groups = TorchScriptGroupsOf(*spec);
      model.num_dense = spec->num_dense();
      model.optimizer.kind = OptimizerKind::kAdagrad;
      model.optimizer.learning_rate = 0.05f;
      return LoadTorchScriptModel(model);
    };
    ASSIGN_OR_RETURN(InputShard criteo_shard, AllFiles(files));
    ASSIGN_OR_RETURN(
        StreamingFigures dlrm_figures,
        StreamingAgainstPreloaded(make_dlrm, criteo_shard, tfrecord_format,
                                  tfrecord, config.quick ? 80 : 300));
    AddStreamingFigures("dlrm", dlrm_figures, parse_one_thread, report);

    // logreg on LIBSVM ids: gen_data's default (linear) shape.
    const int64_t svm_rows = config.quick ? 100000 : 400000;
    RETURN_IF_ERROR(
        GenerateData(binaries,
                     {absl::StrCat("--rows=", svm_rows), "--eval_fraction=0",
                      "--seed=7", "--out_dir=" + dir, "--prefix=linear"},
                     kTimeout)
            .status());
    const std::string svm = JoinPath(dir, "linear.train.svm");
    InputFormatOptions libsvm;
    libsvm.format = InputFormat::kLibsvm;
    ASSIGN_OR_RETURN(std::shared_ptr<const RecordFormat> libsvm_format,
                     MakeRecordFormat(libsvm));
    const ModelFactory make_logreg = [&]() {
      ModelConfig model;
      model.name = "logreg";
      model.num_features = 1000;  // gen_data's default
      model.optimizer.learning_rate = 0.1f;
      return CreateModel(model);
    };
    ASSIGN_OR_RETURN(InputShard svm_shard, AllFiles({svm}));
    ASSIGN_OR_RETURN(double svm_parse, BestOfTwo([&] {
                       return PipelineExamplesPerSec({svm}, libsvm_format, 1);
                     }));
    ASSIGN_OR_RETURN(
        StreamingFigures logreg_figures,
        StreamingAgainstPreloaded(make_logreg, svm_shard, libsvm_format, libsvm,
                                  config.quick ? 1500 : 6000));
    AddStreamingFigures("logreg", logreg_figures, svm_parse, report);
    report->Note(
        "streaming: one CPU device in this process, 2 parse threads, "
        "shuffle buffer 10000 in both, best of two alternated runs each; "
        "parse_cost: 1 parse thread, no training");

    // (4) against PyTorch, on the first files of the same data.
    const std::string proto_dir = JoinPath(dir, "proto");
    RETURN_IF_ERROR(CreateDirectories(proto_dir));
    const std::string proto_path = kExampleProto;
    const size_t slash = proto_path.rfind('/');
    RETURN_IF_ERROR(
        Run({"/usr/bin/protoc", "--python_out=" + proto_dir,
             "-I" + proto_path.substr(0, slash), proto_path.substr(slash + 1)},
            "protoc --python_out")
            .status());
    const std::vector<std::string> torch_files(files.begin(),
                                               files.begin() + kPyTorchShards);
    ASSIGN_OR_RETURN(double ours, BestOfTwo([&] {
                       return PipelineExamplesPerSec(torch_files,
                                                     tfrecord_format, 2);
                     }));
    for (int workers : {0, 2}) {
      ASSIGN_OR_RETURN(double pytorch,
                       PyTorchExamplesPerSec(proto_dir, torch_files, workers));
      report->Add(absl::StrCat("input/vs_pytorch/num_workers", workers), ours,
                  "examples/s",
                  absl::StrCat("pytorch_dataloader_workers", workers), pytorch);
    }
    report->Note(absl::StrFormat(
        "vs_pytorch: %d files, %d rows; PyTorch parses with Python's "
        "protobuf (C++ backed) and does not check the records' CRCs",
        kPyTorchShards, rows * kPyTorchShards / kShards));

    // (3) memory, last: it holds the most bytes on disk.
    RETURN_IF_ERROR(RemoveDirectoryTree(JoinPath(dir, "criteo")));
    return MemoryFigure(config, binaries, JoinPath(dir, "memory"), report);
  }();
  // Every generated file goes, also after a failure.
  absl::Status removed = RemoveDirectoryTree(dir);
  RETURN_IF_ERROR(status);
  return removed;
}

}  // namespace distrt::bench
