#include "runtime/metrics/metrics_http_server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/metrics/metrics_registry.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

struct HttpResponse {
  int status = 0;
  std::string status_line;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// Sends `request` to host:port (numeric host) over a plain socket and reads
// the response until the server closes the connection, as it does after an
// HTTP/1.0 request. The socket timeouts turn a hung server into a failure,
// not a hung test.
absl::StatusOr<HttpResponse> Exchange(const std::string& host, int port,
                                      absl::string_view request) {
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* address = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                           &address);
      rc != 0) {
    return absl::InvalidArgumentError(gai_strerror(rc));
  }
  const int fd =
      socket(address->ai_family, address->ai_socktype, address->ai_protocol);
  const timeval timeout = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  const int connected = connect(fd, address->ai_addr, address->ai_addrlen);
  const int connect_errno = errno;
  freeaddrinfo(address);
  if (connected != 0) {
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("connect: ", std::strerror(connect_errno)));
  }
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n =
        send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      return absl::UnavailableError("send failed");
    }
    sent += n;
  }
  std::string raw;
  char buffer[4096];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) raw.append(buffer, n);
  const int recv_errno = errno;
  close(fd);
  if (n < 0) {
    return absl::UnavailableError(
        absl::StrCat("recv: ", std::strerror(recv_errno)));
  }

  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    return absl::DataLossError(absl::StrCat("no end of headers in: ", raw));
  }
  HttpResponse response;
  response.body = raw.substr(head_end + 4);
  std::vector<std::string> lines =
      absl::StrSplit(raw.substr(0, head_end), "\r\n");
  response.status_line = lines[0];
  std::vector<absl::string_view> status_parts =
      absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  if (status_parts.size() < 2 ||
      !absl::SimpleAtoi(status_parts[1], &response.status)) {
    return absl::DataLossError(absl::StrCat("bad status line: ", lines[0]));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    std::pair<std::string, std::string> header =
        absl::StrSplit(lines[i], absl::MaxSplits(':', 1));
    response.headers[absl::AsciiStrToLower(header.first)] =
        std::string(absl::StripAsciiWhitespace(header.second));
  }
  return response;
}

absl::StatusOr<HttpResponse> Get(const std::string& host, int port,
                                 absl::string_view path) {
  return Exchange(
      host, port,
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host, "\r\n\r\n"));
}

class MetricsHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requests_ = registry_
                    .AddCounter("distrt_rpc_requests_total", "RPCs handled.",
                                {"method"})
                    .value();
    requests_->WithLabels({"Pull"})->Increment(3);
  }

  std::unique_ptr<MetricsHttpServer> StartOrDie(const std::string& host) {
    MetricsHttpServer::Options options;
    options.bind_host = host;
    options.registry = &registry_;
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
        MetricsHttpServer::Start(options);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  MetricsRegistry registry_;
  Counter* requests_ = nullptr;
};

TEST_F(MetricsHttpServerTest, ServesTheExpositionAtMetrics) {
  std::unique_ptr<MetricsHttpServer> server = StartOrDie("127.0.0.1");
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);

  absl::StatusOr<HttpResponse> response =
      Get("127.0.0.1", server->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(response->status_line, MatchesRegex("HTTP/1\\.[01] 200 OK"));
  EXPECT_EQ(response->headers["content-type"],
            "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response->body, registry_.Exposition());
  EXPECT_THAT(response->body,
              HasSubstr("\ndistrt_rpc_requests_total{method=\"Pull\"} 3\n"));

  // Each scrape renders the registry afresh.
  requests_->WithLabels({"Pull"})->Increment();
  response = Get("127.0.0.1", server->port(), "/metrics?ignored=1");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(response->body,
              HasSubstr("\ndistrt_rpc_requests_total{method=\"Pull\"} 4\n"));
}

TEST_F(MetricsHttpServerTest, OtherPathsAreNotFound) {
  std::unique_ptr<MetricsHttpServer> server = StartOrDie("127.0.0.1");
  ASSERT_NE(server, nullptr);
  for (const char* path : {"/", "/metric", "/metrics/", "/favicon.ico"}) {
    absl::StatusOr<HttpResponse> response =
        Get("127.0.0.1", server->port(), path);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 404) << path;
    EXPECT_THAT(response->body, Not(HasSubstr("distrt_rpc"))) << path;
  }
}

TEST_F(MetricsHttpServerTest, OtherMethodsAreNotAllowed) {
  std::unique_ptr<MetricsHttpServer> server = StartOrDie("127.0.0.1");
  ASSERT_NE(server, nullptr);
  absl::StatusOr<HttpResponse> response =
      Exchange("127.0.0.1", server->port(),
               "POST /metrics HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->headers["allow"], "GET");
}

TEST_F(MetricsHttpServerTest, ServesOverIpv6) {
  MetricsHttpServer::Options options;
  options.bind_host = "::1";
  options.registry = &registry_;
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start(options);
  if (server.status().code() == absl::StatusCode::kInvalidArgument) {
    GTEST_SKIP() << "no IPv6 loopback here: " << server.status();
  }
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<HttpResponse> response =
      Get("::1", (*server)->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, registry_.Exposition());
}

TEST_F(MetricsHttpServerTest, ResolvesAHostName) {
  std::unique_ptr<MetricsHttpServer> server = StartOrDie("localhost");
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
}

TEST_F(MetricsHttpServerTest, DestructorStopsServing) {
  std::unique_ptr<MetricsHttpServer> server = StartOrDie("127.0.0.1");
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  server.reset();
  absl::StatusOr<HttpResponse> response = Get("127.0.0.1", port, "/metrics");
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr("refused"));
}

TEST_F(MetricsHttpServerTest, PortInUseIsUnavailable) {
  std::unique_ptr<MetricsHttpServer> first = StartOrDie("127.0.0.1");
  ASSERT_NE(first, nullptr);
  MetricsHttpServer::Options options;
  options.registry = &registry_;
  options.port = first->port();
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> second =
      MetricsHttpServer::Start(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(),
              HasSubstr(absl::StrCat("127.0.0.1:", first->port())));
  EXPECT_THAT(second.status().message(), HasSubstr("in use"));
}

TEST_F(MetricsHttpServerTest, AddressOfAnotherMachineIsInvalid) {
  MetricsHttpServer::Options options;
  options.registry = &registry_;
  options.bind_host = "192.0.2.1";  // TEST-NET-1: nobody's address
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("192.0.2.1:0"));
}

TEST_F(MetricsHttpServerTest, RejectsBadOptions) {
  MetricsHttpServer::Options no_registry;
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start(no_registry);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("no registry"));

  MetricsHttpServer::Options bad_port;
  bad_port.registry = &registry_;
  bad_port.port = 70000;
  server = MetricsHttpServer::Start(bad_port);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("127.0.0.1:70000"));

  MetricsHttpServer::Options no_host;
  no_host.registry = &registry_;
  no_host.bind_host = "";
  server = MetricsHttpServer::Start(no_host);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("bind_host is empty"));
}

}  // namespace
}  // namespace distrt
