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
    // The newest this many are kept; 0 keeps all. A kept delta checkpoint
    // keeps the checkpoints its chain needs too.
    int max_to_keep = 5;
    // Delta checkpoints (docs/checkpoint_format.md), on ps tasks only: a
    // full save every this many saves, deltas (hash-table rows changed since
    // the previous save; variables whole) between. 1: every save is full.
    int full_checkpoint_every = 1;
    // Also a full save when the rows the deltas since the last full save
    // wrote (changed rows plus removed ids) exceed this share of the rows
    // the tables hold: restoring a long chain then reads more than a full
    // save would.
    double delta_max_share = 0.5;
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
    bool delta = false;      // a delta checkpoint
  };
  // Saves the variables as the checkpoint of global step `step`: a delta
  // when the options ask for one and the ps tasks can (each must have last
  // saved or restored the checkpoint this one follows: a ps task that
  // restarted refuses, and the save is then made in full). The first save
  // of a CheckpointManager, and each after a failed one, is full. Errors
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
  // Whether the save of `step` may be a delta of the last one.
  bool WantDelta(int64_t step) const;
  absl::StatusOr<CheckpointSaved> SaveOnPs(int64_t step, bool& delta);

  ParameterServers* const ps_;
  const ModelVariables* const variables_;
  const Options options_;
  // The chain a delta may extend: the last save (a checkpoint directory
  // name) and its base full save; empty when the next save must be full.
  std::string last_saved_;
  std::string base_;
  int64_t last_step_ = -1;
  int saves_in_chain_ = 0;       // since the base, the base included
  int64_t rows_since_full_ = 0;  // written by the deltas since the base
  int64_t rows_held_ = 0;        // by the tables, at the last save
};

}  // namespace distrt

#endif  // DISTRT_JOB_CHECKPOINT_MANAGER_H_
