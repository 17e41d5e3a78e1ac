#include "rpc/transport_security.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/ps_grpc_server.h"
#include "rpc/tls_certificates.h"
#include "runtime/util/test_dir.h"

namespace distrt::rpc {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "0123456789abcdef-job-token";
// An IP name: dialling "localhost" makes gRPC resolve it through c-ares,
// which leaks a few bytes that LeakSanitizer reports under --config=asan.
constexpr char kHost[] = "127.0.0.1";

// A job's CA and one certificate of it for `kHost` (and loopback's
// addresses), usable by servers and clients alike.
struct Credentials {
  PemKeyPair ca;
  PemKeyPair task;
};

Credentials MakeCredentials(const std::string& ca_name) {
  absl::StatusOr<PemKeyPair> ca =
      GenerateCertificateAuthority(ca_name, absl::Hours(1));
  EXPECT_TRUE(ca.ok()) << ca.status();
  absl::StatusOr<PemKeyPair> task = IssueCertificate(
      *ca, "task", {"localhost", kHost, "::1"}, absl::Hours(1));
  EXPECT_TRUE(task.ok()) << task.status();
  return {*ca, *task};
}

std::shared_ptr<const TransportSecurity> Security(const Credentials& c,
                                                  const std::string& token) {
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> security =
      TransportSecurity::FromPem(c.task.certificate_pem, c.task.private_key_pem,
                                 c.ca.certificate_pem, token);
  EXPECT_TRUE(security.ok()) << security.status();
  return *security;
}

class SecureServerTest : public ::testing::Test {
 protected:
  void StartServer(std::shared_ptr<const TransportSecurity> security) {
    PsGrpcServer::Options options;
    options.listen_address = "127.0.0.1:0";
    options.security = std::move(security);
    absl::StatusOr<std::unique_ptr<PsGrpcServer>> server =
        PsGrpcServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  std::string Address() const {
    return absl::StrCat(kHost, ":", server_->port());
  }

  // Creates a variable through `channel`; the call's status.
  static grpc::Status CreateVariable(std::shared_ptr<grpc::Channel> channel,
                                     const std::string& name,
                                     const std::string& extra_token = "") {
    auto stub = ps::ParameterServer::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    if (!extra_token.empty()) {
      context.AddMetadata("authorization", "Bearer " + extra_token);
    }
    ps::CreateVariableRequest request;
    request.mutable_spec()->set_name(name);
    request.mutable_spec()->add_shape(4);
    ps::VariableInfo info;
    return stub->CreateVariable(&context, request, &info);
  }

  // The names of the variables the server holds, asked by `channel`.
  static std::vector<std::string> VariableNames(
      std::shared_ptr<grpc::Channel> channel) {
    auto stub = ps::ParameterServer::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    ps::ListVariablesResponse response;
    grpc::Status status =
        stub->ListVariables(&context, ps::ListVariablesRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<std::string> names;
    for (const ps::VariableInfo& info : response.variables()) {
      names.push_back(info.spec().name());
    }
    return names;
  }

  std::unique_ptr<PsGrpcServer> server_;
};

TEST_F(SecureServerTest, JobMemberIsServed) {
  const Credentials job = MakeCredentials("job CA");
  StartServer(Security(job, kToken));
  std::shared_ptr<const TransportSecurity> client = Security(job, kToken);
  grpc::Status status = CreateVariable(client->NewChannel(Address()), "w");
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(VariableNames(client->NewChannel(Address())),
              ::testing::ElementsAre("w"));
}

// The handshake itself requires a certificate of the job's CA: a stranger
// never gets an HTTP/2 session (nor a server thread's time) to hold. His
// client sees the connection closed, as UNAVAILABLE.
TEST_F(SecureServerTest, CallerWithoutCertificateFailsTheHandshake) {
  const Credentials job = MakeCredentials("job CA");
  StartServer(Security(job, kToken));
  grpc::SslCredentialsOptions no_certificate;
  no_certificate.pem_root_certs = job.ca.certificate_pem;
  auto channel =
      grpc::CreateChannel(Address(), grpc::SslCredentials(no_certificate));
  grpc::Status status = CreateVariable(channel, "intruder", kToken);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(
      VariableNames(Security(job, kToken)->NewChannel(Address())).empty());
}

TEST_F(SecureServerTest, CertificateOfAnotherCaFailsTheHandshake) {
  const Credentials job = MakeCredentials("job CA");
  const Credentials other = MakeCredentials("other CA");
  StartServer(Security(job, kToken));
  // It trusts the job's CA for the server, but its own certificate is the
  // other CA's.
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> intruder =
      TransportSecurity::FromPem(other.task.certificate_pem,
                                 other.task.private_key_pem,
                                 job.ca.certificate_pem, kToken);
  ASSERT_TRUE(intruder.ok()) << intruder.status();
  grpc::Status status =
      CreateVariable((*intruder)->NewChannel(Address()), "intruder");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(
      VariableNames(Security(job, kToken)->NewChannel(Address())).empty());
}

TEST_F(SecureServerTest, WrongTokenIsPermissionDenied) {
  const Credentials job = MakeCredentials("job CA");
  StartServer(Security(job, kToken));
  grpc::Status status = CreateVariable(
      Security(job, "another-token-of-16+chars")->NewChannel(Address()),
      "intruder");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("cluster token"));
  EXPECT_TRUE(
      VariableNames(Security(job, kToken)->NewChannel(Address())).empty());
}

TEST_F(SecureServerTest, MissingTokenIsUnauthenticated) {
  const Credentials job = MakeCredentials("job CA");
  StartServer(Security(job, kToken));
  grpc::Status status =
      CreateVariable(Security(job, "")->NewChannel(Address()), "intruder");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("cluster token"));
}

TEST_F(SecureServerTest, PlainTcpCallerNeverReachesTheService) {
  const Credentials job = MakeCredentials("job CA");
  StartServer(Security(job, kToken));
  grpc::Status status = CreateVariable(
      grpc::CreateChannel(Address(), grpc::InsecureChannelCredentials()),
      "intruder", kToken);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(
      VariableNames(Security(job, kToken)->NewChannel(Address())).empty());
}

// A stranger who connects and never starts the handshake holds a socket
// for the server's handshake timeout (10 s), not gRPC's default 2 minutes.
TEST_F(SecureServerTest, ASilentConnectionIsClosedAfterTheHandshakeTimeout) {
  const Credentials job = MakeCredentials("job CA");
  StartServer(Security(job, kToken));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(server_->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  // Reads give up after 30 s, so a server that never closes fails the test
  // rather than hanging it.
  const timeval limit = {30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  const absl::Time start = absl::Now();
  char byte;
  const ssize_t n = recv(fd, &byte, 1, 0);
  const absl::Duration held = absl::Now() - start;
  close(fd);
  EXPECT_LE(n, 0) << "the server sent bytes to a client that said nothing";
  EXPECT_LT(held, absl::Seconds(25));
  // The job's own callers are served all the while.
  EXPECT_TRUE(
      VariableNames(Security(job, kToken)->NewChannel(Address())).empty());
}

TEST_F(SecureServerTest, TokenNeedsTls) {
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> token_only =
      TransportSecurity::FromPem("", "", "", kToken);
  EXPECT_EQ(token_only.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(token_only.status().message(), HasSubstr("needs TLS"));
}

class LoadTest : public ::testing::Test {
 protected:
  // Private (0600), as a key or token must be; LooseSecretFilesAreRefused
  // opens them up.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.WriteFile(name, text);
    EXPECT_EQ(chmod(path.c_str(), 0600), 0) << path;
    return path;
  }

  TestDir dir_;
};

// A key or token that others on the host may read (or write) is refused,
// as ssh refuses a loose private key, naming the flag, the file and the fix.
TEST_F(LoadTest, LooseSecretFilesAreRefused) {
  const Credentials job = MakeCredentials("job CA");
  TransportSecurityOptions options;
  options.tls_cert_file = Write("cert.pem", job.task.certificate_pem);
  options.tls_key_file = Write("key.pem", job.task.private_key_pem);
  options.tls_ca_file = Write("ca.pem", job.ca.certificate_pem);
  options.cluster_token_file = Write("token", kToken);
  ASSERT_TRUE(TransportSecurity::Load(options).ok());

  for (mode_t loose : {0640, 0604, 0620, 0602}) {
    ASSERT_EQ(chmod(options.cluster_token_file.c_str(), loose), 0);
    absl::StatusOr<std::shared_ptr<const TransportSecurity>> security =
        TransportSecurity::Load(options);
    ASSERT_FALSE(security.ok()) << std::oct << loose;
    EXPECT_EQ(security.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(security.status().message(),
                HasSubstr("--cluster_token_file=" + options.cluster_token_file +
                          ": the file is open to group or others"));
    EXPECT_THAT(security.status().message(),
                HasSubstr("chmod 600 " + options.cluster_token_file));
  }
  ASSERT_EQ(chmod(options.cluster_token_file.c_str(), 0400), 0);
  ASSERT_EQ(chmod(options.tls_key_file.c_str(), 0644), 0);
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> security =
      TransportSecurity::Load(options);
  ASSERT_FALSE(security.ok());
  EXPECT_THAT(security.status().message(),
              HasSubstr("--tls_key=" + options.tls_key_file +
                        ": the file is open to group or others (mode 0644)"));
  // The certificates are public: their modes do not matter.
  ASSERT_EQ(chmod(options.tls_key_file.c_str(), 0600), 0);
  ASSERT_EQ(chmod(options.tls_cert_file.c_str(), 0644), 0);
  ASSERT_EQ(chmod(options.tls_ca_file.c_str(), 0644), 0);
  EXPECT_TRUE(TransportSecurity::Load(options).ok());
}

TEST_F(LoadTest, NothingGivenIsInsecure) {
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> security =
      TransportSecurity::Load({});
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_FALSE((*security)->uses_tls());
  EXPECT_FALSE((*security)->uses_token());
}

TEST_F(LoadTest, ReadsEveryFile) {
  const Credentials job = MakeCredentials("job CA");
  TransportSecurityOptions options;
  options.tls_cert_file = Write("cert.pem", job.task.certificate_pem);
  options.tls_key_file = Write("key.pem", job.task.private_key_pem);
  options.tls_ca_file = Write("ca.pem", job.ca.certificate_pem);
  options.cluster_token_file = Write("token", std::string(kToken) + "\n");
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> security =
      TransportSecurity::Load(options);
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_TRUE((*security)->uses_tls());
  EXPECT_TRUE((*security)->uses_token());
  EXPECT_EQ((*security)->Description(), "mutual TLS, cluster token");
}

TEST_F(LoadTest, PartialTlsNamesTheMissingFlags) {
  TransportSecurityOptions options;
  options.tls_cert_file = Write("cert.pem", "x");
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> security =
      TransportSecurity::Load(options);
  EXPECT_EQ(security.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(security.status().message(),
              HasSubstr("missing --tls_key, --tls_ca"));
}

TEST_F(LoadTest, TokenWithoutTlsIsRefused) {
  TransportSecurityOptions options;
  options.cluster_token_file = Write("token", kToken);
  EXPECT_THAT(TransportSecurity::Load(options).status().message(),
              HasSubstr("--cluster_token_file needs TLS"));
}

TEST_F(LoadTest, BadFilesAreNamed) {
  const Credentials job = MakeCredentials("job CA");
  const Credentials other = MakeCredentials("other CA");
  TransportSecurityOptions options;
  options.tls_cert_file = Write("cert.pem", job.task.certificate_pem);
  options.tls_key_file = Write("key.pem", other.task.private_key_pem);
  options.tls_ca_file = Write("ca.pem", job.ca.certificate_pem);
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> security =
      TransportSecurity::Load(options);
  EXPECT_EQ(security.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(security.status().message(),
              HasSubstr(absl::StrCat("--tls_key=", options.tls_key_file,
                                     " is not the key of --tls_cert=")));

  options.tls_key_file = Write("key.pem", job.task.private_key_pem);
  options.tls_ca_file = Write("ca.pem", "not a certificate");
  security = TransportSecurity::Load(options);
  EXPECT_THAT(security.status().message(),
              HasSubstr(absl::StrCat("--tls_ca=", options.tls_ca_file,
                                     ": not a PEM certificate")));

  options.tls_ca_file = dir_.path() + "/missing.pem";
  security = TransportSecurity::Load(options);
  EXPECT_THAT(security.status().message(),
              HasSubstr(absl::StrCat("--tls_ca=", options.tls_ca_file,
                                     ": cannot read the file")));
}

TEST_F(LoadTest, WeakTokensAreRefused) {
  const Credentials job = MakeCredentials("job CA");
  TransportSecurityOptions options;
  options.tls_cert_file = Write("cert.pem", job.task.certificate_pem);
  options.tls_key_file = Write("key.pem", job.task.private_key_pem);
  options.tls_ca_file = Write("ca.pem", job.ca.certificate_pem);
  options.cluster_token_file = Write("short", "secret\n");
  EXPECT_THAT(TransportSecurity::Load(options).status().message(),
              HasSubstr("at least 16 characters"));
  options.cluster_token_file = Write("spaces", "a token with spaces in it");
  EXPECT_THAT(TransportSecurity::Load(options).status().message(),
              HasSubstr("printable ASCII without spaces"));
  options.cluster_token_file = Write("empty", "");
  EXPECT_THAT(TransportSecurity::Load(options).status().message(),
              HasSubstr("the file is empty"));
}

}  // namespace
}  // namespace distrt::rpc
