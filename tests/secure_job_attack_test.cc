// A secure job (`launch --secure --rpc_layer=grpc+tcp`: mutual TLS and a
// cluster token on the ps task's gRPC port and on its TCP data plane),
// attacked while it runs as a stranger on the same host would: plain TCP,
// TLS without a certificate, a certificate of another CA, the job's own
// certificate with a wrong token or none, and a flood of idle connections
// on the data plane. Each attack must be refused in the way
// docs/security.md says, change nothing, and leave the job to train to its
// usual quality (exit 0, eval_accuracy above 0.8, as launch_test checks).
// A secure multi-worker mirrored job is attacked the same way on the
// chief's rendezvous and on a worker's TLS ring listener while the ring
// forms.
//
// Nothing here waits on time. The test reads launch's output: as soon as
// launch says it started the chief and the worker, they are paused
// (SIGSTOP), so the job cannot finish while the ps task is probed; the
// probes go to the addresses the ps task prints, and the job is resumed
// (SIGCONT) once they are done. (In the multi-worker job, worker:1 is
// paused, so that the ring cannot form; the probes go to the address
// worker:2 published in the rendezvous.) Every socket and call has a
// deadline; every process launch started dies with it (Subprocess kills
// launch, its tasks have PR_SET_PDEATHSIG).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/ps_service.grpc.pb.h"
#include "proto/rendezvous.grpc.pb.h"
#include "rpc/data_plane_connection.h"
#include "rpc/data_plane_tls.h"
#include "rpc/data_plane_wire.h"
#include "rpc/openssl_ptr.h"
#include "rpc/ps_methods.h"
#include "rpc/rendezvous_client.h"
#include "rpc/tls_certificates.h"
#include "rpc/tls_ring_collective.h"
#include "rpc/transport_security.h"
#include "runtime/collective/kv_store.h"
#include "runtime/util/file_system.h"
#include "runtime/util/test_dir.h"
#include "tests/util/byte_buffers.h"
#include "tests/util/launch_jobs.h"
#include "tests/util/loopback_socket.h"
#include "tests/util/subprocess.h"

namespace distrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Enough to reach the quality launch_test asks for; the job is paused
// while it is probed, so its length need not cover the probes.
constexpr int kTrainSteps = 2000;
constexpr absl::Duration kLineTimeout = absl::Minutes(1);
constexpr absl::Duration kJobTimeout = absl::Minutes(4);
// One probe: a refusal comes at once (a closed connection, an error in
// the hello); this bounds one that would not come.
constexpr absl::Duration kProbeTimeout = absl::Seconds(10);
constexpr absl::Duration kFloodTimeout = absl::Seconds(30);
// Idle plain TCP connections, from this many loopback sources: more than
// the data plane keeps from one source (16) and in all (64).
constexpr int kFloodConnections = 600;
constexpr int kFloodSources = 10;
constexpr char kHost[] = "127.0.0.1";
constexpr char kWrongToken[] = "a-token-of-sixteen-or-more-guessed";
// The multi-worker job: as long as launch_test's, which reaches this
// quality. Its workers' ring publishes "<prefix>/<rank>" in the chief's
// rendezvous (distribute/worker_group.cc).
constexpr int kRingJobSteps = 500;
constexpr double kRingJobAccuracy = 0.85;
constexpr char kRingPrefix[] = "mwms/ring";
constexpr int kRingSize = 3;
// How long a stranger's own ring (rpc::TlsRingCollective::Create) waits:
// for its answer from the listener it probes, which comes within
// milliseconds, and for a neighbour of its own, who never comes, so that
// each such probe lasts this long.
constexpr absl::Duration kRingStrangerWait = absl::Seconds(5);

std::chrono::system_clock::time_point CallDeadline() {
  return absl::ToChronoTime(absl::Now() + kProbeTimeout);
}

// A socket that is closed when this goes out of scope.
class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) close(fd_);
  }
  ScopedFd(ScopedFd&& other) : fd_(other.fd_) { other.fd_ = -1; }
  ScopedFd& operator=(ScopedFd&&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

sockaddr_in Ipv4(const char* address, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  EXPECT_EQ(inet_pton(AF_INET, address, &a.sin_addr), 1) << address;
  return a;
}

// A blocking TCP connection to kHost:`port` whose sends and receives give
// up after kProbeTimeout (EAGAIN).
absl::StatusOr<ScopedFd> ConnectBlocking(int port) {
  ScopedFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::InternalError("socket() failed");
  const timeval limit = absl::ToTimeval(kProbeTimeout);
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  const sockaddr_in to = Ipv4(kHost, port);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof(to)) !=
      0) {
    return absl::UnavailableError(
        absl::StrCat("connect to port ", port, ": errno ", errno));
  }
  return fd;
}

// What follows `before` in `line` up to the next " (": an address in the
// ps task's start-up lines.
std::string Between(const std::string& line, const std::string& before) {
  const size_t start = line.find(before);
  if (start == std::string::npos) return "";
  const size_t from = start + before.size();
  const size_t end = line.find(" (", from);
  return line.substr(from, end == std::string::npos ? end : end - from);
}

// What a member of the job holds (its certificate, key and CA, and the
// token), as launch wrote them for one of its tasks.
struct JobSecrets {
  std::string dir;  // JOB_DIR/security/<task>, e.g. chief-0
  std::string token_file;
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  std::string token;
};

