// The end_to_end family: what a user of the whole system sees.
//
//  (a) examples/s of `logreg` trained on a large generated sparse data set
//      through `launch`, with 1 worker and 1 ps task and with 2 workers and
//      2 ps tasks, against the same model trained on the same data in one
//      worker process without ps tasks (launch --ps=0 --workers=1: the
//      mirrored strategy over that process's one CPU device); each
//      distributed shape again with the workers' --read_ahead, and again
//      with TF_CONFIG "rpc_layer": "grpc+tcp" (tensors over the ps tasks'
//      TCP data planes, rpc/data_plane_wire.h), and 1 worker + 1 ps task
//      over the data plane with the workers' --push_in_background.
//  (b) the per-step overhead of a 1 MiB model on a real ps_server process:
//      one PsClient Pull and one SGD Push of a float32[262144] variable,
//      against the same bytes as two bare gRPC calls (GrpcBaselineClient:
//      a pull answered with 1 MiB, a push carrying 1 MiB); the same step
//      again over the ps task's TCP data plane.

#include "bench/end_to_end_bench.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "bench/call_timer.h"
#include "bench/grpc_bytebuffer_baseline.h"
#include "bench/local_jobs.h"
#include "client/ps_client.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/initializer.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"
#include "tests/util/ps_processes.h"

