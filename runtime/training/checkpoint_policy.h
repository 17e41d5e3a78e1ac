#ifndef DISTRT_RUNTIME_TRAINING_CHECKPOINT_POLICY_H_
#define DISTRT_RUNTIME_TRAINING_CHECKPOINT_POLICY_H_

// CheckpointPolicy: when the chief saves during training (TF's
// CheckpointSaverHook / CheckpointManager's checkpoint_interval): every N
// global steps, every so many seconds, both (whichever comes first), or
// never. The final checkpoint is the caller's, after training.

#include <cstdint>

#include "absl/time/time.h"

namespace distrt {

class CheckpointPolicy {
 public:
  // `every_steps` <= 0 and `every` <= 0 each turn that trigger off. Counts
  // from `step` and `now`: the state training starts from.
  CheckpointPolicy(int64_t every_steps, absl::Duration every, int64_t step,
                   absl::Time now)
      : every_steps_(every_steps),
        every_(every),
        last_step_(step),
        last_time_(now) {}

  // Whether a checkpoint is due at global step `step`, time `now`.
  bool Due(int64_t step, absl::Time now) const {
    const bool by_steps = every_steps_ > 0 && step - last_step_ >= every_steps_;
    const bool by_time =
        every_ > absl::ZeroDuration() && now - last_time_ >= every_;
    return by_steps || by_time;
  }
  // A checkpoint of `step` was saved at `now`: the next counts from there.
  void Saved(int64_t step, absl::Time now) {
    last_step_ = step;
    last_time_ = now;
  }

 private:
  const int64_t every_steps_;
  const absl::Duration every_;
  int64_t last_step_;
  absl::Time last_time_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TRAINING_CHECKPOINT_POLICY_H_
