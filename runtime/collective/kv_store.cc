#include "runtime/collective/kv_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Keys are bytes; messages show them escaped, in quotes.
std::string Quoted(absl::string_view key) {
  return absl::StrCat("\"", absl::CHexEscape(key), "\"");
}

// At most this many missing keys are named in a Get's error: with thousands
// of ranks the message would otherwise be the whole key list.
constexpr int kMaxKeysNamed = 8;

absl::Status Closed() {
  return absl::UnavailableError("the key-value store is closed");
}

}  // namespace

InMemoryKvStore::InMemoryKvStore(const Options& options) : options_(options) {}

absl::Status InMemoryKvStore::CheckKey(absl::string_view key) const {
  if (key.empty()) return absl::InvalidArgumentError("empty key");
  if (static_cast<int64_t>(key.size()) > options_.max_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key ", Quoted(key.substr(0, 64)), key.size() > 64 ? "..." : "", " is ",
        key.size(), " bytes, more than the limit of ", options_.max_key_bytes));
  }
  return absl::OkStatus();
}

absl::Status InMemoryKvStore::PutLocked(absl::string_view key,
                                        std::string value) {
  auto it = entries_.find(key);
  const int64_t old_bytes =
      it == entries_.end()
          ? 0
          : static_cast<int64_t>(it->first.size() + it->second.size());
  const int64_t new_bytes = static_cast<int64_t>(key.size() + value.size());
  if (total_bytes_ - old_bytes + new_bytes > options_.max_total_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "storing ", new_bytes, " bytes under key ", Quoted(key),
        " would take the key-value store over its limit of ",
        options_.max_total_bytes, " bytes (", total_bytes_, " in use)"));
  }
  total_bytes_ += new_bytes - old_bytes;
  if (it == entries_.end()) {
    entries_.emplace(key, std::move(value));
  } else {
    it->second = std::move(value);
  }
  return absl::OkStatus();
}

absl::Status InMemoryKvStore::Set(absl::string_view key,
                                  absl::string_view value) {
  RETURN_IF_ERROR(CheckKey(key));
  if (static_cast<int64_t>(value.size()) > options_.max_value_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value for key ", Quoted(key), " is ", value.size(),
        " bytes, more than the limit of ", options_.max_value_bytes));
  }
  absl::MutexLock lock(&mu_);
  if (closed_) return Closed();
  // Waiters re-check their keys when mu_ is released (Await).
  return PutLocked(key, std::string(value));
}

absl::StatusOr<std::vector<std::string>> InMemoryKvStore::Get(
    absl::Span<const std::string> keys, absl::Duration timeout) {
  for (const std::string& key : keys) {
    RETURN_IF_ERROR(CheckKey(key));
  }
  timeout = std::max(timeout, absl::ZeroDuration());
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  // Runs with mu_ held, inside Await.
  auto ready = [this, keys]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) return true;
    for (const std::string& key : keys) {
      if (!entries_.contains(key)) return false;
    }
    return true;
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (closed_) return Closed();
  std::vector<std::string> values;
  values.reserve(keys.size());
  std::vector<std::string> named;  // the first kMaxKeysNamed missing ones
  int num_missing = 0;
  for (const std::string& key : keys) {
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      values.push_back(it->second);
    } else if (++num_missing <= kMaxKeysNamed) {
      named.push_back(Quoted(key));
    }
  }
  if (num_missing > 0) {
    return absl::DeadlineExceededError(absl::StrCat(
        num_missing > 1 ? "keys " : "key ", absl::StrJoin(named, ", "),
        num_missing > kMaxKeysNamed
            ? absl::StrCat(" and ", num_missing - kMaxKeysNamed, " more")
            : "",
        " not set within ", absl::FormatDuration(timeout)));
  }
  return values;
}

absl::StatusOr<int64_t> InMemoryKvStore::Add(absl::string_view key,
                                             int64_t delta) {
  RETURN_IF_ERROR(CheckKey(key));
  absl::MutexLock lock(&mu_);
  if (closed_) return Closed();
  int64_t value = 0;
  if (auto it = entries_.find(key); it != entries_.end()) {
    if (!absl::SimpleAtoi(it->second, &value)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Add to key ", Quoted(key), ", which holds ", it->second.size(),
          " bytes that are not a decimal counter (it was Set)"));
    }
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(value, delta, &sum)) {
    return absl::OutOfRangeError(absl::StrCat("Add of ", delta, " to key ",
                                              Quoted(key), " (", value,
                                              ") overflows int64"));
  }
  RETURN_IF_ERROR(PutLocked(key, absl::StrCat(sum)));
  return sum;
}

void InMemoryKvStore::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

}  // namespace distrt
