#include "worker/evaluator_job.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/distribute/parameter_server_strategy.h"
#include "runtime/in_memory_ps/in_memory_parameter_servers.h"
#include "runtime/summary/event_file_writer.h"
#include "runtime/training/model_variables.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"
#include "worker/evaluation.h"
#include "worker/job_model.h"

namespace distrt {
namespace {

// How often the checkpoint index is read, and how often a waiting evaluator
// says so.
constexpr absl::Duration kPollInterval = absl::Milliseconds(500);
constexpr absl::Duration kWaitingMessageInterval = absl::Seconds(30);

struct Evaluator {
  const WorkerOptions& options;
  const LogFn& log;
  JobModel built;
  EvalData eval_data;
  LocalDevices devices;
  // The evaluator's variables, held in this process by one in-memory ps
  // task (no server, no socket), and the strategy over them. Declared in
  // the order they must be created; destroyed in reverse.
  std::unique_ptr<InMemoryParameterServers> servers;
  std::unique_ptr<Strategy> strategy;
  std::optional<ModelVariables> variables;
  std::unique_ptr<EventFileWriter> summaries;  // null without --log_dir
  std::string metrics_path;                    // empty without --metrics_out
};

absl::Status CreateVariables(Evaluator& e) {
  ASSIGN_OR_RETURN(std::unique_ptr<InMemoryParameterServers> servers,
                   InMemoryParameterServers::Create(/*num_ps_tasks=*/1));
  e.servers = std::move(servers);

  ASSIGN_OR_RETURN(LocalDevices devices, CreateTaskDevices(e.options));
  e.devices = std::move(devices);
  e.log(absl::StrCat("devices: ", e.devices.description));
  StrategyOptions strategy_options;
  strategy_options.cross_device_ops = e.options.cross_device_ops;
  strategy_options.is_chief = false;
  ASSIGN_OR_RETURN(std::unique_ptr<ParameterServerStrategy> strategy,
                   ParameterServerStrategy::Create(
                       e.devices.pointers(), e.servers.get(), strategy_options,
                       absl::Seconds(e.options.wait_secs)));
  e.strategy = std::move(strategy);
  RETURN_IF_ERROR(e.strategy->Initialize());
  ASSIGN_OR_RETURN(ModelVariables variables,
                   ModelVariables::Create(*e.strategy, *e.built.model));
  e.variables = std::move(variables);
  return absl::OkStatus();
}

// Restores checkpoint `name` of --checkpoint_dir into the evaluator's
// variables and evaluates it. NOT_FOUND when the checkpoint was deleted
// (the chief keeps only --keep_checkpoints) before it could be read.
absl::StatusOr<FinalMetrics> EvaluateCheckpoint(Evaluator& e,
                                                const std::string& name) {
  const std::string dir = JoinPath(e.options.checkpoint_dir, name);
  const absl::Time start = absl::Now();
  absl::StatusOr<CheckpointRestored> restored = e.servers->Restore(dir);
  if (!restored.ok()) {
    absl::StatusOr<bool> exists = PathExists(dir);
    if (exists.ok() && !*exists) {
      return absl::NotFoundError(
          absl::StrCat(name, " was deleted before it could be evaluated"));
    }
    return absl::Status(restored.status().code(),
                        absl::StrCat("cannot evaluate ", dir, ": ",
                                     restored.status().message()));
  }
  FinalMetrics metrics;
  metrics.global_step = restored->step;
  ASSIGN_OR_RETURN(
      Evaluation evaluation,
      Evaluate(*e.strategy, *e.built.model, *e.variables, e.eval_data,
               e.options.global_batch_size, &metrics));
  metrics.wall_secs = absl::ToDoubleSeconds(absl::Now() - start);
  if (metrics.wall_secs > 0) {
    metrics.examples_per_sec = evaluation.examples / metrics.wall_secs;
  }
  e.log(absl::StrCat("evaluated ", name, " (global step ", metrics.global_step,
                     ") on ", evaluation.examples,
                     " examples: ", evaluation.description));
  if (e.summaries != nullptr) {
    RETURN_IF_ERROR(
        e.summaries->WriteScalars(metrics.global_step, EvalScalars(metrics)));
  }
  if (!e.metrics_path.empty()) {
    RETURN_IF_ERROR(WriteFinalMetrics(e.metrics_path, metrics));
  }
  return metrics;
}

absl::Status CheckEvaluatorOptions(const WorkerOptions& options,
                                   const TfConfig& tf_config) {
  if (options.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        "the evaluator evaluates the checkpoints in --checkpoint_dir; set it "
        "to the chief's --checkpoint_dir");
  }
  if (options.eval_data.empty()) {
    return absl::InvalidArgumentError(
        "the evaluator needs --eval_data to evaluate checkpoints on");
  }
  if (options.eval_timeout_secs <= 0) {
    return absl::InvalidArgumentError("--eval_timeout_secs must be positive");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FinalMetrics> RunEvaluatorJob(const WorkerOptions& options,
                                             const TfConfig& tf_config,
                                             const LogFn& log) {
  RETURN_IF_ERROR(ValidateWorkerOptions(options));
  RETURN_IF_ERROR(CheckEvaluatorOptions(options, tf_config));
  Evaluator e{options, log};
  ASSIGN_OR_RETURN(JobModel built, BuildJobModel(options, log));
  e.built = std::move(built);
  ASSIGN_OR_RETURN(e.eval_data.files, CheckEvalData(options, *e.built.records));
  e.eval_data.records = e.built.records;
  log(absl::StrCat("model ", options.model, " with ",
                   e.built.config.num_features,
                   " features; eval data: ", e.eval_data.files.size(), " ",
                   e.built.records->name(), " file(s)"));
  RETURN_IF_ERROR(CreateVariables(e));
  if (!options.log_dir.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<EventFileWriter> writer,
                     EventFileWriter::Create(JoinPath(options.log_dir, "eval"),
                                             "evaluator"));
    e.summaries = std::move(writer);
    log(absl::StrCat("summaries: ", e.summaries->path()));
  }
  if (!options.metrics_out.empty()) {
    e.metrics_path = EvaluatorMetricsPath(options.metrics_out);
  }

  const std::string& root = options.checkpoint_dir;
  const absl::Duration timeout = absl::Seconds(options.eval_timeout_secs);
  log(absl::StrCat("watching ", root, " for checkpoints"));
  std::string last_evaluated;
  std::optional<FinalMetrics> last_metrics;
  absl::Time last_new = absl::Now();
  absl::Time next_message = last_new + kWaitingMessageInterval;
  while (true) {
    // The marker first: it is written after the final checkpoint is in the
    // index, so when it is seen the index read next already lists that one.
    ASSIGN_OR_RETURN(std::optional<std::string> final_checkpoint,
                     ReadFinalCheckpointMarker(root));
    ASSIGN_OR_RETURN(std::vector<std::string> index, ReadCheckpointIndex(root));
    if (!index.empty() && index.back() != last_evaluated) {
      const std::string latest = index.back();
      absl::StatusOr<FinalMetrics> metrics = EvaluateCheckpoint(e, latest);
      if (absl::IsNotFound(metrics.status())) {
        log(absl::StrCat("skipped: ", metrics.status().message()));
      } else if (!metrics.ok()) {
        return metrics.status();
      } else {
        last_metrics = *std::move(metrics);
      }
      last_evaluated = latest;
      last_new = absl::Now();
      next_message = last_new + kWaitingMessageInterval;
      continue;
    }
    if (final_checkpoint.has_value() && *final_checkpoint == last_evaluated &&
        last_metrics.has_value()) {
      log(absl::StrCat("evaluated the final checkpoint, ", last_evaluated));
      break;
    }
    const absl::Time now = absl::Now();
    if (now - last_new > timeout) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no new checkpoint in ", root, " for ", options.eval_timeout_secs,
          "s (--eval_timeout_secs); last evaluated: ",
          last_evaluated.empty() ? "none" : last_evaluated));
    }
    if (now >= next_message) {
      log(absl::StrCat(
          "waiting for a new checkpoint in ", root,
          last_evaluated.empty()
              ? ""
              : absl::StrCat(" (last evaluated ", last_evaluated, ")")));
      next_message = now + kWaitingMessageInterval;
    }
    absl::SleepFor(kPollInterval);
  }
  RETURN_IF_ERROR(e.strategy->Finalize());
  return *last_metrics;
}

}  // namespace distrt