JobSecrets ReadJobSecrets(const std::string& job_dir,
                          const std::string& task = "chief-0") {
  JobSecrets s;
  s.dir = job_dir + "/security/" + task;
  s.token_file = job_dir + "/security/token";
  for (auto [path, text] : {std::pair{s.dir + "/ca.pem", &s.ca_pem},
                            std::pair{s.dir + "/cert.pem", &s.cert_pem},
                            std::pair{s.dir + "/key.pem", &s.key_pem},
                            std::pair{s.token_file, &s.token}}) {
    absl::StatusOr<std::string> read = ReadFileToString(path);
    EXPECT_TRUE(read.ok()) << read.status();
    if (read.ok()) *text = *read;
  }
  s.token = std::string(absl::StripAsciiWhitespace(s.token));
  return s;
}

// The job's member as its tasks load it: `secrets`' files.
std::shared_ptr<const rpc::TransportSecurity> MemberSecurity(
    const JobSecrets& secrets) {
  absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> security =
      rpc::TransportSecurity::Load(
          {secrets.dir + "/cert.pem", secrets.dir + "/key.pem",
           secrets.dir + "/ca.pem", secrets.token_file});
  EXPECT_TRUE(security.ok()) << security.status();
  return security.ok() ? *security : nullptr;
}

// A certificate and key for kHost that another CA signed.
rpc::PemKeyPair ForeignCertificate() {
  absl::StatusOr<rpc::PemKeyPair> ca =
      rpc::GenerateCertificateAuthority("an attacker's CA", absl::Hours(1));
  EXPECT_TRUE(ca.ok()) << ca.status();
  if (!ca.ok()) return {};
  absl::StatusOr<rpc::PemKeyPair> issued = rpc::IssueCertificate(
      *ca, "attacker", {kHost, "localhost"}, absl::Hours(1));
  EXPECT_TRUE(issued.ok()) << issued.status();
  return issued.ok() ? *issued : rpc::PemKeyPair{};
}

// An attacker's calls on a gRPC port of the job over `channel`, `token`
// (when set) in their metadata as the job's tasks send it; `tag` names what
// they would leave behind. The answer to each call.
using GrpcAttack = std::function<std::vector<grpc::Status>(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
    const std::string& tag)>;

// A call's deadline, and `token` (when set) as the job's tasks send it.
void SetUpCall(const std::string& token, grpc::ClientContext* context) {
  context->set_deadline(CallDeadline());
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

// On the ps task's port: create a variable named `tag`, then shut the task
// down.
std::vector<grpc::Status> AttackPs(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
    const std::string& tag) {
  auto stub = ps::ParameterServer::NewStub(channel);
  std::vector<grpc::Status> answers;
  {
    grpc::ClientContext context;
    SetUpCall(token, &context);
    ps::CreateVariableRequest request;
    request.mutable_spec()->set_name(tag);
    request.mutable_spec()->add_shape(4);
    ps::VariableInfo info;
    answers.push_back(stub->CreateVariable(&context, request, &info));
  }
  {
    grpc::ClientContext context;
    SetUpCall(token, &context);
    ps::ShutdownRequest request;
    request.set_reason("an attacker asks");
    ps::ShutdownResponse response;
    answers.push_back(stub->Shutdown(&context, request, &response));
  }
  return answers;
}

// On the chief's rendezvous: take rank 1's place in the workers' ring (its
// address, pointing nowhere), read worker 2's ring address, and count under
// `tag`.
std::vector<grpc::Status> AttackRendezvous(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
    const std::string& tag) {
  auto stub = rendezvous::Rendezvous::NewStub(channel);
  std::vector<grpc::Status> answers;
  {
    grpc::ClientContext context;
    SetUpCall(token, &context);
    rendezvous::SetRequest request;
    request.set_key(absl::StrCat(kRingPrefix, "/1"));
    request.set_value(absl::StrCat(kHost, ":1"));
    rendezvous::SetResponse response;
    answers.push_back(stub->Set(&context, request, &response));
  }
  {
    grpc::ClientContext context;
    SetUpCall(token, &context);
    rendezvous::GetRequest request;
    request.add_keys(absl::StrCat(kRingPrefix, "/2"));
    rendezvous::GetResponse response;
    answers.push_back(stub->Get(&context, request, &response));
  }
  {
    grpc::ClientContext context;
    SetUpCall(token, &context);
    rendezvous::AddRequest request;
    request.set_key(tag);
    request.set_delta(1);
    rendezvous::AddResponse response;
    answers.push_back(stub->Add(&context, request, &response));
  }
  return answers;
}

void ExpectRefused(const std::vector<grpc::Status>& answers,
                   grpc::StatusCode code, const std::string& message = "") {
  for (const grpc::Status& s : answers) {
    EXPECT_EQ(s.error_code(), code) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(message));
  }
}

// The strangers of docs/security.md's table at the gRPC port `address` (a ps
// task's, or the chief's rendezvous): plain TCP, TLS without a certificate
// and another CA's certificate (each with the right token) are refused in
// the handshake; the job's own certificate with a wrong token, or none, by
// the token check, before any method runs.
void ExpectGrpcPortRefusesStrangers(const std::string& address,
                                    const JobSecrets& secrets,
                                    const GrpcAttack& attack) {
  {
    SCOPED_TRACE("plain TCP, with the right token");
    ExpectRefused(
        attack(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()),
               secrets.token, "attack/plain"),
        grpc::StatusCode::UNAVAILABLE);
  }
  {
    SCOPED_TRACE("TLS without a certificate, with the right token");
    grpc::SslCredentialsOptions no_certificate;
    no_certificate.pem_root_certs = secrets.ca_pem;
    ExpectRefused(attack(grpc::CreateChannel(
                             address, grpc::SslCredentials(no_certificate)),
                         secrets.token, "attack/no-certificate"),
                  grpc::StatusCode::UNAVAILABLE);
  }
  {
    SCOPED_TRACE("another CA's certificate, with the right token");
    const rpc::PemKeyPair foreign = ForeignCertificate();
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = secrets.ca_pem;
    options.pem_cert_chain = foreign.certificate_pem;
    options.pem_private_key = foreign.private_key_pem;
    ExpectRefused(
        attack(grpc::CreateChannel(address, grpc::SslCredentials(options)),
               secrets.token, "attack/foreign-ca"),
        grpc::StatusCode::UNAVAILABLE);
  }
  {
    SCOPED_TRACE("the job's certificate, with a wrong token");
    absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> stolen =
        rpc::TransportSecurity::FromPem(secrets.cert_pem, secrets.key_pem,
                                        secrets.ca_pem, kWrongToken);
    ASSERT_TRUE(stolen.ok()) << stolen.status();
    ExpectRefused(
        attack((*stolen)->NewChannel(address), "", "attack/wrong-token"),
        grpc::StatusCode::PERMISSION_DENIED, "cluster token");
  }
  {
    SCOPED_TRACE("the job's certificate, without a token");
    absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> stolen =
        rpc::TransportSecurity::FromPem(secrets.cert_pem, secrets.key_pem,
                                        secrets.ca_pem, "");
    ASSERT_TRUE(stolen.ok()) << stolen.status();
    ExpectRefused(attack((*stolen)->NewChannel(address), "", "attack/no-token"),
                  grpc::StatusCode::UNAUTHENTICATED, "cluster token");
  }
}

