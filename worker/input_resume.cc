#include "worker/input_resume.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<InputResume>> InputResume::Open(
    const std::string& checkpoint_dir, int pipeline_id) {
  InputPositionLog::Options options;
  // The log keeps what a restart from the newest committed checkpoint
  // needs; -1 before the first.
  options.committed_global_step =
      [checkpoint_dir]() -> absl::StatusOr<int64_t> {
    ASSIGN_OR_RETURN(std::vector<std::string> committed,
                     ReadCheckpointIndex(checkpoint_dir));
    if (committed.empty()) return -1;
    return ParseCheckpointDirName(committed.back()).value_or(-1);
  };
  const std::string path =
      JoinPath(JoinPath(checkpoint_dir, "input_positions"),
               absl::StrCat("pipeline-", pipeline_id, ".log"));
  ASSIGN_OR_RETURN(std::unique_ptr<InputPositionLog> log,
                   InputPositionLog::Open(path, std::move(options)));
  return std::unique_ptr<InputResume>(new InputResume(std::move(log)));
}

absl::StatusOr<std::optional<InputPosition>> InputResume::ResumeAt(
    int64_t global_step) {
  ASSIGN_OR_RETURN(std::optional<std::string> bytes,
                   log_->ResumeAt(global_step));
  if (!bytes.has_value()) return std::nullopt;
  absl::StatusOr<InputPosition> position = InputPosition::Parse(*bytes);
  if (!position.ok()) {
    return absl::DataLossError(absl::StrCat(
        log_->path(),
        ": the input position logged for global "
        "step <= ",
        global_step, " does not parse: ", position.status().message()));
  }
  return *std::move(position);
}

absl::Status InputResume::Record(const InputPosition& after,
                                 int64_t global_step) {
  return log_->Append(global_step, after.Serialize());
}

}  // namespace distrt
