#ifndef DISTRT_RPC_TRANSPORT_SECURITY_FLAGS_H_
#define DISTRT_RPC_TRANSPORT_SECURITY_FLAGS_H_

// The security flags every binary of a job takes: --tls_cert, --tls_key,
// --tls_ca and --cluster_token_file. Flags normally live beside main(); these
// four are defined once here because ps_server, worker, distctl and launch
// must accept them with the same names and meaning (launch passes them on to
// the tasks it starts).

#include <memory>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "rpc/transport_security.h"

ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_ca);
ABSL_DECLARE_FLAG(std::string, cluster_token_file);

namespace distrt::rpc {

// The flags' values.
TransportSecurityOptions TransportSecurityOptionsFromFlags();

// Loads what the flags name (see TransportSecurity::Load).
absl::StatusOr<std::shared_ptr<const TransportSecurity>>
TransportSecurityFromFlags();

// "--tls_cert=...", ... for each option set, to start another binary of the
// job with the same security.
std::vector<std::string> TransportSecurityArgs(
    const TransportSecurityOptions& options);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_TRANSPORT_SECURITY_FLAGS_H_
