#include "client/failure_description.h"

#include <initializer_list>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace distrt {
namespace {

bool MentionsAny(absl::string_view message,
                 std::initializer_list<absl::string_view> words) {
  const std::string lower = absl::AsciiStrToLower(message);
  for (absl::string_view word : words) {
    if (absl::StrContains(lower, word)) return true;
  }
  return false;
}

// gRPC reports a failed TLS handshake as UNAVAILABLE ("failed to connect to
// all addresses; last error: UNKNOWN: ...: Ssl handshake failed:
// SSL_ERROR_SSL: ... certificate verify failed"), or with the peer's alert
// ("tlsv13 alert certificate required", "tlsv1 alert unknown ca").
bool IsHandshakeFailure(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDeadlineExceeded:
      return MentionsAny(status.message(),
                         {"handshake", "ssl_error", "ssl routines",
                          "certificate", "tlsv1", "tls alert", "unknown ca"});
    default:
      return false;
  }
}

// The peer accepted the TCP connection and closed it while gRPC was setting
// it up, before any HTTP/2: what a TLS server does to a client that fails
// its handshake without saying why (a plain-TCP client, or one without a
// certificate of the job's CA). Nothing listening is "Connection refused"
// instead, and a ps task that dies mid-call closes an established
// connection (no "failed to connect").
bool ClosedWhileConnecting(const absl::Status& status) {
  // DEADLINE_EXCEEDED too: a retry that only timed out quotes the earlier
  // attempt's closed connection (PsTransport's "an earlier attempt: ...").
  return (status.code() == absl::StatusCode::kUnavailable ||
          status.code() == absl::StatusCode::kDeadlineExceeded) &&
         MentionsAny(status.message(), {"failed to connect"}) &&
         MentionsAny(status.message(),
                     {"socket closed", "connection reset", "broken pipe",
                      "end of tcp stream", "connection closed"});
}

}  // namespace

FailureKind ClassifyFailure(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return FailureKind::kRefused;
    default:
      break;
  }
  if (IsHandshakeFailure(status) || ClosedWhileConnecting(status)) {
    return FailureKind::kRefused;
  }
  if (status.code() == absl::StatusCode::kUnavailable ||
      status.code() == absl::StatusCode::kDeadlineExceeded) {
    return FailureKind::kUnreachable;
  }
  return FailureKind::kOther;
}

std::string DescribeFailure(const absl::Status& status, bool client_uses_tls) {
  const absl::string_view message = status.message();
  switch (ClassifyFailure(status)) {
    case FailureKind::kRefused:
      if (IsHandshakeFailure(status)) {
        return absl::StrCat(
            "refused (the TLS handshake failed: ", message,
            "; check --tls_cert, --tls_key and --tls_ca: the ps tasks' "
            "certificates must be signed by --tls_ca, and --tls_cert by the "
            "CA the ps tasks trust)");
      }
      if (ClosedWhileConnecting(status)) {
        return absl::StrCat(
            "refused (the connection was closed before gRPC could use it, as "
            "a TLS server closes a client that fails its handshake: ",
            message,
            client_uses_tls
                ? "; check that --tls_cert and --tls_key are a certificate "
                  "signed by the job's CA)"
                : "; if the job uses TLS, pass --tls_cert, --tls_key and "
                  "--tls_ca)");
      }
      return absl::StrCat("refused (", message, ")");
    case FailureKind::kUnreachable:
      return absl::StrCat("unreachable (", message, ")");
    case FailureKind::kOther:
      break;
  }
  return std::string(message);
}

}  // namespace distrt