// The ps task's status, asked by a member of the job.
absl::StatusOr<ps::GetStatusResponse> PsStatus(
    const rpc::TransportSecurity& member, const std::string& address) {
  auto stub = ps::ParameterServer::NewStub(member.NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(CallDeadline());
  ps::GetStatusResponse response;
  const grpc::Status s =
      stub->GetStatus(&context, ps::GetStatusRequest(), &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        s.error_message());
  }
  return response;
}

// Requests for tensors the ps task has served: training's pulls and pushes,
// over gRPC or the data plane.
int64_t TensorRequests(const ps::GetStatusResponse& status) {
  int64_t n = 0;
  for (const auto& [method, count] : status.requests()) {
    if (absl::StartsWith(method, "Pull") || absl::StartsWith(method, "Push") ||
        method == "Bundle") {
      n += count;
    }
  }
  return n;
}

// A member of the job lists the ps task's variables: OK, and none of them
// is one an attacker tried to create.
void ExpectServedAndUnharmed(const rpc::TransportSecurity& member,
                             const std::string& address) {
  auto stub = ps::ParameterServer::NewStub(member.NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(CallDeadline());
  ps::ListVariablesResponse response;
  const grpc::Status s =
      stub->ListVariables(&context, ps::ListVariablesRequest(), &response);
  ASSERT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
  for (const ps::VariableInfo& info : response.variables()) {
    EXPECT_THAT(info.spec().name(), Not(HasSubstr("attack")));
  }
}

// Plain TCP to the data plane, saying a hello that carries the right token
// in the clear: the ps task must close the connection without a hello of
// its own. What it wrote before closing (a TLS alert at most), or an error:
// DEADLINE_EXCEEDED when it neither closed nor answered.
absl::StatusOr<std::string> PlainHelloUntilClosed(int port,
                                                  const std::string& token) {
  absl::StatusOr<ScopedFd> fd = ConnectBlocking(port);
  if (!fd.ok()) return fd.status();
  const std::string hello = rpc::EncodeClientHello(token);
  // The server may close as soon as it sees bytes that are not TLS; a
  // write after that fails (EPIPE, ECONNRESET), which is a close too.
  send(fd->get(), hello.data(), hello.size(), MSG_NOSIGNAL);
  std::string answer;
  char buffer[4096];
  for (;;) {
    const ssize_t n = recv(fd->get(), buffer, sizeof(buffer), 0);
    if (n > 0) {
      answer.append(buffer, n);
      continue;
    }
    if (n == 0 || errno == ECONNRESET) return answer;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return absl::DeadlineExceededError(
          absl::StrCat("the data plane neither answered nor closed in ",
                       absl::FormatDuration(kProbeTimeout)));
    }
    return absl::InternalError(absl::StrCat("recv: errno ", errno));
  }
}

std::string OpenSslErrorText() {
  std::string text;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(e, buffer, sizeof(buffer));
    absl::StrAppend(&text, text.empty() ? "" : "; ", buffer);
  }
  return text;
}

