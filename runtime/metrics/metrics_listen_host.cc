#include "runtime/metrics/metrics_listen_host.h"

#include <arpa/inet.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace distrt {
namespace {

std::string WithoutBrackets(absl::string_view host) {
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host.remove_prefix(1);
    host.remove_suffix(1);
  }
  return std::string(host);
}

}  // namespace

bool IsLoopbackHost(absl::string_view host) {
  const std::string bare = WithoutBrackets(host);
  if (bare == "localhost" || bare == "::1") return true;
  in_addr v4;
  return inet_pton(AF_INET, bare.c_str(), &v4) == 1 &&
         (ntohl(v4.s_addr) >> 24) == 127;
}

absl::StatusOr<std::string> MetricsListenHost(absl::string_view requested,
                                              absl::string_view task_host,
                                              bool job_uses_tls) {
  if (requested.empty()) {
    return job_uses_tls ? std::string("127.0.0.1") : WithoutBrackets(task_host);
  }
  if (job_uses_tls && !IsLoopbackHost(requested)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics_host=", requested,
        ": the metrics endpoint is plain HTTP without authentication, so in "
        "a job with TLS it listens on loopback only (127.0.0.1, ::1 or "
        "localhost); scrape it from the task's own host"));
  }
  return WithoutBrackets(requested);
}

}  // namespace distrt
