#ifndef DISTRT_JOB_CHECKPOINT_MANAGER_H_
#define DISTRT_JOB_CHECKPOINT_MANAGER_H_

// CheckpointManager: the chief's checkpoints of a job's variables, wherever
// the strategy keeps them (TF's tf.train.CheckpointManager over a
// Checkpoint of the model's variables):
//  * on ps tasks (ParameterServerStrategy: its ParameterServers, a PsClient
//    or in-process ones), every task writes its own shard and task 0
//    commits the checkpoint;
//  * in this process (every other strategy), the variables are written as
//    the one shard of a checkpoint in the same format.
// Either way a checkpoint restores under any strategy and any number of ps
// tasks (docs/checkpoint_format.md), and the evaluator reads it.
//
//   ASSIGN_OR_RETURN(ModelVariables variables,
//                    ModelVariables::FromVariables(strategy, {w, b}));
//   CheckpointManager::Options options;
//   options.directory = "/ckpt";
//   CheckpointManager checkpoints(resolved.ps_client.get(), &variables,
//                                 options);
//   if (strategy.should_checkpoint()) checkpoints.RestoreLatest();
//   ... train, checkpoints.Save(step) now and then ...
//   if (strategy.should_checkpoint()) checkpoints.SaveFinal(step);

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/ps/parameter_servers.h"
#include "runtime/training/model_variables.h"

namespace distrt {

class CheckpointManager {
 public:
  struct Options {
    // Where checkpoints go: <directory>/ckpt-<step>/, with an index of the
    // committed ones.
    std::string directory;
    // The newest this many are kept; 0 keeps all.
    int max_to_keep = 5;
    // "saved ...", "restored ...", and warnings about old checkpoints that
    // could not be deleted; none if unset.
    std::function<void(absl::string_view)> log;
  };

  // `ps`: the job's ps client when its variables live on ps tasks
  // (ResolvedStrategy::ps_client), else null, and `variables` (which must
  // outlive this) are saved from this process. Only the chief (or a lone
  // task) should save or restore.
  CheckpointManager(ParameterServers* ps, const ModelVariables* variables,
                    Options options);

  struct Saved {
    std::string checkpoint;  // the committed checkpoint directory
    int64_t bytes = 0;       // over all shards
  };
  // Saves the variables as the checkpoint of global step `step`. Errors
  // name the directory or the ps task that failed; a failed save leaves
  // the earlier checkpoints as they were.
  absl::StatusOr<Saved> Save(int64_t step);

  struct Restored {
    std::string checkpoint;
    int64_t step = 0;
  };
  // Restores the latest committed checkpoint in the directory; nullopt when
  // there is none yet (a new job). Also removes the final-checkpoint marker,
  // since a job that restores is not finished. All or nothing: a damaged
  // or mismatched checkpoint changes no variable.
  absl::StatusOr<std::optional<Restored>> RestoreLatest();

  // The last checkpoint of a job: saves `step` unless the latest already is
  // that step, then writes the marker that tells evaluators no more will
  // come. Returns the checkpoint's name.
  absl::StatusOr<std::string> SaveFinal(int64_t step);

  // Whether the directory has no committed checkpoint.
  absl::StatusOr<bool> Empty() const;

  const std::string& directory() const { return options_.directory; }

 private:
  void Log(absl::string_view line) const;

  ParameterServers* const ps_;
  const ModelVariables* const variables_;
  const Options options_;
};

}  // namespace distrt

#endif  // DISTRT_JOB_CHECKPOINT_MANAGER_H_