// A TLS client of the data plane (or of a worker's ring port, which takes
// the same TLS) that checks the server's certificate against the job's CA
// but shows none of its own, and says the data plane's hello with the right
// token. UNAVAILABLE saying how it was refused (in the handshake, or after
// it: TLS 1.3 servers judge the client's certificate once the client has
// finished); OK when the server answered the hello, which it must not;
// DEADLINE_EXCEEDED when it did neither.
absl::Status TlsHelloWithoutCertificate(int port, const std::string& ca_pem,
                                        const std::string& token) {
  absl::StatusOr<ScopedFd> fd = ConnectBlocking(port);
  if (!fd.ok()) return fd.status();
  ERR_clear_error();
  rpc::OpenSslPtr<SSL_CTX, SSL_CTX_free> context(
      SSL_CTX_new(TLS_client_method()));
  rpc::OpenSslPtr<BIO, BIO_free> ca_bio(
      BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size())));
  rpc::OpenSslPtr<X509, X509_free> ca(
      PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr));
  if (context == nullptr || ca == nullptr ||
      X509_STORE_add_cert(SSL_CTX_get_cert_store(context.get()), ca.get()) !=
          1) {
    return absl::InternalError("cannot make the TLS client: " +
                               OpenSslErrorText());
  }
  SSL_CTX_set_min_proto_version(context.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(context.get(), SSL_VERIFY_PEER, nullptr);
  rpc::OpenSslPtr<SSL, SSL_free> ssl(SSL_new(context.get()));
  if (ssl == nullptr || SSL_set_fd(ssl.get(), fd->get()) != 1 ||
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), kHost) != 1) {
    return absl::InternalError("cannot make the TLS session: " +
                               OpenSslErrorText());
  }
  // Judges the result of an SSL call that returned `result` <= 0.
  auto failure = [&](const char* step, int result) {
    const int error = SSL_get_error(ssl.get(), result);
    if (error == SSL_ERROR_SYSCALL &&
        (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return absl::DeadlineExceededError(
          absl::StrCat(step, ": the server neither answered nor closed in ",
                       absl::FormatDuration(kProbeTimeout)));
    }
    std::string why = OpenSslErrorText();
    if (why.empty()) why = absl::StrCat("SSL error ", error, ", closed");
    return absl::UnavailableError(absl::StrCat(step, ": ", why));
  };
  if (const int r = SSL_connect(ssl.get()); r != 1) {
    return failure("TLS handshake", r);
  }
  if (SSL_get_verify_result(ssl.get()) != X509_V_OK) {
    return absl::InternalError("the server's certificate is not the job's");
  }
  const std::string hello = rpc::EncodeClientHello(token);
  if (const int r = SSL_write(ssl.get(), hello.data(), hello.size()); r <= 0) {
    return failure("hello", r);
  }
  char answer[rpc::kServerHelloBytes];
  if (const int r = SSL_read(ssl.get(), answer, sizeof(answer)); r <= 0) {
    return failure("the server's hello", r);
  }
  return absl::OkStatus();
}

// A connection of the data plane's protocol, as a worker makes one, with
// `tls` (null: plain TCP).
absl::Status ConnectDataPlane(int port, uint64_t incarnation,
                              const rpc::DataPlaneTls* tls) {
  return rpc::DataPlaneConnection::Connect(kHost, port, {0, incarnation},
                                           absl::Now() + kProbeTimeout, tls)
      .status();
}

std::shared_ptr<const rpc::DataPlaneTls> DataPlaneTlsOf(
    const std::string& cert_pem, const std::string& key_pem,
    const std::string& ca_pem, const std::string& token) {
  absl::StatusOr<std::shared_ptr<const rpc::DataPlaneTls>> tls =
      rpc::DataPlaneTls::FromPem(cert_pem, key_pem, ca_pem, token);
  EXPECT_TRUE(tls.ok()) << tls.status();
  return tls.ok() ? *tls : nullptr;
}

// A member of the job connects to the data plane within `wait`, says hello
// (its incarnation checked), and is served: a pull of a variable that does
// not exist is answered NOT_FOUND by the ps task itself.
void ExpectDataPlaneServesAMember(const JobSecrets& secrets, int port,
                                  uint64_t incarnation, absl::Duration wait) {
  std::shared_ptr<const rpc::DataPlaneTls> tls = DataPlaneTlsOf(
      secrets.cert_pem, secrets.key_pem, secrets.ca_pem, secrets.token);
  ASSERT_NE(tls, nullptr);
  const absl::Time deadline = absl::Now() + wait;
  absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>> connection =
      rpc::DataPlaneConnection::Connect(kHost, port, {0, incarnation}, deadline,
                                        tls.get());
  ASSERT_TRUE(connection.ok()) << connection.status();
  ps::PullDenseRequest request;
  request.set_name("attack/no-such-variable");
  ASSERT_TRUE((*connection)
                  ->Send(rpc::kPullDense, BufferOf(request.SerializeAsString()),
                         deadline)
                  .ok());
  grpc::Status answer;
  grpc::ByteBuffer response;
  const absl::Status received =
      (*connection)->Receive(deadline, &answer, &response);
  ASSERT_TRUE(received.ok()) << received;
  EXPECT_EQ(answer.error_code(), grpc::StatusCode::NOT_FOUND)
      << answer.error_message();
}

