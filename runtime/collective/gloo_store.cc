#include "runtime/collective/gloo_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gloo/common/error.h"

namespace distrt {

GlooStore::GlooStore(KvStore* store, const Options& options)
    : store_(store), options_(options) {}

std::string GlooStore::Key(const std::string& key) const {
  return options_.prefix.empty() ? key
                                 : absl::StrCat(options_.prefix, "/", key);
}

std::vector<std::string> GlooStore::Keys(
    const std::vector<std::string>& keys) const {
  std::vector<std::string> prefixed;
  prefixed.reserve(keys.size());
  for (const std::string& key : keys) prefixed.push_back(Key(key));
  return prefixed;
}

void GlooStore::Throw(absl::Status status) {
  {
    absl::MutexLock lock(&mu_);
    if (first_error_.ok()) first_error_ = status;
  }
  throw gloo::IoException(status.ToString());
}

absl::Status GlooStore::first_error() const {
  absl::MutexLock lock(&mu_);
  return first_error_;
}

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  const std::string full_key = Key(key);
  absl::Status status =
      store_->Set(full_key, absl::string_view(data.data(), data.size()));
  if (!status.ok()) {
    Throw(absl::Status(status.code(),
                       absl::StrCat("rendezvous store: set of key \"", full_key,
                                    "\" failed: ", status.message())));
  }
}

std::vector<std::string> GlooStore::GetOrThrow(
    const std::vector<std::string>& keys, absl::Duration timeout,
    const char* what) {
  absl::StatusOr<std::vector<std::string>> values = store_->Get(keys, timeout);
  if (!values.ok()) {
    // The KvStore's message names the keys still missing; a few keys are
    // named here too, so the message says what Gloo was after.
    const std::string which =
        keys.size() <= 4
            ? absl::StrCat("key", keys.size() == 1 ? " \"" : "s \"",
                           absl::StrJoin(keys, "\", \""), "\"")
            : absl::StrCat(keys.size(), " keys");
    Throw(absl::Status(values.status().code(),
                       absl::StrCat("rendezvous store: ", what, " of ", which,
                                    " failed: ", values.status().message())));
  }
  return *std::move(values);
}

std::vector<char> GlooStore::get(const std::string& key) {
  std::vector<std::string> values =
      GetOrThrow({Key(key)}, options_.default_timeout, "get");
  return std::vector<char>(values[0].begin(), values[0].end());
}

void GlooStore::wait(const std::vector<std::string>& keys) {
  GetOrThrow(Keys(keys), options_.default_timeout, "wait");
}

void GlooStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  GetOrThrow(Keys(keys),
             timeout == gloo::kNoTimeout ? options_.default_timeout
                                         : absl::FromChrono(timeout),
             "wait");
}

}  // namespace distrt
