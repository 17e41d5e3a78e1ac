#include "job/ps_coordination.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

constexpr char kChiefReady[] = "distrt/chief_ready";
constexpr char kWorkersDone[] = "distrt/workers_done";

}  // namespace

absl::Status PsCoordination::PollUntil(
    const std::function<absl::StatusOr<bool>()>& done,
    const std::function<std::string()>& waiting_for) {
  const absl::Time deadline = absl::Now() + options_.wait;
  absl::Time next_message = absl::Now();
  while (true) {
    ASSIGN_OR_RETURN(bool finished, done());
    if (finished) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "gave up after ", absl::FormatDuration(options_.wait),
          " waiting for ", waiting_for(),
          options_.wait_flag.empty() ? "" : " (", options_.wait_flag,
          options_.wait_flag.empty() ? "" : ")"));
    }
    if (absl::Now() >= next_message) {
      Log(absl::StrCat("waiting for ", waiting_for()));
      next_message = absl::Now() + absl::Seconds(5);
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::Status PsCoordination::AnnounceChiefReady() {
  // The done counter first: once the others see the ready one, they may
  // finish (and report) at any time.
  for (const char* name : {kWorkersDone, kChiefReady}) {
    VariableSpec spec;
    spec.name = name;
    spec.dtype = DType::kInt64;
    RETURN_IF_ERROR(ps_->CreateVariable(spec).status());
  }
  return absl::OkStatus();
}

absl::Status PsCoordination::WaitForChiefReady() {
  return PollUntil(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<VariablePlacement> found =
            ps_->LookupVariable(kChiefReady);
        if (found.ok()) return true;
        if (absl::IsNotFound(found.status())) return false;
        return found.status();
      },
      [] { return std::string("the chief to create the variables"); });
}

absl::Status PsCoordination::ReportWorkerDone() {
  ASSIGN_OR_RETURN(VariablePlacement done, ps_->LookupVariable(kWorkersDone));
  const int64_t one = 1;
  return ps_->AddInt64(done, absl::MakeConstSpan(&one, 1));
}

absl::Status PsCoordination::WaitForWorkersDone(int others) {
  ASSIGN_OR_RETURN(VariablePlacement done, ps_->LookupVariable(kWorkersDone));
  int64_t finished = 0;
  return PollUntil(
      [&]() -> absl::StatusOr<bool> {
        RETURN_IF_ERROR(ps_->PullInt64(done, absl::MakeSpan(&finished, 1)));
        return finished >= others;
      },
      [&] { return absl::StrCat(others - finished, " worker(s) to finish"); });
}

absl::Status PsCoordination::WaitForWorkersToFinish(
    int others, int64_t train_steps,
    const std::function<absl::StatusOr<int64_t>()>& read_global_step) {
  absl::Status all_done = WaitForWorkersDone(others);
  if (absl::IsDeadlineExceeded(all_done) && train_steps > 0) {
    absl::StatusOr<int64_t> step = read_global_step();
    if (step.ok() && *step >= train_steps) {
      Log(absl::StrCat("warning: ", all_done.message(), "; the global step (",
                       *step, ") reached ", train_steps,
                       ", so the job finishes without them"));
      return absl::OkStatus();
    }
  }
  RETURN_IF_ERROR(all_done);
  if (others > 0) Log("all workers finished");
  return absl::OkStatus();
}

}  // namespace distrt