// Plain TCP to kHost:`port` that says nothing: OK once the server closed
// it, DEADLINE_EXCEEDED when it kept it kProbeTimeout; UNAVAILABLE when
// nobody listens there (the connection itself was refused).
absl::Status SilentUntilClosed(int port) {
  absl::StatusOr<ScopedFd> fd = ConnectBlocking(port);
  if (!fd.ok()) return fd.status();
  char byte;
  for (;;) {
    const ssize_t n = recv(fd->get(), &byte, 1, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return absl::OkStatus();
    if (n > 0) {
      return absl::InternalError("the server said something to a stranger");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return absl::DeadlineExceededError(
          absl::StrCat("a silent connection was kept ",
                       absl::FormatDuration(kProbeTimeout)));
    }
    return absl::InternalError(absl::StrCat("recv: errno ", errno));
  }
}

// A stranger that joins the workers' ring as `rank` with `tls`, as a worker
// would (rpc::TlsRingCollective): its own store says that its right-hand
// neighbour listens at `address`, so it connects there and says its hello.
// Create's error: the right-hand side's (the refused hello) once its own
// listener has waited kRingStrangerWait for a left-hand neighbour that
// never comes. OK would mean it was let into the ring.
absl::Status JoinRingAs(int rank, const std::string& address,
                        std::shared_ptr<const rpc::DataPlaneTls> tls) {
  InMemoryKvStore store;
  if (absl::Status s = store.Set(
          absl::StrCat(kRingPrefix, "/", (rank + 1) % kRingSize), address);
      !s.ok()) {
    return s;
  }
  rpc::TlsRingCollective::Options options;
  options.rank = rank;
  options.size = kRingSize;
  options.host = kHost;
  options.timeout = kRingStrangerWait;
  options.connect_timeout = kRingStrangerWait;
  options.prefix = kRingPrefix;
  options.tls = std::move(tls);
  return rpc::TlsRingCollective::Create(&store, options).status();
}

// Idle plain TCP connections to kHost:`port` that never start TLS, from
// kFloodSources loopback addresses (127.0.0.2, ...: on Linux all of
// 127.0.0.0/8 is loopback), held open until destroyed.
class ConnectionFlood {
 public:
  // Connects without blocking, then waits until every connection is made
  // or kFloodTimeout passed.
  void Open(int port) {
    std::vector<pollfd> pending;
    for (int i = 0; i < kFloodConnections; ++i) {
      LoopbackSocketOptions options;
      options.source = absl::StrCat("127.0.0.", 2 + i % kFloodSources);
      options.nonblocking = true;
      ScopedFd fd(ConnectLoopbackSocket(port, options));
      ASSERT_GE(fd.get(), 0);  // ConnectLoopbackSocket said why
      pending.push_back({fd.get(), POLLOUT, 0});
      fds_.push_back(std::move(fd));
    }
    // Until each connect has finished; SO_ERROR says how.
    const absl::Time deadline = absl::Now() + kFloodTimeout;
    while (!pending.empty()) {
      const int left_ms =
          static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
      if (left_ms <= 0) break;
      const int ready = poll(pending.data(), pending.size(), left_ms);
      ASSERT_GE(ready, 0) << "poll: errno " << errno;
      std::vector<pollfd> still;
      for (const pollfd& p : pending) {
        if (p.revents == 0) {
          still.push_back({p.fd, POLLOUT, 0});
          continue;
        }
        int error = 0;
        socklen_t length = sizeof(error);
        getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &error, &length);
        // Made, and perhaps closed by the ps task already (RST): either
        // way it reached the data plane's accept queue.
        if (error == 0 || error == ECONNRESET || error == EPIPE) {
          ++made_;
        } else {
          ++failed_;
        }
      }
      pending = std::move(still);
    }
    unfinished_ = static_cast<int>(pending.size());
  }

  int made() const { return made_; }
  int failed() const { return failed_; }
  int unfinished() const { return unfinished_; }

 private:
  std::vector<ScopedFd> fds_;
  int made_ = 0;
  int failed_ = 0;
  int unfinished_ = 0;
};

class SecureJobAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GenerateData(dir_.path() + "/data", "d",
                 {"--task=binary", "--rows=10000", "--features=200",
                  "--features_per_row=10"});
  }

  void TearDown() override { Resume(); }

  std::string job_dir() const { return dir_.path() + "/job"; }

  // Starts the job and reads launch's output until the ps task serves both
  // its ports, pausing the chief and the worker as soon as they start.
  void StartPausedJob() {
    const std::vector<std::string> task_flags = {
        "--model=logreg",
        "--train_data=" + dir_.path() + "/data/d.train.svm",
        "--eval_data=" + dir_.path() + "/data/d.eval.svm",
        absl::StrCat("--train_steps=", kTrainSteps),
        "--global_batch_size=64",
        "--checkpoint_every_steps=100",
        "--log_every_secs=1",
        "--wait_secs=120"};
    SubprocessOptions options =
        LaunchProcess({"--ps=1", "--workers=1", "--chief", "--secure",
                       "--rpc_layer=grpc+tcp", "--job_dir=" + job_dir()},
                      task_flags);
    options.timeout = kJobTimeout;
    absl::StatusOr<std::unique_ptr<Subprocess>> launch =
        Subprocess::Start(options);
    ASSERT_TRUE(launch.ok()) << launch.status();
    launch_ = *std::move(launch);

    std::string serving, data_plane;
    for (int lines = 0; lines < 200 && (paused_.size() < 2 || serving.empty() ||
                                        data_plane.empty());
         ++lines) {
      absl::StatusOr<std::string> line = launch_->ReadStdoutLine(kLineTimeout);
      ASSERT_TRUE(line.ok()) << line.status() << "\n" << transcript_;
      absl::StrAppend(&transcript_, *line, "\n");
      if (absl::StartsWith(*line, "launch: started chief:0 ") ||
          absl::StartsWith(*line, "launch: started worker:0 ")) {
        const int pid = PidOf(*line);
        ASSERT_GT(pid, 0);
        ASSERT_EQ(kill(pid, SIGSTOP), 0) << *line;
        paused_.push_back(pid);
      } else if (absl::StartsWith(*line,
                                  "[ps:0] ps_server: ps task 0 serving on ")) {
        serving = *line;
      } else if (absl::StartsWith(
                     *line,
                     "[ps:0] ps_server: tensors also over the TCP data plane "
                     "on ")) {
        data_plane = *line;
      }
    }
    ASSERT_EQ(paused_.size(), 2u) << transcript_;
    ASSERT_THAT(serving, HasSubstr(", mutual TLS, cluster token"))
        << transcript_;
    ASSERT_THAT(data_plane, HasSubstr(", mutual TLS, cluster token"))
        << transcript_;
    grpc_address_ = Between(serving, "serving on ");
    ASSERT_TRUE(absl::StartsWith(grpc_address_, absl::StrCat(kHost, ":")))
        << serving;
    const size_t at = serving.find("incarnation ");
    ASSERT_NE(at, std::string::npos) << serving;
    ASSERT_TRUE(absl::SimpleHexAtoi(serving.substr(at + 12, 16), &incarnation_))
        << serving;
    const std::string tcp = Between(data_plane, "data plane on ");
    ASSERT_TRUE(
        absl::SimpleAtoi(tcp.substr(tcp.rfind(':') + 1), &data_plane_port_))
        << data_plane;
    secrets_ = ReadJobSecrets(job_dir());
    member_ = MemberSecurity(secrets_);
    ASSERT_NE(member_, nullptr);
  }

  // Lets the chief and the worker go on.
  void Resume() {
    for (int pid : paused_) kill(pid, SIGCONT);
    paused_.clear();
  }

  // Reads launch's output until a line with `text`.
  void ReadUntil(const std::string& text) {
    for (int lines = 0; lines < 10000; ++lines) {
      absl::StatusOr<std::string> line = launch_->ReadStdoutLine(kLineTimeout);
      ASSERT_TRUE(line.ok())
          << "no line with \"" << text << "\": " << line.status() << "\n"
          << transcript_;
      absl::StrAppend(&transcript_, *line, "\n");
      if (absl::StrContains(*line, text)) return;
    }
    FAIL() << "no line with \"" << text << "\"";
  }

  // Starts a secure multi-worker mirrored job of three workers (no ps
  // tasks, no chief: worker:0 is rank 0 and serves the rendezvous) and
  // pauses worker:1 the moment launch says it started it, long before it
  // can have loaded its data, let alone joined the ring. So worker:2, whose
  // left-hand neighbour it is, keeps its ring listener open for it.
  void StartRingJobPausingWorker1() {
    const std::vector<std::string> task_flags = {
        "--model=logreg",
        "--train_data=" + dir_.path() + "/data/d.train.svm",
        "--eval_data=" + dir_.path() + "/data/d.eval.svm",
        absl::StrCat("--train_steps=", kRingJobSteps),
        "--global_batch_size=96",
        "--wait_secs=120",
        "--strategy=multi_worker_mirrored"};
    SubprocessOptions options = LaunchProcess(
        {"--ps=0", "--workers=3", "--secure", "--job_dir=" + job_dir()},
        task_flags);
    options.timeout = kJobTimeout;
    absl::StatusOr<std::unique_ptr<Subprocess>> launch =
        Subprocess::Start(options);
    ASSERT_TRUE(launch.ok()) << launch.status();
    launch_ = *std::move(launch);

    for (int lines = 0; lines < 200 && paused_.empty(); ++lines) {
      absl::StatusOr<std::string> line = launch_->ReadStdoutLine(kLineTimeout);
      ASSERT_TRUE(line.ok()) << line.status() << "\n" << transcript_;
      absl::StrAppend(&transcript_, *line, "\n");
      if (absl::StartsWith(*line, "launch: started worker:0 at ")) {
        chief_address_ = Between(*line, " at ");
      } else if (absl::StartsWith(*line, "launch: started worker:1 ")) {
        const int pid = PidOf(*line);
        ASSERT_GT(pid, 0);
        ASSERT_EQ(kill(pid, SIGSTOP), 0) << *line;
        paused_.push_back(pid);
      }
    }
    ASSERT_EQ(paused_.size(), 1u) << transcript_;
    ASSERT_TRUE(absl::StartsWith(chief_address_, absl::StrCat(kHost, ":")))
        << transcript_;
    // Written before any task started.
    secrets_ = ReadJobSecrets(job_dir(), "worker-0");
    member_ = MemberSecurity(secrets_);
    ASSERT_NE(member_, nullptr);
  }

  // Resumes the job and waits for launch to end the job well: exit code 0.
  // Its output is in transcript_ and stderr_ then.
  void ExpectTheJobFinishes() {
    Resume();
    absl::StatusOr<SubprocessResult> result = launch_->Wait(kJobTimeout);
    ASSERT_TRUE(result.ok()) << result.status() << "\n" << transcript_;
    absl::StrAppend(&transcript_, result->stdout_text);
    stderr_ = result->stderr_text;
    ASSERT_EQ(result->exit_code, 0) << transcript_ << stderr_;
    EXPECT_THAT(transcript_, HasSubstr("launch: job finished"));
  }

  // Resumes the job and checks that it trained on as if never attacked.
  void ExpectTheJobFinishesUnharmed() {
    ASSERT_NO_FATAL_FAILURE(ExpectTheJobFinishes());
    // Every training task kept the data plane: no handshake or token check
    // of theirs failed, however the ps task was attacked.
    EXPECT_THAT(transcript_, Not(HasSubstr("go over gRPC")));
    EXPECT_THAT(stderr_, Not(HasSubstr("go over gRPC")));
    const nlohmann::json metrics = ReadJson(job_dir() + "/metrics.json");
    EXPECT_GE(metrics["global_step"].get<int64_t>(), kTrainSteps)
        << metrics.dump();
    EXPECT_GT(metrics["eval_accuracy"].get<double>(), 0.8) << metrics.dump();
  }

  TestDir dir_;
  std::unique_ptr<Subprocess> launch_;
  std::string transcript_;     // launch's output read so far
  std::string stderr_;         // launch's stderr, once it ended
  std::vector<int> paused_;    // SIGSTOPped until Resume
  std::string grpc_address_;   // the ps task's, "127.0.0.1:PORT"
  std::string chief_address_;  // the rendezvous, worker:0's TF_CONFIG address
  int data_plane_port_ = 0;
  uint64_t incarnation_ = 0;
  JobSecrets secrets_;
  std::shared_ptr<const rpc::TransportSecurity> member_;
};

TEST_F(SecureJobAttackTest, TheGrpcPortRefusesEveryStrangerAndTheJobTrainsOn) {
  ASSERT_NO_FATAL_FAILURE(StartPausedJob());
  ASSERT_NO_FATAL_FAILURE(ExpectServedAndUnharmed(*member_, grpc_address_));
  ASSERT_NO_FATAL_FAILURE(
      ExpectGrpcPortRefusesStrangers(grpc_address_, secrets_, AttackPs));

  // Refused for what they were, not because the task was gone: a member
  // of the job is still served, and no attacker's variable is there.
  ASSERT_NO_FATAL_FAILURE(ExpectServedAndUnharmed(*member_, grpc_address_));
  ExpectTheJobFinishesUnharmed();
}

