#include "worker/training_job.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/ps_client.h"
#include "job/checkpoint_manager.h"
#include "job/job_variables.h"
#include "job/make_strategy.h"
#include "job/ps_coordination.h"
#include "job/resolved_task.h"
#include "job/worker_group.h"
#include "runtime/cluster/cluster_source.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/distribute/distributed_dataset.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_files.h"
#include "runtime/input/input_pipeline.h"
#include "runtime/input/record_reader.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/summary/event_file_writer.h"
#include "runtime/training/model_state.h"
#include "runtime/training/model_variables.h"
#include "runtime/training/training_loop.h"
#include "runtime/util/format_bytes.h"
#include "runtime/util/status_macros.h"
#include "worker/evaluation.h"
#include "worker/input_resume.h"
#include "worker/job_model.h"
#include "worker/training_metrics.h"

namespace distrt {
namespace {

absl::Duration Secs(double seconds) { return absl::Seconds(seconds); }

struct Job {
  const WorkerOptions& options;
  const LogFn& log;
  // What this task is; its strategy kind is set (a training task).
  const ResolvedTask& task;
  // From `task`: whether the cluster has ps tasks, and this task's input
  // pipeline among the training tasks'.
  bool has_ps = false;
  int num_pipelines = 1;
  int pipeline_id = 0;
  LocalDevices devices;
  std::unique_ptr<PsClient> client;
  // Multi-worker mirrored only; declared before the strategy, which uses
  // its connections, so that it outlives it.
  std::unique_ptr<WorkerGroup> workers;
  std::unique_ptr<Strategy> strategy;
  std::shared_ptr<Model> model;
  // --train_data and how it is read (JobModel).
  std::vector<std::string> train_files;
  std::shared_ptr<const RecordFormat> records;
  // The variables and, the chief's with --checkpoint_dir, the checkpoints;
  // `variables` and `checkpoints` (null: none) point into it.
  std::unique_ptr<JobVariables> job_variables;
  ModelVariables* variables = nullptr;
  CheckpointManager* checkpoints = nullptr;
  // The chief's TensorBoard summaries; null without --log_dir.
  std::unique_ptr<EventFileWriter> summaries;
  // The chief's view of each ps task's incarnation (GetStatus), to notice
  // a task that restarted.
  std::vector<uint64_t> ps_incarnations;
};

absl::Status WriteSummaries(
    Job& job, int64_t step,
    const std::vector<std::pair<std::string, double>>& scalars) {
  if (job.summaries == nullptr) return absl::OkStatus();
  return job.summaries->WriteScalars(step, scalars);
}

bool IsMultiWorker(const Job& job) { return job.workers != nullptr; }

// A failed step of a multi-worker job, with which task was lost.
absl::Status StepFailed(Job& job, const absl::Status& failure) {
  if (!IsMultiWorker(job)) return failure;
  return job.workers->ExplainFailure(failure);
}

// Multi-worker mirrored: the global batch must split evenly over every
// replica of every worker. Checked by every task alike before it joins the
// others (replica counts are checked equal after), so that all refuse the
// same flags instead of some failing while others wait for them.
absl::Status CheckMultiWorkerBatch(const Job& job, int replicas) {
  const int64_t all = int64_t{job.num_pipelines} * replicas;
  const int64_t batch = job.options.global_batch_size;
  if (batch % all == 0) return absl::OkStatus();
  const int64_t lower = std::max(all, batch / all * all);
  return absl::InvalidArgumentError(
      absl::StrCat("--global_batch_size=", batch,
                   " does not split evenly over ", job.num_pipelines,
                   " workers x ", replicas, " replicas; use a multiple of ",
                   all, " (e.g. ", lower, " or ", lower + all, ")"));
}

// The strategy the flags ask for, made by the library's factory
// (job/make_strategy.h) on this task's devices.
absl::Status SetUpStrategy(Job& job) {
  const WorkerOptions& o = job.options;
  const StrategyKind kind = *job.task.strategy;
  ASSIGN_OR_RETURN(LocalDevices devices, CreateTaskDevices(o));
  job.devices = std::move(devices);
  job.log(absl::StrCat("devices: ", job.devices.description));
  const std::vector<Device*> pointers = job.devices.pointers();

  MakeStrategyOptions options;
  options.kind = kind;
  options.strategy.cross_device_ops = o.cross_device_ops;
  options.strategy.push_in_background = o.push_in_background;
  options.ps.log = job.log;
  options.ps.security = o.security;
  options.ps.ps_failure_timeout = Secs(o.ps_failure_timeout_secs);
  options.wait_for_servers = Secs(o.wait_secs);
  options.workers.bind_host = o.bind_host;
  options.workers.security = o.security;
  options.workers.join_timeout = Secs(o.wait_secs);
  options.workers.collective_timeout = Secs(o.collective_timeout_secs);
  options.all_reduce_bucket_bytes = o.all_reduce_bucket_bytes;
  options.log = job.log;
  if (kind == StrategyKind::kMultiWorkerMirrored) {
    RETURN_IF_ERROR(
        CheckMultiWorkerBatch(job, static_cast<int>(pointers.size())));
    // Local replicas wait for replica 0 while it waits for the other
    // workers: their bound must not end before its.
    options.strategy.collective_timeout =
        2 * Secs(o.collective_timeout_secs) + absl::Minutes(1);
  }
  ASSIGN_OR_RETURN(ResolvedStrategy resolved,
                   MakeStrategy(job.task, pointers, options));
  job.client = std::move(resolved.ps_client);
  job.workers = std::move(resolved.workers);
  job.strategy = std::move(resolved.strategy);
  return absl::OkStatus();
}

// The chief's handshake with the other workers through the ps tasks.
PsCoordination::Options CoordinationOptions(const Job& job) {
  PsCoordination::Options options;
  options.wait = Secs(job.options.wait_secs);
  options.wait_flag = "--wait_secs";
  options.log = job.log;
  return options;
}

PsCoordination Coordination(const Job& job) {
  return PsCoordination(job.client.get(), CoordinationOptions(job));
}

// Multi-worker mirrored: every worker's mirrors start from the chief's
// variables (restored, or initialised), as TF broadcasts them.
absl::Status BroadcastFromChief(Job& job) {
  if (absl::Status s = BroadcastModelState(job.workers->collective(),
                                           *job.variables, /*root=*/0);
      !s.ok()) {
    return StepFailed(job, s);
  }
  if (!job.strategy->should_init()) {
    job.log("variables received from the chief");
  }
  return absl::OkStatus();
}

// The library's set-up (job/job_variables.h), then, on the chief of
// a job with ps tasks, each task's incarnation, to notice restarts.
absl::Status SetUpVariables(Job& job) {
  JobVariablesOptions options;
  options.ps = job.has_ps ? job.client.get() : nullptr;
  options.checkpoint_dir = job.options.checkpoint_dir;
  options.max_to_keep = job.options.keep_checkpoints;
  options.full_checkpoint_every = job.options.full_checkpoint_every;
  options.delta_max_share = job.options.delta_checkpoint_max_share;
  options.coordination = CoordinationOptions(job);
  options.log = job.log;
  ASSIGN_OR_RETURN(job.job_variables,
                   SetUpJobVariables(*job.strategy, *job.model, options));
  job.variables = &job.job_variables->variables;
  if (job.job_variables->checkpoints.has_value()) {
    job.checkpoints = &*job.job_variables->checkpoints;
  }
  if (job.has_ps && job.strategy->should_init()) {
    ASSIGN_OR_RETURN(std::vector<ps::GetStatusResponse> stats,
                     job.client->Stats());
    for (const ps::GetStatusResponse& task : stats) {
      job.ps_incarnations.push_back(task.incarnation());
    }
  }
  return absl::OkStatus();
}

// The chief, now and then: says which ps tasks restarted since it last
// looked. Each took back its shard of the latest checkpoint when it started
// (ps_server --checkpoint_dir, which launch sets) and the workers' requests
// reached it again once it answered; this tells the user it happened.
absl::Status NoticeRestartedPsTasks(Job& job) {
  if (!job.strategy->should_init() || !job.has_ps) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<ps::GetStatusResponse> stats,
                   job.client->Stats());
  for (size_t i = 0; i < stats.size() && i < job.ps_incarnations.size(); ++i) {
    const uint64_t now = (stats)[i].incarnation();
    if (now == job.ps_incarnations[i]) continue;
    job.log(absl::StrFormat(
        "ps task %d (%s) restarted (incarnation %016x, was %016x): it holds "
        "%d variable parts and %d hash-table rows, from the latest "
        "checkpoint; updates since then to its part of the model are lost",
        i, job.client->address(i), now, job.ps_incarnations[i],
        (stats)[i].num_variables(), (stats)[i].hash_table_rows()));
    job.ps_incarnations[i] = now;
    if (job.options.metrics != nullptr) job.options.metrics->AddPsRestart();
  }
  return absl::OkStatus();
}

// The examples this worker's shard holds: one pass over its records
// without parsing them (bad ones count, which --input_errors=skip may then
// drop).
absl::StatusOr<int64_t> CountShardExamples(Job& job,
                                           const InputContext& context,
                                           AutoShardPolicy policy) {
  ASSIGN_OR_RETURN(InputShard shard,
                   ShardInput(job.train_files, context, policy));
  int64_t kept = 0;
  std::string record;
  for (const std::string& file : shard.files) {
    ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader,
                     job.records->Open(file, RecordPosition{}));
    while (true) {
      const int64_t index = reader->position().index;
      absl::StatusOr<bool> more = reader->Next(&record);
      // A damaged file's rest is what --input_errors=skip skips.
      if (absl::IsDataLoss(more.status()) &&
          job.options.input_errors == "skip") {
        break;
      }
      RETURN_IF_ERROR(more.status());
      if (!*more) break;
      if (shard.Keeps(index)) ++kept;
    }
  }
  return kept;
}