namespace distrt::bench {
namespace {

// The data and the length of every training job of (a).
struct ThroughputSize {
  int64_t rows;  // all of them training rows (gen_data --eval_fraction=0)
  int64_t features;
  int64_t features_per_row;
  // The global step every job stops at: under parameter servers it counts
  // every worker's steps, so every job trains the same number of examples.
  int64_t train_steps;
  // Runs of every job shape, interleaved so that a burst of load from
  // elsewhere on the machine hits one run of each at most; the best run of
  // each shape is reported.
  int runs;
};

// About 12 s per job on a 2-core machine (3 s of it reading 350 MB of
// LIBSVM), 5 shapes x 2 runs: the family takes about 3 minutes.
constexpr ThroughputSize kFullSize = {1000000, 1000000, 30, 3000, 2};
// One job of each needed shape, about 4 s each.
constexpr ThroughputSize kQuickSize = {200000, 1000000, 30, 600, 1};

// As deploy/run_local.sh's job, doubled: a step of 256 sparse rows is long
// enough that the per-step RPCs do not hide the training itself.
constexpr int64_t kBatchSize = 256;

struct JobShape {
  const char* name;  // the figure's last part, or the baseline's name
  int num_ps;
  // Training tasks; worker 0 acts as the chief (launch adds no --chief).
  int num_workers;
  // The workers' --read_ahead: each step's reads during the step before.
  bool read_ahead = false;
  // launch --rpc_layer=grpc+tcp: tensors over the TCP data planes.
  bool tcp = false;
  // The workers' --push_in_background: each step's push travels while the
  // next step computes.
  bool push_in_background = false;
};

constexpr JobShape kOneProcess = {"one_process", 0, 1};
constexpr JobShape kOneWorkerOnePs = {"1w_1ps", 1, 1};
constexpr JobShape kTwoWorkersTwoPs = {"2w_2ps", 2, 2};
constexpr JobShape kOneWorkerOnePsReadAhead = {"1w_1ps_read_ahead", 1, 1, true};
constexpr JobShape kTwoWorkersTwoPsReadAhead = {"2w_2ps_read_ahead", 2, 2,
                                                true};
constexpr JobShape kOneWorkerOnePsTcp = {"1w_1ps_tcp", 1, 1, false, true};
constexpr JobShape kOneWorkerOnePsTcpReadAhead = {"1w_1ps_tcp_read_ahead", 1, 1,
                                                  true, true};
constexpr JobShape kTwoWorkersTwoPsTcp = {"2w_2ps_tcp", 2, 2, false, true};
constexpr JobShape kOneWorkerOnePsTcpBackground = {
    "1w_1ps_tcp_push_in_background", 1, 1, false, true, true};

// A job is killed (with its tasks) when it takes longer than this.
constexpr absl::Duration kJobTimeout = absl::Minutes(4);

// (b): 262144 float32 elements, 1 MiB.
constexpr int64_t kStepModelFloats = int64_t{1} << 18;
constexpr int64_t kStepModelBytes = kStepModelFloats * sizeof(float);

// How (b) times its steps: about a second of them after a short warm-up
// (connections, the server's first allocations); the cap only bounds the
// loop, a step takes far longer than 1 s / 100000.
TimingOptions StepTiming() {
  TimingOptions options;
  options.warmup_calls = 10;
  options.min_time = absl::Seconds(1);
  options.max_calls = 100000;
  options.min_calls = 10;
  return options;
}

// Runs one training job of `shape` on `train_file` and returns the
// examples/s of the whole job: global step x batch size / the chief's
// training seconds. The chief's own examples_per_sec in metrics.json counts
// only the examples it trained, but under parameter servers the global step
// counts every worker's steps (each of kBatchSize examples), and every
// worker stops when it reaches --train_steps, so together they give the
// job's rate. For one process the two are the same figure.
absl::StatusOr<double> JobExamplesPerSec(const ProjectBinaries& binaries,
                                         const JobShape& shape,
                                         const ThroughputSize& size,
                                         const std::string& train_file,
                                         const std::string& job_dir) {
  std::vector<std::string> launch_flags = {
      absl::StrCat("--ps=", shape.num_ps),
      absl::StrCat("--workers=", shape.num_workers),
      "--job_dir=" + job_dir,
      "--stop_secs=5",
  };
  if (shape.tcp) launch_flags.push_back("--rpc_layer=grpc+tcp");
  std::vector<std::string> task_flags = {
      "--model=logreg",
      "--train_data=" + train_file,
      // Given, so that no task first scans all of the data to count them.
      absl::StrCat("--num_features=", size.features),
      absl::StrCat("--train_steps=", size.train_steps),
      absl::StrCat("--global_batch_size=", kBatchSize),
      "--log_every_secs=30",
      "--wait_secs=120",
  };
  if (shape.read_ahead) task_flags.push_back("--read_ahead");
  if (shape.push_in_background) task_flags.push_back("--push_in_background");
  RETURN_IF_ERROR(RunLaunch(
      LaunchCommand(binaries, launch_flags, task_flags, kJobTimeout)));
  ASSIGN_OR_RETURN(JobMetrics metrics,
                   ReadJobMetrics(JoinPath(job_dir, "metrics.json")));
  if (metrics.wall_secs <= 0 || metrics.global_step < size.train_steps) {
    return absl::InternalError(
        absl::StrCat("the ", shape.name, " job in ", job_dir,
                     " reports global step ", metrics.global_step, " of ",
                     size.train_steps, " in ", metrics.wall_secs, " s"));
  }
  // Checkpoints (8 MB each) are not needed once the figure is read.
  RETURN_IF_ERROR(RemoveDirectoryTree(job_dir));
  return static_cast<double>(metrics.global_step) * kBatchSize /
         metrics.wall_secs;
}

// (a): the best run of every shape, then a row per distributed shape.
absl::Status RunThroughputCases(const BenchConfig& config,
                                const ProjectBinaries& binaries,
                                BenchReport* report) {
  const ThroughputSize& size = config.quick ? kQuickSize : kFullSize;
  const std::string dir = JoinPath(config.scratch_dir, "end_to_end");
  RETURN_IF_ERROR(
      (GenerateData(binaries,
                    {"--task=binary", absl::StrCat("--rows=", size.rows),
                     absl::StrCat("--features=", size.features),
                     absl::StrCat("--features_per_row=", size.features_per_row),
                     "--eval_fraction=0", "--seed=7", "--out_dir=" + dir,
                     "--prefix=e2e"},
                    absl::Minutes(2)))
          .status());
  const std::string train_file = JoinPath(dir, "e2e.train.svm");

  std::vector<JobShape> shapes = {kOneProcess, kOneWorkerOnePs,
                                  kOneWorkerOnePsReadAhead, kOneWorkerOnePsTcp};
  if (!config.quick) {
    shapes.push_back(kOneWorkerOnePsTcpReadAhead);
    shapes.push_back(kOneWorkerOnePsTcpBackground);
    shapes.push_back(kTwoWorkersTwoPs);
    shapes.push_back(kTwoWorkersTwoPsReadAhead);
    shapes.push_back(kTwoWorkersTwoPsTcp);
  }
  std::vector<double> best(shapes.size(), 0);
  for (int run = 0; run < size.runs; ++run) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      ASSIGN_OR_RETURN(
          double rate,
          JobExamplesPerSec(
              binaries, shapes[i], size, train_file,
              JoinPath(dir, absl::StrCat("job-", shapes[i].name, "-", run))));
      best[i] = std::max(best[i], rate);
    }
  }
  for (size_t i = 1; i < shapes.size(); ++i) {
    report->Add(absl::StrCat("end_to_end/logreg/", shapes[i].name), best[i],
                "examples/s", kOneProcess.name, best[0]);
  }
  report->Note(absl::StrFormat(
      "logreg on %d rows x %d features (%d per row), batch %d, %d global "
      "steps per job, best of %d run(s); examples/s = global step x batch / "
      "the chief's training seconds, from each job's metrics.json (the "
      "chief's own examples_per_sec counts only its examples); one_process "
      "is launch --ps=0 --workers=1; *_read_ahead jobs run the workers with "
      "--read_ahead, *_push_in_background ones with --push_in_background, "
      "*_tcp jobs are launched with --rpc_layer=grpc+tcp",
      size.rows, size.features, size.features_per_row, kBatchSize,
      size.train_steps, size.runs));
  if (config.quick) report->Note("--quick: 2w_2ps jobs skipped");
  // 450 MB in the full run; the other families need not share the disk.
  return RemoveDirectoryTree(dir);
}