TEST_F(SecureJobAttackTest, TheDataPlaneRefusesEveryStrangerAndTheJobTrainsOn) {
  ASSERT_NO_FATAL_FAILURE(StartPausedJob());
  const int port = data_plane_port_;

  {
    SCOPED_TRACE("plain TCP bytes: the right token's hello in the clear");
    absl::StatusOr<std::string> answer =
        PlainHelloUntilClosed(port, secrets_.token);
    ASSERT_TRUE(answer.ok()) << answer.status();
    // Closed with a TLS alert record (type 21) at most, never a hello.
    EXPECT_TRUE(answer->empty() || (*answer)[0] == 21)
        << answer->size() << " bytes, the first " << int((*answer)[0]);
  }
  {
    SCOPED_TRACE("the data plane's protocol over plain TCP");
    const absl::Status s = ConnectDataPlane(port, incarnation_, nullptr);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  }
  {
    SCOPED_TRACE("TLS without a certificate, with the right token");
    const absl::Status s =
        TlsHelloWithoutCertificate(port, secrets_.ca_pem, secrets_.token);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  }
  {
    SCOPED_TRACE("another CA's certificate, with the right token");
    const rpc::PemKeyPair foreign = ForeignCertificate();
    std::shared_ptr<const rpc::DataPlaneTls> tls =
        DataPlaneTlsOf(foreign.certificate_pem, foreign.private_key_pem,
                       secrets_.ca_pem, secrets_.token);
    ASSERT_NE(tls, nullptr);
    const absl::Status s = ConnectDataPlane(port, incarnation_, tls.get());
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  }
  {
    SCOPED_TRACE("the job's certificate, with a wrong token");
    std::shared_ptr<const rpc::DataPlaneTls> tls = DataPlaneTlsOf(
        secrets_.cert_pem, secrets_.key_pem, secrets_.ca_pem, kWrongToken);
    ASSERT_NE(tls, nullptr);
    const absl::Status s = ConnectDataPlane(port, incarnation_, tls.get());
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    EXPECT_THAT(s.message(), HasSubstr("not this job's"));
  }
  {
    SCOPED_TRACE("the job's certificate, without a token");
    std::shared_ptr<const rpc::DataPlaneTls> tls = DataPlaneTlsOf(
        secrets_.cert_pem, secrets_.key_pem, secrets_.ca_pem, "");
    ASSERT_NE(tls, nullptr);
    const absl::Status s = ConnectDataPlane(port, incarnation_, tls.get());
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
    EXPECT_THAT(s.message(), HasSubstr("needs the cluster token"));
  }

  // Refused for what they were: a member of the job gets in and is served.
  ASSERT_NO_FATAL_FAILURE(ExpectDataPlaneServesAMember(
      secrets_, port, incarnation_, kProbeTimeout));
  ASSERT_NO_FATAL_FAILURE(ExpectServedAndUnharmed(*member_, grpc_address_));
  ExpectTheJobFinishesUnharmed();
  // The ps task named the first stranger it refused (later ones within
  // 30 s are counted, not logged).
  EXPECT_THAT(transcript_, HasSubstr("[ps:0] ps_server: TCP data plane: "
                                     "refused the connection from 127.0.0.1:"));
}

TEST_F(SecureJobAttackTest, AConnectionFloodOnTheDataPlaneKeepsNoMemberOut) {
  struct rlimit files;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur < kFloodConnections + 256) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, kFloodConnections + 256);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &files), 0);
  }
  ASSERT_NO_FATAL_FAILURE(StartPausedJob());
  absl::StatusOr<ps::GetStatusResponse> before =
      PsStatus(*member_, grpc_address_);
  ASSERT_TRUE(before.ok()) << before.status();
  {
    ConnectionFlood flood;
    ASSERT_NO_FATAL_FAILURE(flood.Open(data_plane_port_));
    // Every connection reached the ps task: far more than it keeps in its
    // handshake from one source (16) or in all (64).
    EXPECT_EQ(flood.made(), kFloodConnections)
        << flood.failed() << " failed, " << flood.unfinished() << " unfinished";
    // While the flood is held, a member of the job gets in at once and is
    // served, on both ports.
    ASSERT_NO_FATAL_FAILURE(ExpectDataPlaneServesAMember(
        secrets_, data_plane_port_, incarnation_, kProbeTimeout));
    ASSERT_NO_FATAL_FAILURE(ExpectServedAndUnharmed(*member_, grpc_address_));
    // The whole training runs under the flood: the chief and the worker
    // were paused before it, and it is let go only after the final
    // checkpoint.
    Resume();
    ASSERT_NO_FATAL_FAILURE(ReadUntil("[chief:0] final checkpoint: "));
  }
  // The tasks were paused early: nearly all of the training's requests
  // came after the flood began (each step pulls and pushes at least once).
  EXPECT_LT(TensorRequests(*before), kTrainSteps / 2) << before->DebugString();
  ExpectTheJobFinishesUnharmed();
}

