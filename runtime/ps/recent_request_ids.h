#ifndef DISTRT_RUNTIME_PS_RECENT_REQUEST_IDS_H_
#define DISTRT_RUNTIME_PS_RECENT_REQUEST_IDS_H_

// RecentRequestIds: the ids of the pushes a ps task applied lately, so that
// a push sent again is applied once. A client resends a push when it cannot
// know whether the first one arrived (the connection broke, or the answer
// did not come in time); without this, the gradient would count twice.
//
// An id is remembered from when its push starts (so that a copy arriving
// while the first is being applied is also caught) until it is older than
// max_age or max_ids newer ids push it out. A push that fails is forgotten,
// so that resending it applies it. Ids are random 64-bit numbers chosen by
// the client; 0 means "no id" and is never remembered.
//
// Thread-safe.

#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace distrt {

class RecentRequestIds {
 public:
  struct Options {
    // Ids remembered at most: 16 bytes each (about 32 MiB at the default).
    size_t max_ids = size_t{1} << 21;
    // How long an id is remembered: longer than a client keeps resending
    // (its --ps_failure_timeout).
    absl::Duration max_age = absl::Minutes(30);
  };

  RecentRequestIds() : RecentRequestIds(Options()) {}
  explicit RecentRequestIds(const Options& options) : options_(options) {}

  // Whether the push with `id` should be applied: true the first time (the
  // id is remembered from now), false for a duplicate. Always true for 0.
  bool Begin(uint64_t id, absl::Time now = absl::Now());

  // The push with `id` failed: forgets it, so that a resent copy applies.
  void Forget(uint64_t id);

  // Duplicates refused since construction.
  int64_t duplicates() const;

 private:
  struct Began {
    uint64_t id;
    uint64_t serial;  // which Begin of the id this was
    absl::Time when;
  };

  // Drops what is older than max_age, and the oldest while there are
  // `room_below` entries or more.
  void EvictOld(absl::Time now, size_t room_below)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  // Remembered id -> the serial of its latest Begin. An id forgotten and
  // begun again has an older entry in order_ too; eviction of that entry
  // must not forget the newer one, hence the serials.
  absl::flat_hash_map<uint64_t, uint64_t> ids_ ABSL_GUARDED_BY(mu_);
  std::deque<Began> order_ ABSL_GUARDED_BY(mu_);  // by serial
  uint64_t next_serial_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t duplicates_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_RECENT_REQUEST_IDS_H_
