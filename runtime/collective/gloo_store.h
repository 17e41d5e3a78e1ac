#ifndef DISTRT_RUNTIME_COLLECTIVE_GLOO_STORE_H_
#define DISTRT_RUNTIME_COLLECTIVE_GLOO_STORE_H_

// GlooStore: Gloo's rendezvous store interface (gloo::rendezvous::Store),
// through which gloo::rendezvous::Context::connectFullMesh exchanges the
// ranks' TCP addresses, over one of our KvStores. Every key is put under a
// prefix, so that several groups (and anything else) can share one store.
//
// Gloo reports errors by exceptions and calls the store from inside its own
// code, so this adapter must throw too: a failed call throws
// gloo::IoException whose message names the key(s) and what failed. Only
// code that catches Gloo's exceptions (GlooGroup) should hand it to Gloo.
// The first failure is also kept as an absl::Status (first_error()), whose
// code an exception cannot carry.
//
// Gloo's calls without a timeout (get, wait(keys), and a wait whose timeout
// is gloo::kNoTimeout) wait Options.default_timeout: nothing here waits
// forever.
//
// Thread-safe if the KvStore is (ours are).

#include <chrono>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gloo/rendezvous/store.h"
#include "runtime/collective/kv_store.h"

namespace distrt {

class GlooStore final : public gloo::rendezvous::Store {
 public:
  struct Options {
    // Put before every key, with a '/' between ("gloo/workers" makes Gloo's
    // key "3" "gloo/workers/3"). Empty: keys as Gloo names them.
    std::string prefix;
    // How long a get or wait without a timeout of its own waits for its
    // keys. Gloo's own stores default to 30 s too.
    absl::Duration default_timeout = absl::Seconds(30);
  };

  // `store` is not owned and must outlive this adapter.
  GlooStore(KvStore* store, const Options& options);

  // Gloo's interface; each throws gloo::IoException on failure.
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // The first error thrown, with the KvStore's code; OK while none was.
  absl::Status first_error() const;

 private:
  std::string Key(const std::string& key) const;
  std::vector<std::string> Keys(const std::vector<std::string>& keys) const;
  // Gets `keys` (already prefixed), throwing on failure.
  std::vector<std::string> GetOrThrow(const std::vector<std::string>& keys,
                                      absl::Duration timeout, const char* what);
  // Keeps `status` as first_error() and throws it as gloo::IoException.
  [[noreturn]] void Throw(absl::Status status);

  KvStore* const store_;
  const Options options_;

  mutable absl::Mutex mu_;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_COLLECTIVE_GLOO_STORE_H_
