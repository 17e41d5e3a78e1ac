// The TCP data plane with the job's TLS and token (rpc/data_plane_tls.h):
// a DataPlaneServer and DataPlaneConnections in one process, with
// certificates made here by tls_certificates.h.

#include "rpc/data_plane_tls.h"

#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/data_plane_connection.h"
#include "rpc/data_plane_server.h"
#include "rpc/tls_certificates.h"
#include "rpc/transport_security.h"
#include "tests/util/byte_buffers.h"
#include "tests/util/log_lines.h"
#include "tests/util/loopback_socket.h"

namespace distrt::rpc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kWait = absl::Seconds(30);
constexpr int kTask = 1;
constexpr uint64_t kIncarnation = 0xfeedface;
const char kToken[] = "a-cluster-token-of-this-job";

using testing::BufferOf;
using testing::BytesOf;

// Answers with the request's bytes and a tail.
absl::Status Echo(int, grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
  *out = BufferOf(BytesOf(*in) + "<-echo");
  return absl::OkStatus();
}

class DataPlaneTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<PemKeyPair> ca =
        GenerateCertificateAuthority("data plane test CA", absl::Hours(1));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    absl::StatusOr<PemKeyPair> task = IssueCertificate(
        ca_, "task", {"127.0.0.1", "localhost"}, absl::Hours(1));
    ASSERT_TRUE(task.ok()) << task.status();
    task_ = *task;
  }

  std::shared_ptr<const DataPlaneTls> Tls(const PemKeyPair& pair,
                                          std::string token) {
    absl::StatusOr<std::shared_ptr<const DataPlaneTls>> tls =
        DataPlaneTls::FromPem(pair.certificate_pem, pair.private_key_pem,
                              ca_.certificate_pem, std::move(token));
    EXPECT_TRUE(tls.ok()) << tls.status();
    return tls.ok() ? *tls : nullptr;
  }

  std::unique_ptr<DataPlaneServer> StartServer(
      std::shared_ptr<const DataPlaneTls> tls,
      std::function<void(absl::string_view)> log = nullptr) {
    DataPlaneServer::Options options;
    options.log = std::move(log);
    options.task_index = kTask;
    options.incarnation = kIncarnation;
    options.max_message_bytes = 64 << 20;
    options.tls = std::move(tls);
    absl::StatusOr<std::unique_ptr<DataPlaneServer>> server =
        DataPlaneServer::Start(options, Echo);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  absl::StatusOr<std::unique_ptr<DataPlaneConnection>> Connect(
      const DataPlaneServer& server, const DataPlaneTls* tls,
      const std::string& host = "127.0.0.1") {
    return DataPlaneConnection::Connect(
        host, server.port(), {kTask, kIncarnation}, absl::Now() + kWait, tls);
  }

  PemKeyPair ca_;
  PemKeyPair task_;
};

// A call through `c` gives back `bytes` with the echo's tail.
void ExpectEcho(DataPlaneConnection& c, const std::string& bytes) {
  ASSERT_TRUE(c.Send(1, BufferOf(bytes), absl::Now() + kWait).ok());
  grpc::Status status;
  grpc::ByteBuffer response;
  ASSERT_TRUE(c.Receive(absl::Now() + kWait, &status, &response).ok());
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(BytesOf(response) == bytes + "<-echo");
}

TEST_F(DataPlaneTlsTest, CallsGoInsideMutualTlsWithTheToken) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Tls(task_, kToken));
  ASSERT_NE(server, nullptr);
  std::shared_ptr<const DataPlaneTls> client = Tls(task_, kToken);
  absl::StatusOr<std::unique_ptr<DataPlaneConnection>> c =
      Connect(*server, client.get());
  ASSERT_TRUE(c.ok()) << c.status();
  // Small, and larger than many TLS records and than one read-ahead.
  ExpectEcho(**c, "tiny");
  std::string large(5 << 20, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7);
  ExpectEcho(**c, large);
  ExpectEcho(**c, "after");
  // A name of the certificate works as well as its IP address.
  absl::StatusOr<std::unique_ptr<DataPlaneConnection>> by_name =
      Connect(*server, client.get(), "localhost");
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  ExpectEcho(**by_name, "by name");
}