absl::StatusOr<absl::Duration> PsClientStepP50(bool tcp) {
  // From ps_server/ps_server in the working directory: the runfiles tree
  // under `bazel run`, where binaries_dir points too.
  ASSIGN_OR_RETURN(testing::PsProcess ps,
                   testing::StartPsProcess(0, 1, {}, tcp ? "grpc+tcp" : ""));
  PsClient::Options options;
  options.data_plane = tcp;
  options.rpc_timeout = absl::Seconds(30);
  options.log = [](absl::string_view) {};  // nothing to say in a table
  ASSIGN_OR_RETURN(
      std::unique_ptr<PsClient> client,
      PsClient::Create(std::vector<std::string>{ps.address()}, options));
  RETURN_IF_ERROR(client->WaitForServers(absl::Seconds(30)));
  VariableSpec spec;
  spec.name = "bench/step_overhead";
  spec.shape = {kStepModelFloats};
  spec.initializer.kind = InitializerSpec::Kind::kZeros;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 0.01f;
  ASSIGN_OR_RETURN(VariablePlacement variable, client->CreateVariable(spec));

  std::vector<float> values(kStepModelFloats);
  const std::vector<float> gradient(kStepModelFloats, 1e-3f);
  absl::StatusOr<CallTimes> times =
      TimeCalls(StepTiming(), [&](int64_t) -> absl::Status {
        RETURN_IF_ERROR(client->Pull(variable, absl::MakeSpan(values)));
        return client->Push(variable, gradient);
      });
  // The ps task exits when asked; if it does not, PsProcess kills it.
  const absl::Status shutdown = client->Shutdown("benchmark finished");
  if (shutdown.ok()) {
    (void)ps.process->Wait(absl::Seconds(10));
  }
  RETURN_IF_ERROR(times.status());
  return times->P50();
}

absl::StatusOr<absl::Duration> BareGrpcStepP50() {
  GrpcBaselineServer::Options server_options;
  server_options.max_pull_bytes = kStepModelBytes;
  ASSIGN_OR_RETURN(std::unique_ptr<GrpcBaselineServer> server,
                   GrpcBaselineServer::Start(server_options));
  std::unique_ptr<GrpcBaselineClient> client = GrpcBaselineClient::Create(
      server->address(), GrpcBaselineClient::Options());
  std::vector<char> pulled(kStepModelBytes);
  const std::vector<char> pushed(kStepModelBytes, 1);
  absl::StatusOr<CallTimes> times =
      TimeCalls(StepTiming(), [&](int64_t) -> absl::Status {
        RETURN_IF_ERROR(client->Pull(absl::MakeSpan(pulled)));
        return client->Push(pushed);
      });
  RETURN_IF_ERROR(times.status());
  return times->P50();
}

// (b).
absl::Status RunStepOverheadCase(BenchReport* report) {
  ASSIGN_OR_RETURN(absl::Duration bare, BareGrpcStepP50());
  ASSIGN_OR_RETURN(absl::Duration ps, PsClientStepP50(/*tcp=*/false));
  ASSIGN_OR_RETURN(absl::Duration tcp, PsClientStepP50(/*tcp=*/true));
  report->Add("end_to_end/step_overhead/1MB", absl::ToDoubleMicroseconds(ps),
              "us", "grpc_bytebuffer", absl::ToDoubleMicroseconds(bare));
  report->Add("end_to_end/step_overhead/1MB_tcp",
              absl::ToDoubleMicroseconds(tcp), "us", "grpc_bytebuffer",
              absl::ToDoubleMicroseconds(bare));
  report->Note(
      "step_overhead: p50 over ~1 s of steps of one PsClient Pull + one SGD "
      "Push of a float32[262144] variable on 1 ps_server process, against "
      "one 1 MiB pull + one 1 MiB push of bare gRPC (generic ByteBuffer "
      "calls to a server inside the bench process), both over 127.0.0.1; "
      "1MB_tcp: the same step over the ps task's TCP data plane");
  return absl::OkStatus();
}

}  // namespace

absl::Status RunEndToEndBench(const BenchConfig& config, BenchReport* report) {
  report->BeginFamily(
      "end_to_end: logreg through launch, and a 1 MiB model's step overhead",
      "examples/s: higher is better (ratio > 1: faster than one process); "
      "step_overhead us: lower is better (ratio: times two bare gRPC calls)");
  ASSIGN_OR_RETURN(ProjectBinaries binaries, FindProjectBinaries(config));
  // Each part reports what it measured even when the other fails; the
  // error names every part that failed, with the first one's code.
  absl::Status failed;
  std::vector<std::string> failures;
  if (absl::Status s = RunThroughputCases(config, binaries, report); !s.ok()) {
    failed.Update(s);
    failures.push_back(absl::StrCat("examples/s: ", s.message()));
  }
  if (absl::Status s = RunStepOverheadCase(report); !s.ok()) {
    failed.Update(s);
    failures.push_back(absl::StrCat("step_overhead: ", s.message()));
  }
  if (failed.ok()) return failed;
  return absl::Status(failed.code(), absl::StrJoin(failures, "; "));
}

}  // namespace distrt::bench
