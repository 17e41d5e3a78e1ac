#include "rpc/transport_security.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/support/client_interceptor.h"
#include "rpc/openssl_ptr.h"
#include "runtime/util/status_macros.h"

namespace distrt::rpc {
namespace {

constexpr char kAuthorizationKey[] = "authorization";
constexpr char kBearerPrefix[] = "Bearer ";
constexpr size_t kMinTokenLength = 16;

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", path, ": cannot read the file"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", path, ": the file is empty"));
  }
  return text.str();
}

// A secret file that others on the host can read is no secret, and one they
// can write lets them choose it: refused, as ssh refuses a loose private
// key. stat, not lstat: Kubernetes mounts a secret's files as links.
absl::Status CheckSecretFileMode(const std::string& path,
                                 absl::string_view flag) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, "=", path, ": cannot stat the file: ", std::strerror(errno)));
  }
  if ((info.st_mode & 077) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%s: the file is open to group or others (mode %04o); a secret "
        "must be readable by its owner only: chmod 600 %s",
        flag, path, info.st_mode & 07777, path));
  }
  return absl::OkStatus();
}

// Checks with libcrypto what gRPC would otherwise report only as a failed
// handshake, long after start-up: that each PEM parses and that the key is
// the certificate's.

OpenSslPtr<BIO, BIO_free> MemoryBio(const std::string& pem) {
  return OpenSslPtr<BIO, BIO_free>(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

OpenSslPtr<X509, X509_free> FirstCertificate(const std::string& pem) {
  auto bio = MemoryBio(pem);
  return OpenSslPtr<X509, X509_free>(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

absl::Status CheckTlsFiles(const std::string& cert_pem,
                           const std::string& key_pem,
                           const std::string& ca_pem,
                           const TransportSecurityOptions& where) {
  auto describe = [](absl::string_view flag, const std::string& file) {
    return file.empty() ? std::string(flag) : absl::StrCat(flag, "=", file);
  };
  OpenSslPtr<X509, X509_free> cert = FirstCertificate(cert_pem);
  if (cert == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(describe("--tls_cert", where.tls_cert_file),
                     ": not a PEM certificate"));
  }
  if (FirstCertificate(ca_pem) == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        describe("--tls_ca", where.tls_ca_file), ": not a PEM certificate"));
  }
  auto key_bio = MemoryBio(key_pem);
  OpenSslPtr<EVP_PKEY, EVP_PKEY_free> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(describe("--tls_key", where.tls_key_file),
                     ": not a PEM private key (or one with a passphrase)"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        describe("--tls_key", where.tls_key_file), " is not the key of ",
        describe("--tls_cert", where.tls_cert_file)));
  }
  return absl::OkStatus();
}