// Multi-worker mirrored with --epochs: every step is a collective of all
// workers, so all must run the same number. Each counts the examples of its
// shard (a streaming pipeline learns an epoch's length only at its end),
// and all take the fewest steps (counted from global step 0) any worker's
// data allows.
absl::StatusOr<int64_t> AgreeOnStepLimit(Job& job, const InputContext& context,
                                         AutoShardPolicy policy,
                                         int64_t examples_per_step) {
  constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
  const int64_t epochs = job.options.epochs;
  job.log(
      "counting this worker's examples, so that every worker runs as many "
      "steps (--train_steps instead of --epochs skips this)");
  ASSIGN_OR_RETURN(const int64_t examples,
                   CountShardExamples(job, context, policy));
  const int64_t per_epoch =
      (examples + examples_per_step - 1) / examples_per_step;
  const int64_t mine =
      per_epoch <= kNoLimit / epochs ? per_epoch * epochs : kNoLimit;
  absl::StatusOr<std::vector<int64_t>> all =
      job.workers->collective().AllGather(absl::MakeConstSpan(&mine, 1));
  if (!all.ok()) return StepFailed(job, all.status());
  const int64_t fewest = *std::min_element(all->begin(), all->end());
  if (fewest < mine) {
    job.log(absl::StrCat("another worker's data lasts ", fewest,
                         " steps, this one's ", mine,
                         ": every worker stops after ", fewest));
  }
  return fewest;
}

