#include "job/checkpoint_manager.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/training/model_state.h"
#include "runtime/util/status_macros.h"

namespace distrt {

CheckpointManager::CheckpointManager(ParameterServers* ps,
                                     const ModelVariables* variables,
                                     Options options)
    : ps_(ps), variables_(variables), options_(std::move(options)) {}

void CheckpointManager::Log(absl::string_view line) const {
  if (options_.log) options_.log(line);
}

bool CheckpointManager::WantDelta(int64_t step) const {
  return options_.full_checkpoint_every > 1 && !last_saved_.empty() &&
         step > last_step_ &&
         saves_in_chain_ < options_.full_checkpoint_every &&
         rows_since_full_ <= options_.delta_max_share * rows_held_;
}

absl::StatusOr<CheckpointSaved> CheckpointManager::SaveOnPs(int64_t step,
                                                            bool& delta) {
  const std::string& dir = options_.directory;
  const std::string name = CheckpointDirName(step);
  delta = WantDelta(step);
  if (delta) {
    absl::StatusOr<CheckpointSaved> saved = ps_->SaveDelta(
        dir, step, options_.max_to_keep, DeltaSaveOf{last_saved_, base_});
    last_saved_.clear();  // until this save succeeds, none may follow it
    if (saved.ok()) {
      last_saved_ = name;
      last_step_ = step;
      ++saves_in_chain_;
      rows_since_full_ += saved->table_rows_written;
      rows_held_ = saved->table_rows_held;
      return saved;
    }
    const absl::StatusCode code = saved.status().code();
    if (code != absl::StatusCode::kFailedPrecondition &&
        code != absl::StatusCode::kUnimplemented) {
      return saved.status();
    }
    Log(absl::StrCat(
        "a delta save of step ", step,
        " was refused, saving in full: ", saved.status().message()));
    delta = false;
  }
  last_saved_.clear();
  ASSIGN_OR_RETURN(CheckpointSaved saved,
                   ps_->Save(dir, step, options_.max_to_keep));
  last_saved_ = base_ = name;
  last_step_ = step;
  saves_in_chain_ = 1;
  rows_since_full_ = 0;
  rows_held_ = saved.table_rows_held;
  return saved;
}

absl::StatusOr<CheckpointManager::Saved> CheckpointManager::Save(int64_t step) {
  Saved saved;
  if (ps_ != nullptr) {
    ASSIGN_OR_RETURN(CheckpointSaved on_ps, SaveOnPs(step, saved.delta));
    saved.checkpoint = std::move(on_ps.checkpoint);
    saved.bytes = on_ps.bytes;
  } else {
    ASSIGN_OR_RETURN(ModelCheckpointSaved here,
                     SaveModelCheckpoint(*variables_, options_.directory, step,
                                         options_.max_to_keep));
    saved.checkpoint = std::move(here.checkpoint);
    saved.bytes = here.bytes;
    for (const std::string& error : here.cleanup_errors) {
      Log(absl::StrCat("warning: ", error));
    }
  }
  Log(absl::StrCat("saved ", saved.checkpoint,
                   saved.delta ? " (a delta, " : " (", saved.bytes, " bytes)"));
  return saved;
}

absl::StatusOr<std::optional<CheckpointManager::Restored>>
CheckpointManager::RestoreLatest() {
  const std::string& dir = options_.directory;
  // A restarted job is not finished (yet): evaluators wait again.
  RETURN_IF_ERROR(RemoveFinalCheckpointMarker(dir));
  // The chain to extend is unknown here: the next save is full.
  last_saved_.clear();
  ASSIGN_OR_RETURN(bool empty, Empty());
  if (empty) return std::nullopt;
  Restored restored;
  if (ps_ != nullptr) {
    ASSIGN_OR_RETURN(CheckpointRestored on_ps, ps_->Restore(dir));
    restored.checkpoint = std::move(on_ps.checkpoint);
    restored.step = on_ps.step;
  } else {
    ASSIGN_OR_RETURN(ModelCheckpointRestored here,
                     RestoreModelCheckpoint(*variables_, dir));
    restored.checkpoint = std::move(here.checkpoint);
    restored.step = here.step;
  }
  Log(absl::StrCat("restored ", restored.checkpoint, " (step ", restored.step,
                   ")"));
  return restored;
}

absl::StatusOr<std::string> CheckpointManager::SaveFinal(int64_t step) {
  const std::string name = CheckpointDirName(step);
  ASSIGN_OR_RETURN(std::vector<std::string> index,
                   ReadCheckpointIndex(options_.directory));
  if (index.empty() || index.back() != name) {
    RETURN_IF_ERROR(Save(step).status());
  }
  RETURN_IF_ERROR(WriteFinalCheckpointMarker(options_.directory, name));
  Log(absl::StrCat("final checkpoint: ", name));
  return name;
}

absl::StatusOr<bool> CheckpointManager::Empty() const {
  ASSIGN_OR_RETURN(std::vector<std::string> index,
                   ReadCheckpointIndex(options_.directory));
  return index.empty();
}

}  // namespace distrt