TEST_F(DataPlaneTlsTest, AClientWithoutTheTokenOrWithAnotherIsToldSo) {
  testing::LogLines log;
  std::unique_ptr<DataPlaneServer> server =
      StartServer(Tls(task_, kToken), log.Sink());
  ASSERT_NE(server, nullptr);
  std::shared_ptr<const DataPlaneTls> none = Tls(task_, "");
  absl::Status s = Connect(*server, none.get()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("refused this client"));
  EXPECT_THAT(s.message(), HasSubstr("needs the cluster token"));
  std::shared_ptr<const DataPlaneTls> other =
      Tls(task_, "another-token-of-another-job");
  s = Connect(*server, other.get()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(s.message(), HasSubstr("not this job's"));
  // The right one still gets in.
  std::shared_ptr<const DataPlaneTls> right = Tls(task_, kToken);
  absl::StatusOr<std::unique_ptr<DataPlaneConnection>> c =
      Connect(*server, right.get());
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectEcho(**c, "in");
  // The server said so too: the first refusal, with its peer; the second
  // came within 30 s of it and waits to be counted in the next line.
  const std::vector<std::string> lines = log.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("refused the connection from 127.0.0.1:"));
  EXPECT_THAT(lines[0], HasSubstr("the client sent none"));
}