// The input pipeline's options from the flags.
absl::StatusOr<DistributeFilesOptions> InputOptions(const Job& job) {
  const WorkerOptions& o = job.options;
  DistributeFilesOptions input;
  ASSIGN_OR_RETURN(input.auto_shard, ParseAutoShardPolicy(o.auto_shard_policy));
  InputPipeline::Options& p = input.pipeline;
  p.num_epochs = o.epochs;
  p.shuffle = o.shuffle;
  p.seed = o.seed + job.pipeline_id;
  p.shuffle_buffer = o.shuffle_buffer;
  p.cycle_length = o.cycle_length;
  p.block_length = o.block_length;
  p.parse_threads =
      o.parse_threads > 0
          ? o.parse_threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  p.input_errors = o.input_errors == "skip" ? InputErrorPolicy::kSkip
                                            : InputErrorPolicy::kFail;
  p.max_bad_fraction = o.max_bad_record_fraction;
  p.log = job.log;
  return input;
}

// This task's input pipeline over its shard of --train_data; where
// --checkpoint_dir keeps this task's input positions, continuing from the
// one the job's global step left (InputResume).
absl::StatusOr<std::unique_ptr<InputPipeline>> StartInput(
    Job& job, DistributeFilesOptions input, InputResume* resume,
    int64_t global_step) {
  std::optional<InputPosition> position;
  if (resume != nullptr) {
    ASSIGN_OR_RETURN(position, resume->ResumeAt(global_step));
  }
  if (position.has_value()) {
    input.resume = &*position;
    job.log(absl::StrCat("input: resuming in epoch ", position->epoch + 1,
                         " at step ", position->step_in_epoch + 1,
                         " of it, where this task's steps up to the job's "
                         "global step left it (",
                         resume->path(), ")"));
  }
  absl::StatusOr<std::unique_ptr<InputPipeline>> pipeline =
      DistributeFiles(*job.strategy, job.train_files, job.records,
                      job.options.global_batch_size, input);
  if (position.has_value() && !pipeline.ok()) {
    // Other files, shards or interleave than the logged position's, or
    // files changed under the same names (the position no longer fits):
    // starting over is right, failing every restart alike is not.
    job.log(absl::StrCat("input: not resuming: ", pipeline.status().message(),
                         "; starting at the input's beginning"));
    input.resume = nullptr;
    pipeline = DistributeFiles(*job.strategy, job.train_files, job.records,
                               job.options.global_batch_size, input);
  }
  return pipeline;
}

