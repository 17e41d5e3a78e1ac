#ifndef DISTRT_RUNTIME_COLLECTIVE_KV_STORE_H_
#define DISTRT_RUNTIME_COLLECTIVE_KV_STORE_H_

// KvStore: the key-value store through which the workers of a job meet
// before their first collective (rendezvous): each publishes what the others
// need (its transport address) and waits for theirs. InMemoryKvStore is the
// store itself; the chief serves one to the other processes
// (rpc/rendezvous_server.h), which reach it through rpc/rendezvous_client.h,
// another KvStore. Ranks that are threads of one process (tests) share an
// InMemoryKvStore directly.
//
// Keys and values are arbitrary bytes. A key, once set, stays until the
// store is destroyed: rendezvous keys are written once per group and are
// few, so there is no Delete; groups that share a store use distinct key
// prefixes instead.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace distrt {

// Implementations are thread-safe: every method may be called from any
// thread, concurrently.
class KvStore {
 public:
  virtual ~KvStore() = default;

  // Stores `value` under `key`, replacing any earlier value, and wakes the
  // Gets waiting for it.
  virtual absl::Status Set(absl::string_view key, absl::string_view value) = 0;

  // Waits until every one of `keys` has been set, then returns their values
  // in the order of `keys`. Waits at most `timeout` (zero or negative: only
  // looks); DEADLINE_EXCEEDED naming the keys still missing otherwise.
  virtual absl::StatusOr<std::vector<std::string>> Get(
      absl::Span<const std::string> keys, absl::Duration timeout) = 0;

  // Adds `delta` to the counter under `key` (a new key starts at 0) and
  // returns the new value; the counter's value, as Get sees it, is its
  // decimal text. FAILED_PRECONDITION when `key` holds something that is not
  // such a number (it was Set), OUT_OF_RANGE when the sum overflows int64.
  virtual absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) = 0;
};

// A KvStore in this process's memory.
//
// Thread-safe. Waiting Gets block their caller only; Close() wakes them.
class InMemoryKvStore final : public KvStore {
 public:
  struct Options {
    // Longest key; longer ones, and empty ones, are INVALID_ARGUMENT. Keys
    // are short names ("gloo/workers/3").
    int64_t max_key_bytes = 1024;
    // Longest value (INVALID_ARGUMENT beyond). Gloo's full-mesh rendezvous
    // stores one TCP address (under 200 bytes) per peer under each rank's
    // key, so 1 MiB is enough for thousands of ranks.
    int64_t max_value_bytes = int64_t{1} << 20;
    // Keys plus values of the whole store; a Set or Add beyond it is
    // RESOURCE_EXHAUSTED. The store may be served to the network, whose
    // input must not exhaust the server's memory.
    int64_t max_total_bytes = int64_t{256} << 20;
  };

  InMemoryKvStore() : InMemoryKvStore(Options()) {}
  explicit InMemoryKvStore(const Options& options);
  InMemoryKvStore(const InMemoryKvStore&) = delete;
  InMemoryKvStore& operator=(const InMemoryKvStore&) = delete;

  absl::Status Set(absl::string_view key, absl::string_view value) override;
  absl::StatusOr<std::vector<std::string>> Get(
      absl::Span<const std::string> keys, absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) override;

  // Makes every waiting Get, and every later call, return UNAVAILABLE, so
  // that a server can stop without waiting out its clients' timeouts.
  // Idempotent.
  void Close();

 private:
  absl::Status CheckKey(absl::string_view key) const;
  // Stores `value` under `key`, within max_total_bytes.
  absl::Status PutLocked(absl::string_view key, std::string value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> entries_ ABSL_GUARDED_BY(mu_);
  int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_KV_STORE_H_
