#include "job/job_variables.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<JobVariables>> SetUpJobVariables(
    Strategy& strategy, const Model& model,
    const JobVariablesOptions& options) {
  auto log = [&options](absl::string_view line) {
    if (options.log) options.log(line);
  };
  const bool initializes = strategy.should_init();
  std::optional<PsCoordination> coordination;
  if (options.ps != nullptr) {
    coordination.emplace(options.ps, options.coordination);
    if (!initializes) RETURN_IF_ERROR(coordination->WaitForChiefReady());
  }
  ASSIGN_OR_RETURN(ModelVariables variables,
                   ModelVariables::Create(strategy, model));
  auto job = std::make_unique<JobVariables>(std::move(variables));
  if (!initializes) return job;

  for (const std::string& line : job->variables.Describe(model)) {
    log(absl::StrCat("variable ", line));
  }
  if (strategy.should_checkpoint() && !options.checkpoint_dir.empty()) {
    CheckpointManager::Options checkpoints;
    checkpoints.directory = options.checkpoint_dir;
    checkpoints.max_to_keep = options.max_to_keep;
    checkpoints.full_checkpoint_every = options.full_checkpoint_every;
    checkpoints.delta_max_share = options.delta_max_share;
    checkpoints.log = options.log;
    job->checkpoints.emplace(options.ps, &job->variables,
                             std::move(checkpoints));
    ASSIGN_OR_RETURN(job->restored, job->checkpoints->RestoreLatest());
  }
  if (!job->restored.has_value()) {
    ASSIGN_OR_RETURN(int64_t step, job->variables.ReadGlobalStep(strategy));
    if (step == 0) {
      RETURN_IF_ERROR(job->variables.AssignInitialValues(strategy, model));
    }
  }
  if (coordination.has_value()) {
    RETURN_IF_ERROR(coordination->AnnounceChiefReady());
    if (job->checkpoints.has_value()) {
      ASSIGN_OR_RETURN(bool empty, job->checkpoints->Empty());
      if (empty) {
        ASSIGN_OR_RETURN(int64_t step, job->variables.ReadGlobalStep(strategy));
        RETURN_IF_ERROR(job->checkpoints->Save(step).status());
      }
    }
  }
  return job;
}

}  // namespace distrt
