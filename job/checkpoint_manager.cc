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

absl::StatusOr<CheckpointManager::Saved> CheckpointManager::Save(int64_t step) {
  Saved saved;
  if (ps_ != nullptr) {
    ASSIGN_OR_RETURN(CheckpointSaved on_ps,
                     ps_->Save(options_.directory, step, options_.max_to_keep));
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
  Log(absl::StrCat("saved ", saved.checkpoint, " (", saved.bytes, " bytes)"));
  return saved;
}

absl::StatusOr<std::optional<CheckpointManager::Restored>>
CheckpointManager::RestoreLatest() {
  const std::string& dir = options_.directory;
  // A restarted job is not finished (yet): evaluators wait again.
  RETURN_IF_ERROR(RemoveFinalCheckpointMarker(dir));
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