// The loop's settings and callbacks: checkpoints (the chief's), progress
// lines with the input's bad records, summaries, metrics, and logging the
// input's position after each step for a restart (`resume`, may be null).
void SetUpLoop(Job& job, InputPipeline& pipeline, InputResume* resume,
               TrainingLoopOptions* loop_options) {
  TrainingLoopOptions& loop = *loop_options;
  loop.log_every = Secs(job.options.log_every_secs);
  loop.read_ahead = job.options.read_ahead;
  // Periodic checkpoints; the final one comes after the other workers are
  // done (SaveFinalCheckpoint).
  if (job.checkpoints != nullptr) {
    loop.checkpoint_every_steps = job.options.checkpoint_every_steps;
    loop.checkpoint_every = Secs(job.options.checkpoint_every_secs);
    loop.save_checkpoint = [&job](int64_t step) -> absl::Status {
      ASSIGN_OR_RETURN(const CheckpointManager::Saved saved,
                       job.checkpoints->Save(step));
      // Which kind it was: a delta, or a full save (--full_checkpoint_every).
      job.log(absl::StrCat("checkpoint ", saved.checkpoint, " saved (",
                           saved.delta ? "delta" : "full", ", ",
                           FormatBytes(saved.bytes), ")"));
      return absl::OkStatus();
    };
  }
  loop.log = job.log;
  loop.on_progress = [&job, pipeline = &pipeline,
                      skipped_reported = int64_t{0}](
                         int64_t global_step, const ProgressMeter& meter,
                         absl::Time now) mutable -> absl::Status {
    RETURN_IF_ERROR(NoticeRestartedPsTasks(job));
    const int64_t skipped = pipeline->records_skipped();
    if (skipped != skipped_reported) {
      job.log(absl::StrCat("input: ", skipped, " bad record(s) skipped of ",
                           pipeline->records_read(), " read"));
      skipped_reported = skipped;
    }
    return WriteSummaries(job, global_step,
                          {{"loss", meter.recent_loss()},
                           {"examples_per_sec", meter.ExamplesPerSecond(now)},
                           {"learning_rate", job.options.learning_rate}});
  };
  if (job.options.metrics != nullptr) {
    loop.on_step = [&job, pipeline = &pipeline](const StepResult& step,
                                                int64_t global_step) {
      job.options.metrics->AddStep(step.examples, global_step);
      job.options.metrics->SetInputRecords(pipeline->records_read(),
                                           pipeline->records_skipped());
    };
  }
  if (resume != nullptr) {
    loop.on_input_position = [resume](const InputPosition& after,
                                      int64_t global_step) {
      return resume->Record(after, global_step);
    };
  }
  loop.explain_step_failure = [&job](const absl::Status& failure) {
    return StepFailed(job, failure);
  };
}

// The most steps this process runs: under multi-worker mirrored with
// --epochs, what the workers agreed on less the steps the job already ran
// (a restarted job, whose input resumes where it was); its input then
// repeats forever so that no worker runs out of data before the others
// (which would leave them waiting in a collective). No limit otherwise.
absl::StatusOr<int64_t> StepLimit(Job& job, int64_t start_step,
                                  DistributeFilesOptions* input) {
  if (!IsMultiWorker(job) || job.options.epochs == 0) {
    return std::numeric_limits<int64_t>::max();
  }
  const InputContext context = job.strategy->input_context();
  ASSIGN_OR_RETURN(
      const int64_t per_replica,
      context.GetPerReplicaBatchSize(job.options.global_batch_size));
  ASSIGN_OR_RETURN(
      const int64_t total,
      AgreeOnStepLimit(job, context, input->auto_shard,
                       per_replica * job.strategy->num_local_replicas()));
  input->pipeline.num_epochs = 0;
  return std::max<int64_t>(0, total - start_step);
}