bool SameToken(absl::string_view a, absl::string_view b) {
  // Constant time for equal lengths, so that timing tells nothing about how
  // much of a guess was right.
  return a.size() == b.size() &&
         CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

struct CertificateStackFree {
  void operator()(STACK_OF(X509) * stack) const {
    sk_X509_pop_free(stack, X509_free);
  }
};

// Every certificate of a PEM text, in order.
std::vector<OpenSslPtr<X509, X509_free>> Certificates(absl::string_view pem) {
  std::vector<OpenSslPtr<X509, X509_free>> certificates;
  OpenSslPtr<BIO, BIO_free> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (X509* certificate =
             PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certificates.emplace_back(certificate);
  }
  ERR_clear_error();  // the end of the text reads as an error
  return certificates;
}

// Whether a caller's certificate chain is signed by the job's CA, for TLS
// client certificate use. The handshake verifies the chain already (a
// caller without such a certificate never gets a session); this second
// check, per connection and remembered, holds the certificate to TLS-client
// use (extendedKeyUsage clientAuth) and says why it refuses, in case the
// handshake's rules are ever looser than ours.
class CallerCertificateCheck {
 public:
  explicit CallerCertificateCheck(const std::string& ca_pem)
      : store_(X509_STORE_new()) {
    for (auto& certificate : Certificates(ca_pem)) {
      X509_STORE_add_cert(store_.get(), certificate.get());
    }
  }

  // Empty when `chain_pem` (the caller's certificate first) verifies, else
  // why not. Results are remembered per chain: a connection's calls all
  // present the same one, and verifying costs a signature check.
  std::string Verify(const std::string& chain_pem) {
    {
      absl::MutexLock lock(&mu_);
      auto known = verdicts_.find(chain_pem);
      if (known != verdicts_.end()) return known->second;
    }
    std::string verdict = VerifyNow(chain_pem);
    absl::MutexLock lock(&mu_);
    if (verdicts_.size() >= kMaxRemembered) verdicts_.clear();
    verdicts_.emplace(chain_pem, verdict);
    return verdict;
  }

 private:
  static constexpr size_t kMaxRemembered = 1024;

  std::string VerifyNow(const std::string& chain_pem) {
    std::vector<OpenSslPtr<X509, X509_free>> chain = Certificates(chain_pem);
    if (chain.empty()) return "the client certificate is not PEM";
    std::unique_ptr<STACK_OF(X509), CertificateStackFree> intermediates(
        sk_X509_new_null());
    for (size_t i = 1; i < chain.size(); ++i) {
      sk_X509_push(intermediates.get(), chain[i].release());
    }
    OpenSslPtr<X509_STORE_CTX, X509_STORE_CTX_free> context(
        X509_STORE_CTX_new());
    if (context == nullptr ||
        X509_STORE_CTX_init(context.get(), store_.get(), chain[0].get(),
                            intermediates.get()) != 1) {
      ERR_clear_error();
      return "cannot check the client certificate (out of memory?)";
    }
    // A certificate meant for TLS clients (extendedKeyUsage clientAuth).
    X509_STORE_CTX_set_purpose(context.get(), X509_PURPOSE_SSL_CLIENT);
    const int ok = X509_verify_cert(context.get());
    const int error = X509_STORE_CTX_get_error(context.get());
    ERR_clear_error();
    if (ok == 1) return "";
    char subject[256] = "";
    X509_NAME_oneline(X509_get_subject_name(chain[0].get()), subject,
                      sizeof(subject));
    return absl::StrCat("client certificate ", subject,
                        " is not accepted by this job's CA (--tls_ca): ",
                        X509_verify_cert_error_string(error));
  }

  const OpenSslPtr<X509_STORE, X509_STORE_free> store_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> verdicts_ ABSL_GUARDED_BY(mu_);
};

// Refuses, before any handler runs, every call from outside the job: with
// TLS, one without a certificate signed by the job's CA; with a token, one
// that does not carry it. gRPC runs it on every call, whatever the service.
class CallerCheck : public grpc::AuthMetadataProcessor {
 public:
  CallerCheck(const std::string& ca_pem, std::string token)
      : token_(std::move(token)) {
    if (!ca_pem.empty()) {
      certificates_ = std::make_unique<CallerCertificateCheck>(ca_pem);
    }
  }

  // Comparing a string is quick, and a certificate is verified once per
  // connection: no need for gRPC's extra thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata,
                       grpc::AuthContext* context, OutputMetadata* consumed,
                       OutputMetadata*) override {
    if (certificates_ != nullptr) {
      // The caller's own certificate, then what else it sent, as
      // intermediates: on a server, gRPC's chain property (OpenSSL's
      // SSL_get_peer_cert_chain) lacks the caller's own.
      std::vector<grpc::string_ref> certificate =
          context->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
      if (certificate.empty()) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "this server requires a TLS client certificate "
                            "signed by the job's CA (--tls_cert)");
      }
      std::string chain_pem(certificate.front().data(),
                            certificate.front().size());
      for (const grpc::string_ref& more : context->FindPropertyValues(
               GRPC_X509_PEM_CERT_CHAIN_PROPERTY_NAME)) {
        chain_pem.append(more.data(), more.size());
      }
      const std::string refused = certificates_->Verify(chain_pem);
      if (!refused.empty()) {
        return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, refused);
      }
    }
    if (token_.empty()) return grpc::Status::OK;
    auto found = metadata.find(kAuthorizationKey);
    if (found == metadata.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "this server requires the cluster token "
                          "(--cluster_token_file) with every call");
    }
    const absl::string_view value(found->second.data(), found->second.size());
    if (!absl::StartsWith(value, kBearerPrefix) ||
        !SameToken(value.substr(sizeof(kBearerPrefix) - 1), token_)) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "wrong cluster token (--cluster_token_file)");
    }
    consumed->insert(std::make_pair(
        std::string(found->first.data(), found->first.size()),
        std::string(found->second.data(), found->second.size())));
    return grpc::Status::OK;
  }

 private:
  const std::string token_;
  std::unique_ptr<CallerCertificateCheck> certificates_;  // null: no TLS
};

// Adds the token to every call a channel sends. An interceptor rather than
// call credentials: gRPC refuses call credentials on a channel without TLS,
// and the token must also work there.
class TokenSender : public grpc::experimental::Interceptor {
 public:
  explicit TokenSender(const std::string* header) : header_(header) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert(
          std::make_pair(kAuthorizationKey, *header_));
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;  // owned by the factory, which outlives calls
};

class TokenSenderFactory
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit TokenSenderFactory(const std::string& token)
      : header_(absl::StrCat(kBearerPrefix, token)) {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new TokenSender(&header_);
  }

 private:
  const std::string header_;
};

}  // namespace

TransportSecurity::TransportSecurity(std::string cert_pem, std::string key_pem,
                                     std::string ca_pem, std::string token)
    : cert_pem_(std::move(cert_pem)),
      key_pem_(std::move(key_pem)),
      ca_pem_(std::move(ca_pem)),
      token_(std::move(token)) {}

std::shared_ptr<const TransportSecurity> TransportSecurity::Insecure() {
  return std::shared_ptr<const TransportSecurity>(
      new TransportSecurity("", "", "", ""));
}

