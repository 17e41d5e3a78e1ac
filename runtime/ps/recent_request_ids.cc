#include "runtime/ps/recent_request_ids.h"

namespace distrt {

bool RecentRequestIds::Begin(uint64_t id, absl::Time now) {
  if (id == 0) return true;
  absl::MutexLock lock(&mu_);
  EvictOld(now, options_.max_ids + 1);
  if (ids_.contains(id)) {
    ++duplicates_;
    return false;
  }
  EvictOld(now, options_.max_ids);
  const uint64_t serial = next_serial_++;
  ids_[id] = serial;
  order_.push_back({id, serial, now});
  return true;
}

void RecentRequestIds::Forget(uint64_t id) {
  if (id == 0) return;
  absl::MutexLock lock(&mu_);
  ids_.erase(id);
}

int64_t RecentRequestIds::duplicates() const {
  absl::MutexLock lock(&mu_);
  return duplicates_;
}

void RecentRequestIds::EvictOld(absl::Time now, size_t room_below) {
  while (!order_.empty() && (order_.size() >= room_below ||
                             now - order_.front().when > options_.max_age)) {
    const Began& oldest = order_.front();
    auto remembered = ids_.find(oldest.id);
    if (remembered != ids_.end() && remembered->second == oldest.serial) {
      ids_.erase(remembered);
    }
    order_.pop_front();
  }
}

}  // namespace distrt