absl::Status Train(Job& job, FinalMetrics* metrics) {
  const WorkerOptions& o = job.options;
  ASSIGN_OR_RETURN(DistributeFilesOptions input, InputOptions(job));
  ASSIGN_OR_RETURN(const int64_t start_step,
                   job.variables->ReadGlobalStep(*job.strategy));
  TrainingLoopOptions loop;
  loop.train_steps = o.train_steps;
  ASSIGN_OR_RETURN(loop.max_steps, StepLimit(job, start_step, &input));
  std::unique_ptr<InputResume> resume;
  if (!o.checkpoint_dir.empty()) {
    ASSIGN_OR_RETURN(resume,
                     InputResume::Open(o.checkpoint_dir, job.pipeline_id));
  }
  absl::StatusOr<std::unique_ptr<InputPipeline>> distributed =
      StartInput(job, std::move(input), resume.get(), start_step);
  if (!distributed.ok()) {
    return absl::Status(
        distributed.status().code(),
        absl::StrCat("--train_data: ", distributed.status().message()));
  }
  std::unique_ptr<InputPipeline> pipeline = *std::move(distributed);

  SetUpLoop(job, *pipeline, resume.get(), &loop);
  ASSIGN_OR_RETURN(TrainingLoopResult result,
                   RunTrainingLoop(*job.strategy, *job.model, *job.variables,
                                   *pipeline, loop));
  if (pipeline->records_skipped() > 0) {
    job.log(absl::StrCat("input: ", pipeline->records_skipped(),
                         " bad record(s) skipped of ", pipeline->records_read(),
                         " read"));
  }
  if (o.read_ahead) {
    const int replicas = job.strategy->num_local_replicas();
    job.log(absl::StrCat("read-ahead: ", result.steps_read_ahead, " of ",
                         result.steps * replicas, " replica steps (",
                         result.steps, " steps x ", replicas,
                         " replicas) computed with values read during the step "
                         "before (",
                         result.reads_ahead_dropped, " reads dropped)"));
  }
  metrics->global_step = result.global_step;
  metrics->train_loss = result.train_loss;
  metrics->examples_per_sec = result.examples_per_sec;
  metrics->wall_secs = result.wall_secs;
  return absl::OkStatus();
}

// The chief's last checkpoint, of everything every worker pushed, then the
// marker that tells evaluators no more will come.
absl::Status SaveFinalCheckpoint(Job& job, FinalMetrics* metrics) {
  ASSIGN_OR_RETURN(int64_t global_step,
                   job.variables->ReadGlobalStep(*job.strategy));
  metrics->global_step = global_step;
  ASSIGN_OR_RETURN(const std::string final_checkpoint,
                   job.checkpoints->SaveFinal(global_step));
  job.log(absl::StrCat("final checkpoint ", final_checkpoint, " saved"));
  return absl::OkStatus();
}

absl::Status EvaluateAtEnd(Job& job, const EvalData& data,
                           FinalMetrics* metrics) {
  ASSIGN_OR_RETURN(Evaluation evaluation,
                   Evaluate(*job.strategy, *job.model, *job.variables, data,
                            job.options.global_batch_size, metrics));
  job.log(absl::StrCat("evaluated ", evaluation.examples,
                       " examples: ", evaluation.description));
  return WriteSummaries(job, metrics->global_step, EvalScalars(*metrics));
}

// The chief waits (bounded) for every other worker to count itself done.
absl::Status WaitForOtherWorkers(Job& job) {
  absl::Status all_done = Coordination(job).WaitForWorkersToFinish(
      job.num_pipelines - 1, job.options.train_steps,
      [&job] { return job.variables->ReadGlobalStep(*job.strategy); });
  if (all_done.ok()) return all_done;
  return absl::Status(
      all_done.code(),
      absl::StrCat(all_done.message(), "; not stopping the ps tasks"));
}

// Checks that `job.task` is a training task with a strategy kind, and takes
// its place among the training tasks from it.
absl::Status TakeTrainingTask(Job& job) {
  if (!job.task.is_training_task()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG's task is ", job.task.type(), " ", job.task.index(),
        "; training runs on chief and worker tasks (ps tasks run "
        "ps_server)"));
  }
  if (!job.task.strategy.has_value()) {
    return absl::InvalidArgumentError(
        "the task has no strategy kind: resolve it with ResolveTask");
  }
  job.has_ps = job.task.has_ps();
  job.num_pipelines = job.task.num_training_tasks();
  job.pipeline_id = job.task.role.id_in_cluster.value_or(0);
  return absl::OkStatus();
}