namespace {

absl::Status TokenNeedsTls() {
  return absl::InvalidArgumentError(
      "--cluster_token_file needs TLS (--tls_cert, --tls_key, --tls_ca): "
      "without it the token would cross the network in clear text");
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TransportSecurity>>
TransportSecurity::Load(const TransportSecurityOptions& options) {
  const bool any_tls = !options.tls_cert_file.empty() ||
                       !options.tls_key_file.empty() ||
                       !options.tls_ca_file.empty();
  std::string cert_pem, key_pem, ca_pem, token;
  if (any_tls) {
    std::vector<std::string> missing;
    if (options.tls_cert_file.empty()) missing.push_back("--tls_cert");
    if (options.tls_key_file.empty()) missing.push_back("--tls_key");
    if (options.tls_ca_file.empty()) missing.push_back("--tls_ca");
    if (!missing.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS needs --tls_cert, --tls_key and --tls_ca "
                       "together; missing ",
                       absl::StrJoin(missing, ", ")));
    }
    ASSIGN_OR_RETURN(std::string cert,
                     ReadFile(options.tls_cert_file, "--tls_cert"));
    ASSIGN_OR_RETURN(std::string key,
                     ReadFile(options.tls_key_file, "--tls_key"));
    RETURN_IF_ERROR(CheckSecretFileMode(options.tls_key_file, "--tls_key"));
    ASSIGN_OR_RETURN(std::string ca, ReadFile(options.tls_ca_file, "--tls_ca"));
    RETURN_IF_ERROR(CheckTlsFiles(cert, key, ca, options));
    cert_pem = std::move(cert);
    key_pem = std::move(key);
    ca_pem = std::move(ca);
  }
  if (!options.cluster_token_file.empty()) {
    if (!any_tls) return TokenNeedsTls();
    ASSIGN_OR_RETURN(std::string text, ReadFile(options.cluster_token_file,
                                                "--cluster_token_file"));
    RETURN_IF_ERROR(CheckSecretFileMode(options.cluster_token_file,
                                        "--cluster_token_file"));
    token = std::string(absl::StripAsciiWhitespace(text));
    if (token.size() < kMinTokenLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("--cluster_token_file=", options.cluster_token_file,
                       ": the token must have at least ", kMinTokenLength,
                       " characters (e.g. head -c 32 /dev/urandom | base64)"));
    }
    for (char c : token) {
      // It goes into an HTTP/2 header value.
      if (c < 0x21 || c > 0x7e) {
        return absl::InvalidArgumentError(
            absl::StrCat("--cluster_token_file=", options.cluster_token_file,
                         ": the token must be printable ASCII without spaces"));
      }
    }
  }
  return std::shared_ptr<const TransportSecurity>(
      new TransportSecurity(std::move(cert_pem), std::move(key_pem),
                            std::move(ca_pem), std::move(token)));
}

absl::StatusOr<std::shared_ptr<const TransportSecurity>>
TransportSecurity::FromPem(std::string cert_pem, std::string key_pem,
                           std::string ca_pem, std::string cluster_token) {
  if (!cert_pem.empty() || !key_pem.empty() || !ca_pem.empty()) {
    RETURN_IF_ERROR(CheckTlsFiles(cert_pem, key_pem, ca_pem, {}));
  } else if (!cluster_token.empty()) {
    return TokenNeedsTls();
  }
  return std::shared_ptr<const TransportSecurity>(
      new TransportSecurity(std::move(cert_pem), std::move(key_pem),
                            std::move(ca_pem), std::move(cluster_token)));
}

std::string TransportSecurity::Description() const {
  return absl::StrCat(uses_tls() ? "mutual TLS" : "no TLS",
                      uses_token() ? ", cluster token" : ", no cluster token");
}

std::shared_ptr<grpc::ServerCredentials> TransportSecurity::ServerCredentials()
    const {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (uses_tls()) {
    // The handshake itself requires a certificate of the job's CA, so that
    // a stranger never gets as far as an HTTP/2 session to hold open (his
    // client reports a failed handshake, as UNAVAILABLE). CallerCheck
    // verifies the chain again per connection (see CallerCertificateCheck).
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = ca_pem_;
    ssl.pem_key_cert_pairs.push_back({key_pem_, cert_pem_});
    credentials = grpc::SslServerCredentials(ssl);
  } else {
    // gRPC runs no AuthMetadataProcessor on a plain-TCP server (it aborts
    // when one is set), hence Load's refusal of a token without TLS.
    return grpc::InsecureServerCredentials();
  }
  if (uses_tls() || uses_token()) {
    credentials->SetAuthMetadataProcessor(
        std::make_shared<CallerCheck>(ca_pem_, token_));
  }
  return credentials;
}

std::shared_ptr<grpc::Channel> TransportSecurity::NewChannel(
    const std::string& address, const grpc::ChannelArguments& args) const {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (uses_tls()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ca_pem_;
    ssl.pem_private_key = key_pem_;
    ssl.pem_cert_chain = cert_pem_;
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  if (!uses_token()) {
    return grpc::CreateCustomChannel(address, credentials, args);
  }
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<TokenSenderFactory>(token_));
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address, credentials, args, std::move(interceptors));
}

std::shared_ptr<grpc::Channel> TransportSecurity::NewChannel(
    const std::string& address) const {
  return NewChannel(address, grpc::ChannelArguments());
}

}  // namespace distrt::rpc
