#include "client/failure_description.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/support/status.h"
#include "gtest/gtest.h"
#include "rpc/grpc_status.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// What distctl's calls failed with, as gRPC reported them (the messages are
// gRPC's and the ps servers' own texts).
absl::Status FromGrpc(grpc::StatusCode code, const std::string& message) {
  return rpc::FromGrpcStatus(grpc::Status(code, message),
                             "GetStatus to ps task 0 (127.0.0.1:2222)");
}

TEST(FailureDescriptionTest, WrongTokenIsRefused) {
  const absl::Status status =
      FromGrpc(grpc::StatusCode::PERMISSION_DENIED,
               "wrong cluster token (--cluster_token_file)");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kRefused);
  EXPECT_EQ(DescribeFailure(status, /*client_uses_tls=*/true),
            "refused (GetStatus to ps task 0 (127.0.0.1:2222): wrong cluster "
            "token (--cluster_token_file))");
}

TEST(FailureDescriptionTest, MissingTokenIsRefused) {
  const absl::Status status = absl::UnauthenticatedError(
      "this server requires the cluster token (--cluster_token_file) with "
      "every call");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kRefused);
  EXPECT_EQ(DescribeFailure(status, true),
            "refused (this server requires the cluster token "
            "(--cluster_token_file) with every call)");
}

TEST(FailureDescriptionTest, FailedHandshakeIsRefused) {
  for (const char* message :
       {"failed to connect to all addresses; last error: UNKNOWN: "
        "ipv4:127.0.0.1:2222: Ssl handshake failed: SSL_ERROR_SSL: "
        "error:0A000086:SSL routines::certificate verify failed",
        "failed to connect to all addresses; last error: UNAVAILABLE: "
        "ipv4:127.0.0.1:2222: error:0A00045C:SSL routines::tlsv13 alert "
        "certificate required",
        "failed to connect to all addresses; last error: UNKNOWN: "
        "CERTIFICATE_VERIFY_FAILED"}) {
    SCOPED_TRACE(message);
    const absl::Status status =
        FromGrpc(grpc::StatusCode::UNAVAILABLE, message);
    EXPECT_EQ(ClassifyFailure(status), FailureKind::kRefused);
    const std::string text = DescribeFailure(status, true);
    EXPECT_THAT(text, StartsWith("refused (the TLS handshake failed: "));
    EXPECT_THAT(text, HasSubstr(message));
    EXPECT_THAT(text, HasSubstr("check --tls_cert, --tls_key and --tls_ca"));
  }
}

TEST(FailureDescriptionTest, RetriedHandshakeFailureIsRefused) {
  // PsClient's message once it stops retrying.
  const absl::Status status = absl::UnavailableError(
      "ps task 0 (127.0.0.1:2222) did not answer ListVariables for 5s "
      "(--timeout_secs); last error: UNAVAILABLE: failed to connect to all "
      "addresses; last error: UNKNOWN: ipv4:127.0.0.1:2222: Ssl handshake "
      "failed: SSL_ERROR_SSL");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kRefused);
}

TEST(FailureDescriptionTest, NothingListeningIsUnreachable) {
  const absl::Status status =
      FromGrpc(grpc::StatusCode::UNAVAILABLE,
               "failed to connect to all addresses; last error: UNKNOWN: "
               "ipv4:127.0.0.1:1: Failed to connect to remote host: Connection "
               "refused");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kUnreachable);
  EXPECT_EQ(DescribeFailure(status, false),
            absl::StrCat("unreachable (", status.message(), ")"));
}

TEST(FailureDescriptionTest, NoAnswerInTimeIsUnreachable) {
  const absl::Status status =
      FromGrpc(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kUnreachable);
  EXPECT_EQ(DescribeFailure(status, true),
            "unreachable (GetStatus to ps task 0 (127.0.0.1:2222): Deadline "
            "Exceeded)");
}

TEST(FailureDescriptionTest, ConnectionClosedWhileConnectingIsRefused) {
  // A TLS server closes a plain-TCP client, and a client whose certificate
  // it refuses, before gRPC can speak.
  const absl::Status status =
      FromGrpc(grpc::StatusCode::UNAVAILABLE,
               "failed to connect to all addresses; last error: UNAVAILABLE: "
               "ipv4:127.0.0.1:2222: Socket closed");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kRefused);
  const std::string plain = DescribeFailure(status, false);
  EXPECT_THAT(plain, StartsWith("refused (the connection was closed"));
  EXPECT_THAT(plain, HasSubstr("Socket closed"));
  EXPECT_THAT(plain, HasSubstr("if the job uses TLS, pass --tls_cert, "
                               "--tls_key and --tls_ca"));
  const std::string tls = DescribeFailure(status, true);
  EXPECT_THAT(tls, StartsWith("refused (the connection was closed"));
  EXPECT_THAT(tls, HasSubstr("check that --tls_cert and --tls_key are a "
                             "certificate signed by the job's CA"));
}

// A retry that only timed out (inside gRPC's reconnect backoff) quotes the
// attempt before it, whose connection a TLS server closed: still a refusal.
TEST(FailureDescriptionTest, ATimeoutAfterAClosedConnectionIsRefused) {
  const absl::Status status = FromGrpc(
      grpc::StatusCode::DEADLINE_EXCEEDED,
      "Deadline Exceeded (an earlier attempt: UNAVAILABLE: failed to connect "
      "to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:2222: Socket "
      "closed)");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kRefused);
  EXPECT_THAT(DescribeFailure(status, false),
              StartsWith("refused (the connection was closed"));
}

TEST(FailureDescriptionTest, TaskGoneMidCallIsUnreachable) {
  const absl::Status status =
      FromGrpc(grpc::StatusCode::UNAVAILABLE, "Socket closed");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kUnreachable);
  EXPECT_EQ(DescribeFailure(status, false),
            "unreachable (GetStatus to ps task 0 (127.0.0.1:2222): Socket "
            "closed)");
}

TEST(FailureDescriptionTest, OtherErrorsAreTheirMessage) {
  const absl::Status status = absl::NotFoundError("no variable named \"w\"");
  EXPECT_EQ(ClassifyFailure(status), FailureKind::kOther);
  EXPECT_EQ(DescribeFailure(status, false), "no variable named \"w\"");
  // "certificate" in a message of another code is no handshake.
  EXPECT_EQ(ClassifyFailure(absl::InvalidArgumentError("bad certificate")),
            FailureKind::kOther);
}

}  // namespace
}  // namespace distrt
