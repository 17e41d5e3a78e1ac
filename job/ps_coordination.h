#ifndef DISTRT_JOB_PS_COORDINATION_H_
#define DISTRT_JOB_PS_COORDINATION_H_

// PsCoordination: the chief's set-up and tear-down handshake with the other
// workers of a parameter-server job, through the ps tasks themselves (TF's
// chief initializes the variables; the others wait for it, then use them).
// Two int64 counters on the ps tasks carry it:
//
//   distrt/chief_ready    created by the chief once every variable exists
//                         and is restored: the others wait for it before
//                         creating (that is, looking up) theirs
//   distrt/workers_done   each other worker adds 1 when it finished; the
//                         chief waits for all before its final checkpoint
//                         and stopping the ps tasks
//
// A worker cannot be notified by a ps task, so waiting polls (every 200 ms,
// a progress line every 5 s), bounded by Options::wait.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/ps/parameter_servers.h"

namespace distrt {

class PsCoordination {
 public:
  struct Options {
    // The longest any wait lasts; then DEADLINE_EXCEEDED saying what it
    // waited for.
    absl::Duration wait = absl::Minutes(5);
    // Named in that error, e.g. "--wait_secs", so the user knows what to
    // raise; empty: nothing.
    std::string wait_flag;
    // "waiting for ..." progress lines; none if unset.
    std::function<void(absl::string_view)> log;
  };

  // `ps` (the job's ps tasks, e.g. this worker's PsClient) must outlive
  // this.
  PsCoordination(ParameterServers* ps, Options options)
      : ps_(ps), options_(std::move(options)) {}

  // The chief, once its variables exist and are restored.
  absl::Status AnnounceChiefReady();
  // Every other worker, before creating its variables.
  absl::Status WaitForChiefReady();
  // Every other worker, when it finished training.
  absl::Status ReportWorkerDone();
  // The chief: waits for `others` workers to have reported done.
  // DEADLINE_EXCEEDED saying how many did not.
  absl::Status WaitForWorkersDone(int others);
  // The chief when training is over: WaitForWorkersDone, except that a wait
  // that runs out while the global step (`read_global_step`) has reached
  // `train_steps` (> 0) ends in a logged warning, not an error: training
  // is done, so a worker that has not said so is gone (killed and not
  // restarted) or stuck, and whatever it still pushed would come after the
  // final checkpoint.
  absl::Status WaitForWorkersToFinish(
      int others, int64_t train_steps,
      const std::function<absl::StatusOr<int64_t>()>& read_global_step);

 private:
  // Polls `done` until it says so, or Options::wait.
  absl::Status PollUntil(const std::function<absl::StatusOr<bool>()>& done,
                         const std::function<std::string()>& waiting_for);
  void Log(absl::string_view line) const {
    if (options_.log) options_.log(line);
  }

  ParameterServers* const ps_;
  const Options options_;
};

}  // namespace distrt

#endif  // DISTRT_JOB_PS_COORDINATION_H_
