#ifndef DISTRT_RPC_TLS_CERTIFICATES_H_
#define DISTRT_RPC_TLS_CERTIFICATES_H_

// A throwaway certificate authority and the certificates it signs, for the
// mutual TLS of one job (see transport_security.h): a launcher makes a CA,
// issues one certificate that names every host its tasks are reached by,
// writes the files the tasks' --tls_ca, --tls_cert and --tls_key read, and
// forgets the CA's key, so that nothing outside the job can be issued a
// certificate that the job trusts.
//
// Keys are ECDSA P-256, signatures ECDSA with SHA-256. Every certificate is
// valid from one hour before it is made (so that a clock a little behind
// the launcher's still accepts it) until `valid_for` after it is made.
//
// Made with OpenSSL's libcrypto; this does not depend on gRPC. Every
// function is thread-safe.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace distrt::rpc {

// A certificate and its private key, in PEM: the certificate
// "-----BEGIN CERTIFICATE-----", the key unencrypted PKCS#8
// "-----BEGIN PRIVATE KEY-----".
struct PemKeyPair {
  std::string certificate_pem;
  std::string private_key_pem;
};

// A new self-signed CA certificate and its key, with subject CN =
// `common_name`, basicConstraints critical CA:TRUE and keyUsage critical
// keyCertSign, cRLSign.
//
// INVALID_ARGUMENT when `common_name` is empty or longer than 64 bytes (the
// limit of X.509) or `valid_for` is not between a second and 100 years;
// INTERNAL, with OpenSSL's errors, when libcrypto fails.
absl::StatusOr<PemKeyPair> GenerateCertificateAuthority(
    absl::string_view common_name, absl::Duration valid_for);

// A new certificate and key for `common_name`, signed by `ca` (made by
// GenerateCertificateAuthority, or any other CA whose key is ECDSA or
// RSA). Every task is both a server and a client of the others, so the
// certificate serves both: extendedKeyUsage serverAuth and clientAuth,
// keyUsage critical digitalSignature, basicConstraints critical CA:FALSE.
// Its subjectAltNames are `hosts`, the names that clients dial and check:
// each one that parses as an IPv4 or IPv6 address ("127.0.0.1", "::1",
// without brackets) becomes an IP name, every other one a DNS name, which
// may start with a wildcard label ("*.default.svc" matches
// "ps-0.default.svc"). The serial number is 128 random bits.
//
// The certificate may outlive `ca`'s; a verifier then refuses it once the
// CA's has expired.
//
// INVALID_ARGUMENT naming the offending input when `ca`'s certificate or key
// is not PEM, the key is not the certificate's, the certificate is not a
// CA's, `hosts` is empty, a host is neither an IP address nor a DNS name
// (letters, digits, '-' and '_' in dot-separated labels, the first of
// which may be "*"), or `common_name` or `valid_for` is out of range as for
// GenerateCertificateAuthority; INTERNAL, with OpenSSL's errors, when
// libcrypto fails.
absl::StatusOr<PemKeyPair> IssueCertificate(
    const PemKeyPair& ca, absl::string_view common_name,
    const std::vector<std::string>& hosts, absl::Duration valid_for);

// Where WriteTlsFiles put each file.
struct TlsFilePaths {
  std::string ca_file;    // "<dir>/ca.pem": for --tls_ca
  std::string cert_file;  // "<dir>/cert.pem": for --tls_cert
  std::string key_file;   // "<dir>/key.pem": for --tls_key
};

// Writes into the existing directory `dir` the files that a task of the job
// reads: ca.pem (`ca`'s certificate only: its key is not written, so a
// reader of the directory cannot issue certificates), cert.pem and key.pem
// (`certificate`'s). Files that exist are replaced. key.pem is created with
// mode 0600 and set to it if it existed with another mode, before anything
// is written to it; the certificates get 0644 less the umask. Symbolic
// links are not followed.
//
// An error names the file and what failed with errno's text, with the code
// errno maps to (NOT_FOUND when `dir` does not exist, PERMISSION_DENIED,
// ...). A failure can leave some of the files written.
absl::StatusOr<TlsFilePaths> WriteTlsFiles(const std::string& dir,
                                           const PemKeyPair& ca,
                                           const PemKeyPair& certificate);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_TLS_CERTIFICATES_H_