// While the workers' ring forms, worker:2 listens for its left-hand
// neighbour, worker:1, which is paused before it can come. Strangers who
// find the listener's address reach it first: each is dropped (logged by
// worker:2), none takes worker:1's place, and once worker:1 goes on the
// ring forms and the job trains as usual. The chief's rendezvous, which
// published that address, refuses the same strangers as a ps task's port.
TEST_F(SecureJobAttackTest,
       AStrangerOnARingListenerDuringFormationIsDroppedAndTheJobTrainsOn) {
  ASSERT_NO_FATAL_FAILURE(StartRingJobPausingWorker1());
  rpc::RendezvousClient::Options client_options;
  client_options.address = chief_address_;
  client_options.connect_timeout = kLineTimeout;
  client_options.security = member_;
  rpc::RendezvousClient rendezvous(client_options);
  const std::string rank1_key = absl::StrCat(kRingPrefix, "/1");
  const std::string rank2_key = absl::StrCat(kRingPrefix, "/2");
  absl::StatusOr<std::vector<std::string>> published =
      rendezvous.Get({rank2_key}, kLineTimeout);
  ASSERT_TRUE(published.ok()) << published.status() << "\n" << transcript_;
  const std::string listener = (*published)[0];
  int port = 0;
  ASSERT_TRUE(absl::StartsWith(listener, absl::StrCat(kHost, ":"))) << listener;
  ASSERT_TRUE(absl::SimpleAtoi(listener.substr(listener.rfind(':') + 1), &port))
      << listener;

  // Worker:1 was paused a moment after it was started: it could have
  // paired with worker:2 before the pause only by loading and joining in
  // that moment. Then worker:2 no longer listens (the connection itself is
  // refused), and only the rendezvous and the job's end are left to check.
  bool probed_the_ring = true;
  {
    SCOPED_TRACE("plain TCP that says nothing: closed at the hello timeout");
    const absl::Status s = SilentUntilClosed(port);
    if (absl::IsUnavailable(s)) {
      absl::StatusOr<std::vector<std::string>> rank1 =
          rendezvous.Get({rank1_key}, absl::ZeroDuration());
      ASSERT_TRUE(rank1.ok())
          << "worker:2's ring listener at " << listener << " is gone (" << s
          << ") though worker:1 never published its own address: "
          << rank1.status();
      probed_the_ring = false;
      std::cerr << "worker:1 joined the ring before it was paused; its "
                   "listener cannot be probed in this run\n";
    } else {
      EXPECT_TRUE(s.ok()) << s;
    }
  }
  if (probed_the_ring) {
    {
      SCOPED_TRACE("TLS without a certificate, with the right token");
      const absl::Status s =
          TlsHelloWithoutCertificate(port, secrets_.ca_pem, secrets_.token);
      EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    }
    {
      SCOPED_TRACE("another CA's certificate, with the right token");
      const rpc::PemKeyPair foreign = ForeignCertificate();
      const absl::Status s = JoinRingAs(
          1, listener,
          DataPlaneTlsOf(foreign.certificate_pem, foreign.private_key_pem,
                         secrets_.ca_pem, secrets_.token));
      EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    }
    {
      SCOPED_TRACE("the job's certificate, with a wrong token, as rank 1");
      const absl::Status s =
          JoinRingAs(1, listener,
                     DataPlaneTlsOf(secrets_.cert_pem, secrets_.key_pem,
                                    secrets_.ca_pem, kWrongToken));
      EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
      EXPECT_THAT(s.message(), HasSubstr("refused this rank's hello"));
    }
    {
      SCOPED_TRACE("the job's certificate and token, as rank 0");
      const absl::Status s =
          JoinRingAs(0, listener,
                     DataPlaneTlsOf(secrets_.cert_pem, secrets_.key_pem,
                                    secrets_.ca_pem, secrets_.token));
      EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
      EXPECT_THAT(s.message(), HasSubstr("refused this rank's hello"));
    }
  }

  ASSERT_NO_FATAL_FAILURE(ExpectGrpcPortRefusesStrangers(
      chief_address_, secrets_, AttackRendezvous));
  // Nobody took worker:1's place in the store either, and worker:2's
  // address is as it published it.
  if (probed_the_ring) {
    EXPECT_EQ(rendezvous.Get({rank1_key}, absl::ZeroDuration()).status().code(),
              absl::StatusCode::kDeadlineExceeded);
  }
  absl::StatusOr<std::vector<std::string>> still =
      rendezvous.Get({rank2_key}, absl::ZeroDuration());
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_EQ((*still)[0], listener);

  ASSERT_NO_FATAL_FAILURE(ExpectTheJobFinishes());
  for (int w = 0; w < kRingSize; ++w) {
    EXPECT_THAT(transcript_,
                HasSubstr(absl::StrCat(
                    "[worker:", w, "] joined the 3 training tasks as rank ", w,
                    "; collectives over a TLS ring (mutual TLS, "
                    "cluster token)")));
  }
  const nlohmann::json metrics = ReadJson(job_dir() + "/metrics.json");
  EXPECT_EQ(metrics["global_step"].get<int64_t>(), kRingJobSteps)
      << metrics.dump();
  EXPECT_GE(metrics["eval_accuracy"].get<double>(), kRingJobAccuracy)
      << metrics.dump();
  if (probed_the_ring) {
    // Each stranger was refused by worker:2 and logged, and nobody else
    // was: worker:1 paired at its first try.
    const std::string refused =
        "[worker:2] TLS ring: rank 2 of 3 (group \"mwms/ring\"): refused the "
        "connection from 127.0.0.1:";
    int count = 0;
    for (size_t at = transcript_.find(refused); at != std::string::npos;
         at = transcript_.find(refused, at + 1)) {
      ++count;
    }
    EXPECT_EQ(count, 5) << transcript_;
    EXPECT_THAT(transcript_, HasSubstr("deadline passed"));
    EXPECT_THAT(transcript_, HasSubstr("its certificate was refused"));
    EXPECT_THAT(transcript_, HasSubstr("cluster token is not this job's"));
    EXPECT_THAT(transcript_,
                HasSubstr("it says it is rank 0, not this rank's left-hand "
                          "neighbour 1"));
  }
  EXPECT_THAT(transcript_, Not(HasSubstr("[worker:0] TLS ring")));
  EXPECT_THAT(transcript_, Not(HasSubstr("[worker:1] TLS ring")));
}
}  // namespace
}  // namespace distrt::testing
