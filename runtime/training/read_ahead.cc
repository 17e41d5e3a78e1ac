#include "runtime/training/read_ahead.h"

#include <utility>

namespace distrt {

ReadAhead::ReadAhead(int num_replicas)
    : num_replicas_(num_replicas),
      replicas_(std::make_unique<Replica[]>(num_replicas)) {}

ReadAhead::~ReadAhead() {
  for (int i = 0; i < num_replicas_; ++i) {
    Replica& r = replicas_[i];
    {
      absl::MutexLock lock(&r.mu);
      r.stop = true;
    }
    if (r.thread.joinable()) r.thread.join();
  }
}

void ReadAhead::Serve(Replica* r) {
  // One read per iteration; ends when told to stop with no read waiting.
  for (;;) {
    ReadFn read;
    {
      absl::MutexLock lock(&r->mu);
      r->mu.Await(absl::Condition(
          +[](Replica* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu) {
            return r->read != nullptr || r->stop;
          },
          r));
      if (r->read == nullptr) return;
      read = std::move(r->read);
      r->read = nullptr;
    }
    // `values` is the thread's alone while busy.
    const absl::Status status = read(r->values);
    absl::MutexLock lock(&r->mu);
    r->status = status;
    r->busy = false;
    r->has_result = true;
  }
}

void ReadAhead::DropPrevious(Replica& r) {
  r.mu.Await(absl::Condition(
      +[](Replica* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu) { return !r->busy; },
      &r));
  if (r.has_result) ++r.dropped;
  r.has_result = false;
}

void ReadAhead::Start(int replica, std::vector<VariableSlice> values,
                      ReadFn read) {
  Replica& r = replicas_[replica];
  absl::MutexLock lock(&r.mu);
  DropPrevious(r);
  r.values = std::move(values);
  r.read = std::move(read);
  r.busy = true;
  if (!r.thread.joinable()) r.thread = std::thread(Serve, &r);
}

void ReadAhead::Put(int replica, std::vector<VariableSlice> values) {
  Replica& r = replicas_[replica];
  absl::MutexLock lock(&r.mu);
  DropPrevious(r);
  r.values = std::move(values);
  r.status = absl::OkStatus();
  r.has_result = true;
}

std::optional<std::vector<VariableSlice>> ReadAhead::Take(
    int replica, const std::vector<std::vector<int64_t>>& ids) {
  Replica& r = replicas_[replica];
  absl::MutexLock lock(&r.mu);
  if (!r.busy && !r.has_result) return std::nullopt;
  r.mu.Await(absl::Condition(
      +[](Replica* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu) { return !r->busy; },
      &r));
  r.has_result = false;
  bool same = r.status.ok() && r.values.size() == ids.size();
  for (size_t i = 0; same && i < ids.size(); ++i) {
    same = r.values[i].ids == ids[i];
  }
  if (!same) {
    ++r.dropped;
    r.values.clear();
    return std::nullopt;
  }
  ++r.taken;
  return std::move(r.values);
}

int64_t ReadAhead::Total(int64_t Replica::*count) const {
  int64_t n = 0;
  for (int i = 0; i < num_replicas_; ++i) {
    absl::MutexLock lock(&replicas_[i].mu);
    n += replicas_[i].*count;
  }
  return n;
}

}  // namespace distrt