// The strategy, the variables (the chief's, in a multi-worker job) and, on
// the task that writes them, the summaries.
absl::Status SetUp(Job& job) {
  RETURN_IF_ERROR(SetUpStrategy(job));
  RETURN_IF_ERROR(SetUpVariables(job));
  if (IsMultiWorker(job)) {
    RETURN_IF_ERROR(BroadcastFromChief(job));
  }
  if (job.strategy->should_save_summary() && !job.options.log_dir.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<EventFileWriter> writer,
                     EventFileWriter::Create(job.options.log_dir, "chief"));
    job.summaries = std::move(writer);
    job.log(absl::StrCat("summaries: ", job.summaries->path()));
  }
  return absl::OkStatus();
}

// After the last step, in order: the workers say they are done and wait for
// each other, the chief saves the last checkpoint, evaluates
// `eval_examples` and stops the ps tasks.
absl::Status FinishJob(Job& job, const EvalData& eval_data,
                       FinalMetrics* metrics) {
  if (job.has_ps && !job.strategy->should_init()) {
    RETURN_IF_ERROR(Coordination(job).ReportWorkerDone());
  }
  if (IsMultiWorker(job)) {
    // Nobody closes its connections while another still reads the last
    // step's data.
    if (absl::Status s = job.workers->collective().Barrier(); !s.ok()) {
      return StepFailed(job, s);
    }
  }
  if (job.has_ps && job.strategy->should_init()) {
    RETURN_IF_ERROR(WaitForOtherWorkers(job));
  }
  if (job.checkpoints != nullptr) {
    RETURN_IF_ERROR(SaveFinalCheckpoint(job, metrics));
  }
  if (job.strategy->should_init() && !job.options.eval_data.empty()) {
    RETURN_IF_ERROR(EvaluateAtEnd(job, eval_data, metrics));
  }
  if (job.has_ps && job.strategy->should_init()) {
    job.log("stopping the ps tasks");
    RETURN_IF_ERROR(job.client->Shutdown("training finished"));
  }
  return job.strategy->Finalize();
}

// The training job of RunTrainingJob, in `job`.
absl::StatusOr<FinalMetrics> RunJob(Job& job) {
  RETURN_IF_ERROR(TakeTrainingTask(job));
  // The model, from the feature spec or all of the data, and how the data
  // is read; the input pipeline streams this task's shard of it.
  ASSIGN_OR_RETURN(JobModel built, BuildJobModel(job.options, job.log));
  job.model = std::move(built.model);
  job.train_files = std::move(built.train_files);
  job.records = built.records;
  job.log(absl::StrCat("model ", job.options.model, " with ",
                       built.config.num_features, " features; input pipeline ",
                       job.pipeline_id + 1, " of ", job.num_pipelines, ": ",
                       job.train_files.size(), " ", job.records->name(),
                       " file(s)"));
  RETURN_IF_ERROR(SetUp(job));
  // The chief's evaluation files, checked before training so that a
  // mistake in them is found now rather than at the end; after the set-up,
  // so that the other tasks are not kept waiting for it, and a failure
  // frees them.
  EvalData eval_data;
  if (job.strategy->should_init() && !job.options.eval_data.empty()) {
    ASSIGN_OR_RETURN(eval_data.files, CheckEvalData(job.options, *job.records));
    eval_data.records = job.records;
  }
  FinalMetrics metrics;
  RETURN_IF_ERROR(Train(job, &metrics));
  RETURN_IF_ERROR(FinishJob(job, eval_data, &metrics));
  return metrics;
}

}  // namespace

absl::StatusOr<FinalMetrics> RunTrainingJob(const WorkerOptions& options,
                                            const ResolvedTask& task,
                                            const LogFn& log) {
  RETURN_IF_ERROR(ValidateWorkerOptions(options));
  Job job{options, log, task};
  absl::StatusOr<FinalMetrics> metrics = RunJob(job);
  // A multi-worker task that fails by itself tells the others why and
  // frees them at once (after a failed collective it already has).
  if (!metrics.ok() && IsMultiWorker(job)) {
    return job.workers->Abandon(metrics.status());
  }
  return metrics;
}

absl::StatusOr<FinalMetrics> RunTrainingJob(const WorkerOptions& options,
                                            const TfConfig& tf_config,
                                            const LogFn& log) {
  ASSIGN_OR_RETURN(
      ResolvedTask task,
      ResolveTask(tf_config, ClusterSource::kProgram, options.strategy));
  return RunTrainingJob(options, task, log);
}

}  // namespace distrt
