#ifndef DISTRT_WORKER_INPUT_RESUME_H_
#define DISTRT_WORKER_INPUT_RESUME_H_

// InputResume: where a training task's input stood after each of its steps,
// kept under --checkpoint_dir as <dir>/input_positions/pipeline-<id>.log
// (InputPositionLog), so that a restarted task resumes its input where the
// job's state is instead of at the epoch's start:
//  - a job restarted from checkpoint G: the position logged with the largest
//    global step <= G, i.e. the last step of this task that G holds;
//  - a task restarted alone (the ps tasks kept the job's state): its last
//    logged step.
// Both are "the entry at the current global step". What the pipeline held
// in its buffers then is not part of a position: input_pipeline.h bounds
// what is seen again or skipped (at most one shuffle buffer).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/input/input_position.h"
#include "runtime/input/input_position_log.h"

namespace distrt {

class InputResume {
 public:
  // The log of input pipeline `pipeline_id` under `checkpoint_dir`; errors
  // name the file.
  static absl::StatusOr<std::unique_ptr<InputResume>> Open(
      const std::string& checkpoint_dir, int pipeline_id);

  // The position to continue from when the job's global step is
  // `global_step` (nullopt: the input's start). Entries after it are
  // forgotten: that timeline was abandoned. DATA_LOSS naming the file for a
  // logged position that does not parse.
  absl::StatusOr<std::optional<InputPosition>> ResumeAt(int64_t global_step);

  // Logs `after`, where the input stood after the step that made the
  // global step `global_step`.
  absl::Status Record(const InputPosition& after, int64_t global_step);

  const std::string& path() const { return log_->path(); }

 private:
  explicit InputResume(std::unique_ptr<InputPositionLog> log)
      : log_(std::move(log)) {}

  std::unique_ptr<InputPositionLog> log_;
};

}  // namespace distrt

#endif  // DISTRT_WORKER_INPUT_RESUME_H_
