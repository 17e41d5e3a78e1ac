#ifndef DISTRT_JOB_JOB_VARIABLES_H_
#define DISTRT_JOB_JOB_VARIABLES_H_

// SetUpJobVariables: how every task of a training job comes to hold a
// model's variables, with TF's division of duties (extended.should_init,
// should_checkpoint):
//
//  * the task that initialises (the chief, or a lone task) creates the
//    variables, restores the latest checkpoint of the checkpoint directory
//    if there is one, else gives a model with initial values (a TorchScript
//    module) those values, unless its variables were trained already (a
//    restarted chief finds the ps tasks' variables past step 0);
//  * with ps tasks, the others wait for the chief to say the variables are
//    ready (PsCoordination) before looking them up, and the chief, when the
//    directory has no checkpoint yet, saves one at once so that a ps task
//    restarted at any time has a shard to take back;
//  * under multi-worker mirrored, the others take the chief's values by a
//    broadcast afterwards (BroadcastModelState): not done here.
//
// The worker binary and a program's own loop use it alike:
//
//   JobVariablesOptions options;
//   options.ps = resolved.ps_client.get();      // null without ps tasks
//   options.checkpoint_dir = "/ckpt";
//   ASSIGN_OR_RETURN(std::unique_ptr<JobVariables> job,
//                    SetUpJobVariables(*strategy, *model, options));
//   ... train; job->checkpoints (the chief's) saves now and then ...

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "job/checkpoint_manager.h"
#include "job/ps_coordination.h"
#include "runtime/distribute/strategy.h"
#include "runtime/models/model.h"
#include "runtime/ps/parameter_servers.h"
#include "runtime/training/model_variables.h"

namespace distrt {

struct JobVariablesOptions {
  // The job's ps tasks when the strategy keeps its variables there
  // (ResolvedStrategy::ps_client), else null. Must outlive the call and,
  // through the CheckpointManager returned, the checkpoints.
  ParameterServers* ps = nullptr;
  // The chief's checkpoints; empty: none.
  std::string checkpoint_dir;
  int max_to_keep = 5;
  // Delta checkpoints: CheckpointManager::Options.
  int full_checkpoint_every = 1;
  double delta_max_share = 0.5;
  // How long the others wait for the chief, and the flag that sets it.
  PsCoordination::Options coordination;
  // "variable ...", "restored ...", "saved ..." lines; none if unset.
  std::function<void(absl::string_view)> log;
};

// Not movable: `checkpoints` points at `variables`.
struct JobVariables {
  explicit JobVariables(ModelVariables v) : variables(std::move(v)) {}
  JobVariables(const JobVariables&) = delete;
  JobVariables& operator=(const JobVariables&) = delete;

  ModelVariables variables;
  // The initialising task's, with a checkpoint directory; else none.
  std::optional<CheckpointManager> checkpoints;
  // The checkpoint the variables came from, if one was restored.
  std::optional<CheckpointManager::Restored> restored;
};

// Errors are the strategy's, the checkpoint's (naming the directory or the
// ps task) or PsCoordination's (DEADLINE_EXCEEDED saying what it waited
// for). A failed restore changes no variable.
absl::StatusOr<std::unique_ptr<JobVariables>> SetUpJobVariables(
    Strategy& strategy, const Model& model, const JobVariablesOptions& options);

}  // namespace distrt

#endif  // DISTRT_JOB_JOB_VARIABLES_H_
