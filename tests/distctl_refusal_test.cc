// distctl against ps tasks that refuse it, and an address where nothing
// listens: every command says "refused (WHY)" or "unreachable (WHY)", exits
// 1, and ends within --timeout_secs (a hang check with a wide margin, not a
// timing target). A ps_server with mutual TLS and a cluster token is
// started on port 0; the test's certificates come from rpc/tls_certificates.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/tls_certificates.h"
#include "runtime/util/test_dir.h"
#include "tests/util/ps_processes.h"
#include "tests/util/subprocess.h"

namespace distrt {
namespace {

using ::distrt::testing::PsProcess;
using ::distrt::testing::RunSubprocess;
using ::distrt::testing::SubprocessOptions;
using ::distrt::testing::SubprocessResult;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kDistctl[] = "client/distctl";
constexpr int kTimeoutSecs = 2;
// A command must end within this: --timeout_secs and a wide margin for a
// loaded machine. Without one it would have retried for two minutes.
const absl::Duration kBound = absl::Seconds(kTimeoutSecs + 10);

// Every command that talks to the cluster, with its argument.
const std::vector<std::vector<std::string>> kCommands = {
    {"stats"},
    {"vars"},
    {"pull", "w"},
    {"save", "/nowhere"},
    {"restore", "/nowhere"},
    {"shutdown"}};

// A TCP port on 127.0.0.1 that is bound but not listening, so that nothing
// can answer there (connections to it are refused) while it is held.
class DeadPort {
 public:
  DeadPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    if (fd_ < 0 ||
        bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
            0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      ADD_FAILURE() << "cannot reserve a port";
      return;
    }
    port_ = ntohs(address.sin_port);
  }
  ~DeadPort() {
    if (fd_ >= 0) close(fd_);
  }
  DeadPort(const DeadPort&) = delete;
  DeadPort& operator=(const DeadPort&) = delete;

  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class DistctlRefusalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<rpc::PemKeyPair> ca = rpc::GenerateCertificateAuthority(
        "distctl_refusal_test CA", absl::Hours(1));
    ASSERT_TRUE(ca.ok()) << ca.status();
    absl::StatusOr<rpc::PemKeyPair> cert =
        rpc::IssueCertificate(*ca, "task", {"127.0.0.1"}, absl::Hours(1));
    ASSERT_TRUE(cert.ok()) << cert.status();
    ASSERT_TRUE(rpc::WriteTlsFiles(job_.path(), *ca, *cert).ok());
    // Another job's CA and certificate.
    absl::StatusOr<rpc::PemKeyPair> other_ca =
        rpc::GenerateCertificateAuthority("another CA", absl::Hours(1));
    ASSERT_TRUE(other_ca.ok()) << other_ca.status();
    absl::StatusOr<rpc::PemKeyPair> other_cert = rpc::IssueCertificate(
        *other_ca, "stranger", {"127.0.0.1"}, absl::Hours(1));
    ASSERT_TRUE(other_cert.ok()) << other_cert.status();
    ASSERT_TRUE(rpc::WriteTlsFiles(other_.path(), *other_ca, *other_cert).ok());
    for (const auto& [dir, token] :
         {std::pair(&job_, "job-token-0123456789abcdef"),
          std::pair(&other_, "another-token-0123456789abcdef")}) {
      ASSERT_EQ(chmod(dir->WriteFile("token", token).c_str(), 0600), 0);
    }
    absl::StatusOr<PsProcess> ps =
        testing::StartPsProcess(0, 1, JobFlags(job_, job_, job_));
    ASSERT_TRUE(ps.ok()) << ps.status();
    ps_ = *std::move(ps);
    cluster_spec_ = job_.WriteFile(
        "cluster.json",
        absl::StrCat(R"({"ps":["127.0.0.1:)", ps_.port, R"("]})"));
  }

  // --tls_cert/--tls_key from `cert`'s directory, --tls_ca from `ca`'s,
  // --cluster_token_file from `token`'s.
  static std::vector<std::string> JobFlags(const TestDir& cert,
                                           const TestDir& ca,
                                           const TestDir& token) {
    return {"--tls_cert=" + cert.path() + "/cert.pem",
            "--tls_key=" + cert.path() + "/key.pem",
            "--tls_ca=" + ca.path() + "/ca.pem",
            "--cluster_token_file=" + token.path() + "/token"};
  }

