#include "rpc/transport_security_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate of this process, signed by --tls_ca; with "
          "--tls_key and --tls_ca, every connection of the job uses mutual "
          "TLS. Its subjectAltNames must name the host of each address it "
          "serves on (as TF_CONFIG writes it).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM certificate of the CA that signs every task's certificate; a "
          "peer with any other certificate, or none, is refused.");
ABSL_FLAG(std::string, cluster_token_file, "",
          "File holding the job's shared secret (at least 16 printable "
          "characters), sent with every RPC and required of every caller: "
          "UNAUTHENTICATED without it, PERMISSION_DENIED with another.");

namespace distrt::rpc {

TransportSecurityOptions TransportSecurityOptionsFromFlags() {
  TransportSecurityOptions options;
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  options.cluster_token_file = absl::GetFlag(FLAGS_cluster_token_file);
  return options;
}

absl::StatusOr<std::shared_ptr<const TransportSecurity>>
TransportSecurityFromFlags() {
  return TransportSecurity::Load(TransportSecurityOptionsFromFlags());
}

std::vector<std::string> TransportSecurityArgs(
    const TransportSecurityOptions& options) {
  std::vector<std::string> args;
  auto add = [&](const char* flag, const std::string& value) {
    if (!value.empty()) args.push_back(absl::StrCat("--", flag, "=", value));
  };
  add("tls_cert", options.tls_cert_file);
  add("tls_key", options.tls_key_file);
  add("tls_ca", options.tls_ca_file);
  add("cluster_token_file", options.cluster_token_file);
  return args;
}

}  // namespace distrt::rpc