TEST_F(DataPlaneTlsTest, APlainClientAndAPlainServerAreRefused) {
  testing::LogLines log;
  std::unique_ptr<DataPlaneServer> tls_server =
      StartServer(Tls(task_, ""), log.Sink());
  ASSERT_NE(tls_server, nullptr);
  absl::Status s = Connect(*tls_server, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  // The client may hear the TLS alert before the server logs: wait.
  ASSERT_TRUE(log.WaitForLines(1, kWait));
  {
    const std::vector<std::string> lines = log.Lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_THAT(lines[0], HasSubstr("refused the connection from 127.0.0.1:"));
    // The peer is named once, not again by the TLS error.
    EXPECT_THAT(lines[0], HasSubstr(": TLS handshake failed: "));
    EXPECT_THAT(lines[0], Not(HasSubstr("TCP data plane to")));
  }
  std::unique_ptr<DataPlaneServer> plain_server = StartServer(nullptr);
  ASSERT_NE(plain_server, nullptr);
  std::shared_ptr<const DataPlaneTls> client = Tls(task_, "");
  s = Connect(*plain_server, client.get()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("TLS handshake failed"));
}

TEST_F(DataPlaneTlsTest, ACertificateOfAnotherCaIsRefusedBothWays) {
  absl::StatusOr<PemKeyPair> other_ca =
      GenerateCertificateAuthority("another CA", absl::Hours(1));
  ASSERT_TRUE(other_ca.ok());
  absl::StatusOr<PemKeyPair> stranger =
      IssueCertificate(*other_ca, "stranger", {"127.0.0.1"}, absl::Hours(1));
  ASSERT_TRUE(stranger.ok());
  std::unique_ptr<DataPlaneServer> server = StartServer(Tls(task_, ""));
  ASSERT_NE(server, nullptr);
  // A client that trusts the job's CA but shows another's certificate.
  std::shared_ptr<const DataPlaneTls> client = Tls(*stranger, "");
  absl::Status s = Connect(*server, client.get()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  // A server of another CA, to a client of the job's.
  absl::StatusOr<std::shared_ptr<const DataPlaneTls>> stranger_server =
      DataPlaneTls::FromPem(stranger->certificate_pem,
                            stranger->private_key_pem,
                            other_ca->certificate_pem, "");
  ASSERT_TRUE(stranger_server.ok());
  std::unique_ptr<DataPlaneServer> impostor = StartServer(*stranger_server);
  ASSERT_NE(impostor, nullptr);
  std::shared_ptr<const DataPlaneTls> job_client = Tls(task_, "");
  s = Connect(*impostor, job_client.get()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("certificate was refused"));
}

TEST_F(DataPlaneTlsTest, AServerWhoseCertificateNamesAnotherHostIsRefused) {
  absl::StatusOr<PemKeyPair> elsewhere =
      IssueCertificate(ca_, "elsewhere", {"ps-0.example.com"}, absl::Hours(1));
  ASSERT_TRUE(elsewhere.ok());
  std::unique_ptr<DataPlaneServer> server = StartServer(Tls(*elsewhere, ""));
  ASSERT_NE(server, nullptr);
  std::shared_ptr<const DataPlaneTls> client = Tls(task_, "");
  const absl::Status s = Connect(*server, client.get()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("certificate was refused"));
}

TEST_F(DataPlaneTlsTest, StopEndsTlsConnections) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Tls(task_, kToken));
  ASSERT_NE(server, nullptr);
  std::shared_ptr<const DataPlaneTls> client = Tls(task_, kToken);
  absl::StatusOr<std::unique_ptr<DataPlaneConnection>> c =
      Connect(*server, client.get());
  ASSERT_TRUE(c.ok()) << c.status();
  server->Stop();
  grpc::Status status;
  grpc::ByteBuffer response;
  EXPECT_EQ((*c)->Receive(absl::Now() + kWait, &status, &response).code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(DataPlaneTlsTest, IdleConnectionsCannotKeepAClientOfTheJobOut) {
  DataPlaneServer::Options options;
  options.task_index = kTask;
  options.incarnation = kIncarnation;
  options.tls = Tls(task_, kToken);
  options.max_connections = 32;
  options.max_unauthenticated = 16;
  options.max_unauthenticated_per_source = 8;
  // Far longer than the client waits: it gets in without any timing out.
  options.hello_timeout = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<DataPlaneServer>> server =
      DataPlaneServer::Start(options, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  // More idle connections than max_connections, never starting TLS.
  const std::vector<int> idle =
      testing::ConnectLoopbackSockets((*server)->port(),
                                      {"127.0.0.2", "127.0.0.2", "127.0.0.3",
                                       "127.0.0.4", "127.0.0.5", "127.0.0.6"},
                                      8);
  std::shared_ptr<const DataPlaneTls> client = Tls(task_, kToken);
  absl::StatusOr<std::unique_ptr<DataPlaneConnection>> c =
      Connect(**server, client.get());
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectEcho(**c, "in despite them");
  for (int fd : idle) close(fd);
}

TEST(DataPlaneTlsForJobTest, FollowsTheJobsSecurity) {
  absl::StatusOr<std::shared_ptr<const DataPlaneTls>> none =
      DataPlaneTls::ForJob(*TransportSecurity::Insecure());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  absl::StatusOr<PemKeyPair> ca =
      GenerateCertificateAuthority("CA", absl::Hours(1));
  ASSERT_TRUE(ca.ok());
  absl::StatusOr<PemKeyPair> task =
      IssueCertificate(*ca, "task", {"127.0.0.1"}, absl::Hours(1));
  ASSERT_TRUE(task.ok());
  absl::StatusOr<std::shared_ptr<const TransportSecurity>> security =
      TransportSecurity::FromPem(task->certificate_pem, task->private_key_pem,
                                 ca->certificate_pem, kToken);
  ASSERT_TRUE(security.ok()) << security.status();
  absl::StatusOr<std::shared_ptr<const DataPlaneTls>> tls =
      DataPlaneTls::ForJob(**security);
  ASSERT_TRUE(tls.ok()) << tls.status();
  ASSERT_NE(*tls, nullptr);
  EXPECT_EQ((*tls)->token(), kToken);
  // PEM that is not a key.
  EXPECT_EQ(DataPlaneTls::FromPem(task->certificate_pem, "not a key",
                                  ca->certificate_pem, "")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distrt::rpc