  // Runs distctl `command` with `flags` at `cluster_spec`, and checks that
  // it ended within kBound.
  static SubprocessResult Distctl(const std::vector<std::string>& command,
                                  const std::string& cluster_spec,
                                  const std::vector<std::string>& flags) {
    SubprocessOptions options;
    options.argv = {kDistctl};
    options.argv.insert(options.argv.end(), command.begin(), command.end());
    options.argv.push_back("--cluster_spec=" + cluster_spec);
    options.argv.push_back(absl::StrCat("--timeout_secs=", kTimeoutSecs));
    options.argv.insert(options.argv.end(), flags.begin(), flags.end());
    options.env["TF_CONFIG"] = std::nullopt;
    // Killed well after kBound: a hang fails the check below, not the test
    // runner's timeout.
    options.timeout = kBound + absl::Seconds(30);
    const absl::Time start = absl::Now();
    absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
    const absl::Duration took = absl::Now() - start;
    EXPECT_TRUE(result.ok()) << result.status();
    EXPECT_LT(took, kBound)
        << "distctl " << command[0] << " ignored --timeout_secs";
    return result.ok() ? *result : SubprocessResult{};
  }

  // What distctl printed about the failure: stats and shutdown print a line
  // per task on stdout, the other commands an error on stderr.
  static std::string Said(const SubprocessResult& result) {
    return result.stdout_text + result.stderr_text;
  }

  TestDir job_;
  TestDir other_;
  PsProcess ps_;
  std::string cluster_spec_;
};

TEST_F(DistctlRefusalTest, TheJobsCredentialsAreServed) {
  SubprocessResult stats =
      Distctl({"stats"}, cluster_spec_, JobFlags(job_, job_, job_));
  EXPECT_EQ(stats.exit_code, 0) << Said(stats);
  EXPECT_THAT(stats.stdout_text, HasSubstr("incarnation " + ps_.incarnation));
  SubprocessResult vars =
      Distctl({"vars"}, cluster_spec_, JobFlags(job_, job_, job_));
  EXPECT_EQ(vars.exit_code, 0) << Said(vars);
  EXPECT_THAT(vars.stdout_text, HasSubstr("no variables"));
}

TEST_F(DistctlRefusalTest, WrongTokenIsRefused) {
  for (const std::vector<std::string>& command : kCommands) {
    SCOPED_TRACE(command[0]);
    SubprocessResult result =
        Distctl(command, cluster_spec_, JobFlags(job_, job_, other_));
    EXPECT_EQ(result.exit_code, 1) << Said(result);
    EXPECT_THAT(Said(result), HasSubstr("refused ("));
    EXPECT_THAT(Said(result), HasSubstr("--cluster_token_file"));
    EXPECT_THAT(Said(result), Not(HasSubstr("unreachable")));
  }
}

TEST_F(DistctlRefusalTest, WithoutTlsIsRefusedInTime) {
  for (const std::vector<std::string>& command : kCommands) {
    SCOPED_TRACE(command[0]);
    SubprocessResult result = Distctl(command, cluster_spec_, {});
    EXPECT_EQ(result.exit_code, 1) << Said(result);
    EXPECT_THAT(Said(result), HasSubstr("refused ("));
    EXPECT_THAT(Said(result), HasSubstr("--tls_cert"));
    EXPECT_THAT(Said(result), Not(HasSubstr("unreachable")));
  }
}

TEST_F(DistctlRefusalTest, AnotherCasCertificateIsRefused) {
  // The job's CA trusted, but a certificate from another CA: the ps task
  // refuses it.
  SubprocessResult stats =
      Distctl({"stats"}, cluster_spec_, JobFlags(other_, job_, job_));
  EXPECT_EQ(stats.exit_code, 1) << Said(stats);
  EXPECT_THAT(Said(stats), HasSubstr("refused ("));
  SubprocessResult vars =
      Distctl({"vars"}, cluster_spec_, JobFlags(other_, job_, job_));
  EXPECT_EQ(vars.exit_code, 1) << Said(vars);
  EXPECT_THAT(Said(vars), HasSubstr("refused ("));
}

TEST_F(DistctlRefusalTest, AServerOfAnotherCaIsRefused) {
  // Everything from another job: distctl refuses the ps task's certificate.
  SubprocessResult stats =
      Distctl({"stats"}, cluster_spec_, JobFlags(other_, other_, other_));
  EXPECT_EQ(stats.exit_code, 1) << Said(stats);
  EXPECT_THAT(Said(stats), HasSubstr("refused (the TLS handshake failed"));
}

TEST_F(DistctlRefusalTest, NothingListeningIsUnreachable) {
  DeadPort dead;
  ASSERT_GT(dead.port(), 0);
  const std::string spec = job_.WriteFile(
      "dead.json",
      absl::StrCat(R"({"ps":["127.0.0.1:)", dead.port(), R"("]})"));
  for (const std::vector<std::string>& command : kCommands) {
    SCOPED_TRACE(command[0]);
    for (const std::vector<std::string>& flags :
         {std::vector<std::string>{}, JobFlags(job_, job_, job_)}) {
      SubprocessResult result = Distctl(command, spec, flags);
      EXPECT_EQ(result.exit_code, 1) << Said(result);
      EXPECT_THAT(Said(result), HasSubstr("unreachable ("));
      EXPECT_THAT(Said(result), Not(HasSubstr("refused (")));
    }
  }
}

}  // namespace
}  // namespace distrt
