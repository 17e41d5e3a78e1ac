#ifndef DISTRT_CLIENT_FAILURE_DESCRIPTION_H_
#define DISTRT_CLIENT_FAILURE_DESCRIPTION_H_

// How distctl tells a refusal from a ps task that did not answer. A call
// that failed is one of:
//
//   refused      something answered and said no: the cluster token or the
//                client's certificate was refused (UNAUTHENTICATED,
//                PERMISSION_DENIED), the TLS handshake failed (gRPC's
//                UNAVAILABLE or UNKNOWN with "handshake", "SSL",
//                "certificate" or a TLS alert in its message), or the
//                connection was accepted and closed while gRPC set it up
//                ("failed to connect ... Socket closed": what a TLS
//                server does to a plain-TCP client, or to one whose
//                certificate it refuses in the handshake);
//   unreachable  nothing answered (UNAVAILABLE, DEADLINE_EXCEEDED): no
//                server at the address ("Connection refused"), none within
//                the deadline, or the task went away mid-call;
//   other        the task answered with an error of the request itself
//                (NOT_FOUND for an unknown variable, ...).

#include <string>

#include "absl/status/status.h"

namespace distrt {

enum class FailureKind { kRefused, kUnreachable, kOther };

FailureKind ClassifyFailure(const absl::Status& status);

// The text distctl prints for a failed call: "refused (WHY)",
// "unreachable (WHY)", or for other errors the message alone. WHY is the
// status's message, with advice on the flags to check for a failed TLS
// handshake or a closed connection. `client_uses_tls`: whether distctl was
// given --tls_cert/--tls_key/--tls_ca (the advice differs).
std::string DescribeFailure(const absl::Status& status, bool client_uses_tls);

}  // namespace distrt

#endif  // DISTRT_CLIENT_FAILURE_DESCRIPTION_H_
