// The TCP data plane's two ends in one process: DataPlaneServer with a
// serve function written here, DataPlaneConnection, and raw sockets for
// what a well-behaved client never sends.

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/data_plane_connection.h"
#include "rpc/data_plane_server.h"
#include "rpc/data_plane_wire.h"
#include "tests/util/byte_buffers.h"
#include "tests/util/log_lines.h"
#include "tests/util/loopback_socket.h"

namespace distrt::rpc {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(30);

using testing::BufferOfPieces;
using testing::BytesOf;

// Answers method m with "m:" and the request's bytes reversed; method 99 is
// refused with NOT_FOUND.
absl::Status Echo(int method, grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
  if (method == 99) return absl::NotFoundError("no method 99 here");
  std::string bytes = BytesOf(*in);
  std::reverse(bytes.begin(), bytes.end());
  *out = BufferOfPieces({absl::StrCat(method, ":"), bytes});
  return absl::OkStatus();
}

constexpr int kTask = 3;
constexpr uint64_t kIncarnation = 0x1234abcd5678ef00;

DataPlaneServer::Options TestOptions(int64_t max_message_bytes = 1 << 20) {
  DataPlaneServer::Options options;
  options.max_message_bytes = max_message_bytes;
  options.task_index = kTask;
  options.incarnation = kIncarnation;
  return options;
}

std::unique_ptr<DataPlaneServer> StartServer(
    DataPlaneServer::Serve serve, int64_t max_message_bytes = 1 << 20) {
  absl::StatusOr<std::unique_ptr<DataPlaneServer>> server =
      DataPlaneServer::Start(TestOptions(max_message_bytes), std::move(serve));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<DataPlaneConnection> ConnectTo(const DataPlaneServer& server) {
  absl::StatusOr<std::unique_ptr<DataPlaneConnection>> c =
      DataPlaneConnection::Connect("127.0.0.1", server.port(),
                                   {kTask, kIncarnation}, absl::Now() + kWait);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

// How the plain sockets for raw bytes connect: their reads give up after
// kWait rather than hang a broken test.
testing::LoopbackSocketOptions RawSocketOptions() {
  testing::LoopbackSocketOptions options;
  options.receive_timeout = kWait;
  return options;
}

// A plain socket connected to the server, for raw bytes, from `source` (an
// address of the loopback interface: on Linux all of 127.0.0.0/8).
int RawSocket(int port, const char* source = "127.0.0.1") {
  testing::LoopbackSocketOptions options = RawSocketOptions();
  options.source = source;
  return testing::ConnectLoopbackSocket(port, options);
}

void SendRaw(int fd, const std::string& bytes) {
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
}

// Whether the server closed `fd` (reads end) within kWait.
bool ClosedByServer(int fd) {
  char byte;
  return ReadExactly(DataPlaneSocket(fd), absl::MakeSpan(&byte, 1),
                     absl::Now() + kWait, "server")
             .code() == absl::StatusCode::kUnavailable;
}

// Whether the server is still serving `fd`: nothing to read, no end.
bool OpenNow(int fd) {
  char byte;
  return recv(fd, &byte, 1, MSG_DONTWAIT) < 0 &&
         (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Waits up to kWait for the server to close `want` of `fds` (reads end);
// then how many it has closed.
int WaitForClosed(const std::vector<int>& fds, int want) {
  std::vector<bool> closed(fds.size(), false);
  int count = 0;
  const absl::Time give_up = absl::Now() + kWait;
  for (;;) {
    std::vector<pollfd> open;
    std::vector<size_t> which;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!closed[i]) {
        open.push_back({fds[i], POLLIN, 0});
        which.push_back(i);
      }
    }
    // Once `want` have closed, one last look without waiting.
    const absl::Duration left =
        count >= want ? absl::ZeroDuration()
                      : std::max(give_up - absl::Now(), absl::ZeroDuration());
    const int ready = poll(open.data(), open.size(),
                           static_cast<int>(absl::ToInt64Milliseconds(left)));
    if (ready < 0 && errno != EINTR) return count;
    for (size_t k = 0; ready > 0 && k < open.size(); ++k) {
      if (open[k].revents == 0) continue;
      char byte;
      const ssize_t n = recv(open[k].fd, &byte, 1, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        closed[which[k]] = true;
        ++count;
      }
    }
    if (left == absl::ZeroDuration() && (ready <= 0 || count >= want)) {
      return count;
    }
  }
}

// Says hello on raw socket `fd` and reads the server's: whether it came,
// with no error.
bool Hello(int fd) {
  const std::string hello = EncodeClientHello("");
  if (write(fd, hello.data(), hello.size()) !=
      static_cast<ssize_t>(hello.size())) {
    return false;
  }
  char answer[kServerHelloBytes];
  if (!ReadExactly(DataPlaneSocket(fd), absl::MakeSpan(answer),
                   absl::Now() + kWait, "server")
           .ok()) {
    return false;
  }
  uint32_t error_length = 1;
  const absl::StatusOr<ServerHello> server = DecodeServerHello(
      absl::string_view(answer, sizeof(answer)), &error_length);
  return server.ok() && server->code == 0 && error_length == 0;
}

TEST(DataPlaneTest, CallsGoBackAndForthInOrderOnOneConnection) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  std::unique_ptr<DataPlaneConnection> c = ConnectTo(*server);
  ASSERT_NE(c, nullptr);
  const std::string big(300000, 'x');
  for (int call = 0; call < 3; ++call) {
    // A request of several slices, one of them large.
    const grpc::ByteBuffer request = BufferOfPieces({"ab", big, "cd"});
    ASSERT_TRUE(c->Send(call, request, absl::Now() + kWait).ok());
    grpc::Status status;
    grpc::ByteBuffer response;
    ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(BytesOf(response), absl::StrCat(call, ":dc", big, "ba"));
  }
  // An empty request and answer body travel too.
  ASSERT_TRUE(c->Send(7, grpc::ByteBuffer(), absl::Now() + kWait).ok());
  grpc::Status status;
  grpc::ByteBuffer response;
  ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
  EXPECT_EQ(BytesOf(response), "7:");
}

TEST(DataPlaneTest, AnErrorTravelsWithItsCodeAndTextAndTheConnectionGoesOn) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<DataPlaneConnection> c = ConnectTo(*server);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(99, BufferOfPieces({"x"}), absl::Now() + kWait).ok());
  grpc::Status status;
  grpc::ByteBuffer response;
  ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "no method 99 here");
  ASSERT_TRUE(c->Send(1, BufferOfPieces({"yz"}), absl::Now() + kWait).ok());
  ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(BytesOf(response), "1:zy");
}

TEST(DataPlaneTest, ARequestLargerThanTheServerTakesIsRefusedBeforeSending) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Echo, 1000);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<DataPlaneConnection> c = ConnectTo(*server);
  ASSERT_NE(c, nullptr);
  const absl::Status s =
      c->Send(1, BufferOfPieces({std::string(1001, 'x')}), absl::Now() + kWait);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("1001 bytes"));
  // Nothing was sent: the connection still works.
  ASSERT_TRUE(c->Send(1, BufferOfPieces({"ok"}), absl::Now() + kWait).ok());
  grpc::Status status;
  grpc::ByteBuffer response;
  ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
  EXPECT_EQ(BytesOf(response), "1:ko");
}

TEST(DataPlaneTest, AnOversizedHeaderIsAnsweredAndTheConnectionClosed) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Echo, 1000);
  ASSERT_NE(server, nullptr);
  const int fd = RawSocket(server->port());
  SendRaw(fd, EncodeClientHello(""));
  char hello[kServerHelloBytes];
  ASSERT_TRUE(ReadExactly(DataPlaneSocket(fd), absl::MakeSpan(hello),
                          absl::Now() + kWait, "s")
                  .ok());
  uint32_t error_length = 1;
  const absl::StatusOr<ServerHello> server_hello =
      DecodeServerHello(absl::string_view(hello, sizeof(hello)), &error_length);
  ASSERT_TRUE(server_hello.ok()) << server_hello.status();
  EXPECT_EQ(server_hello->max_message_bytes, 1000u);
  EXPECT_EQ(server_hello->task_index, static_cast<uint32_t>(kTask));
  EXPECT_EQ(server_hello->incarnation, kIncarnation);
  EXPECT_EQ(server_hello->methods_fingerprint, MethodsFingerprint());
  EXPECT_EQ(server_hello->code, 0u);
  EXPECT_EQ(error_length, 0u);
  SendRaw(fd, EncodeRequestHeader({1, uint64_t{1} << 40}));
  char header[kResponseHeaderBytes];
  ASSERT_TRUE(ReadExactly(DataPlaneSocket(fd), absl::MakeSpan(header),
                          absl::Now() + kWait, "s")
                  .ok());
  const ResponseHeader answer =
      DecodeResponseHeader(absl::string_view(header, sizeof(header)));
  EXPECT_EQ(answer.code,
            static_cast<uint32_t>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(answer.length, 0u);
  std::string error(answer.error_length, '\0');
  ASSERT_TRUE(ReadExactly(DataPlaneSocket(fd), absl::MakeSpan(error),
                          absl::Now() + kWait, "s")
                  .ok());
  EXPECT_THAT(error, HasSubstr("1099511627776 bytes"));
  EXPECT_TRUE(ClosedByServer(fd));
  close(fd);
}

TEST(DataPlaneTest, WhatIsNotAHelloIsClosedAndOthersAreStillServed) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  const int http = RawSocket(server->port());
  SendRaw(http, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(ClosedByServer(http));
  close(http);
  // A request cut short by its client ends that connection only.
  const int cut = RawSocket(server->port());
  SendRaw(cut, EncodeClientHello(""));
  SendRaw(cut, EncodeRequestHeader({1, 100}) + "only ten b");
  close(cut);
  std::unique_ptr<DataPlaneConnection> c = ConnectTo(*server);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(2, BufferOfPieces({"fine"}), absl::Now() + kWait).ok());
  grpc::Status status;
  grpc::ByteBuffer response;
  ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
  EXPECT_EQ(BytesOf(response), "2:enif");
}

TEST(DataPlaneTest, AClientOfAnotherVersionIsClosedAtOnce) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  const int old = RawSocket(server->port());
  // Version 1's whole hello: magic and version, 4 bytes short of this
  // version's. Closed on reading it, not at the hello's 10 s timeout.
  std::string hello(kDataPlaneMagic, sizeof(kDataPlaneMagic));
  hello.append({1, 0, 0, 0});
  SendRaw(old, hello);
  // Non-blocking, so that the read below keeps its deadline.
  fcntl(old, F_SETFL, fcntl(old, F_GETFL) | O_NONBLOCK);
  char byte;
  EXPECT_EQ(ReadExactly(DataPlaneSocket(old), absl::MakeSpan(&byte, 1),
                        absl::Now() + absl::Seconds(5), "server")
                .code(),
            absl::StatusCode::kUnavailable);
  close(old);
}

TEST(DataPlaneTest, AnAnswerThatDoesNotComeEndsAtTheDeadline) {
  absl::Notification answer;
  std::unique_ptr<DataPlaneServer> server =
      StartServer([&](int method, grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
        answer.WaitForNotification();
        return Echo(method, in, out);
      });
  ASSERT_NE(server, nullptr);
  std::unique_ptr<DataPlaneConnection> c = ConnectTo(*server);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(1, BufferOfPieces({"x"}), absl::Now() + kWait).ok());
  grpc::Status status;
  grpc::ByteBuffer response;
  const absl::Status s =
      c->Receive(absl::Now() + absl::Milliseconds(100), &status, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr(c->peer()));
  answer.Notify();
}

TEST(DataPlaneTest, StopClosesOpenConnections) {
  std::unique_ptr<DataPlaneServer> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<DataPlaneConnection> c = ConnectTo(*server);
  ASSERT_NE(c, nullptr);
  const int port = server->port();
  server->Stop();
  server->Stop();  // idempotent
  grpc::Status status;
  grpc::ByteBuffer response;
  EXPECT_EQ(c->Receive(absl::Now() + kWait, &status, &response).code(),
            absl::StatusCode::kUnavailable);
  const absl::StatusOr<std::unique_ptr<DataPlaneConnection>> refused =
      DataPlaneConnection::Connect("127.0.0.1", port, {kTask, kIncarnation},
                                   absl::Now() + kWait);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(),
              HasSubstr(absl::StrCat("127.0.0.1:", port)));
}

// Connects to a listener that answers the client's hello with `answer`.
absl::Status ConnectToAListenerSaying(const std::string& answer) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(
      bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      0);
  EXPECT_EQ(listen(listener, 1), 0);
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::thread peer([&] {
    const int fd = accept(listener, nullptr, nullptr);
    char hello[kClientHelloBytes];
    (void)!read(fd, hello, sizeof(hello));
    (void)!write(fd, answer.data(), answer.size());
    close(fd);
  });
  const absl::StatusOr<std::unique_ptr<DataPlaneConnection>> c =
      DataPlaneConnection::Connect("127.0.0.1", ntohs(address.sin_port),
                                   {kTask, kIncarnation}, absl::Now() + kWait);
  peer.join();
  close(listener);
  return c.status();
}

TEST(DataPlaneTest, OnlyTheExpectedTaskSpeakingTheseMethodsIsAccepted) {
  ServerHello hello;
  hello.max_message_bytes = 1000;
  hello.task_index = kTask;
  hello.incarnation = kIncarnation;
  hello.methods_fingerprint = MethodsFingerprint();
  EXPECT_TRUE(ConnectToAListenerSaying(EncodeServerHello(hello)).ok());

  absl::Status s = ConnectToAListenerSaying("HTTP/1.1 400 Bad Request\r\n\r\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("no hello"));

  ServerHello other_start = hello;
  other_start.incarnation = 7;
  s = ConnectToAListenerSaying(EncodeServerHello(other_start));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("is ps task 3 (incarnation "
                                     "0000000000000007), not ps task 3"));

  ServerHello other_task = hello;
  other_task.task_index = 1;
  s = ConnectToAListenerSaying(EncodeServerHello(other_task));
  EXPECT_THAT(s.message(), HasSubstr("is ps task 1"));

  ServerHello other_methods = hello;
  other_methods.methods_fingerprint ^= 1;
  s = ConnectToAListenerSaying(EncodeServerHello(other_methods));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("numbers its RPCs differently"));
}

TEST(DataPlaneTest, StopLetsARequestBeingServedBeAnswered) {
  absl::Notification serving, answer;
  std::unique_ptr<DataPlaneServer> server =
      StartServer([&](int method, grpc::ByteBuffer* in, grpc::ByteBuffer* out) {
        serving.Notify();
        answer.WaitForNotification();
        return Echo(method, in, out);
      });
  ASSERT_NE(server, nullptr);
  std::unique_ptr<DataPlaneConnection> c = ConnectTo(*server);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(4, BufferOfPieces({"late"}), absl::Now() + kWait).ok());
  ASSERT_TRUE(serving.WaitForNotificationWithTimeout(kWait));
  const int port = server->port();
  std::thread stop([&] { server->Stop(); });
  // Stopping has begun once the listener is gone.
  const absl::Time give_up = absl::Now() + kWait;
  while (absl::Now() < give_up &&
         DataPlaneConnection::Connect("127.0.0.1", port, {kTask, kIncarnation},
                                      absl::Now() + kWait)
             .ok()) {
  }
  answer.Notify();
  grpc::Status status;
  grpc::ByteBuffer response;
  ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(BytesOf(response), "4:etal");
  stop.join();
}

// Options for the tests of the bounds on connections in their handshake:
// small bounds, and a hello timeout far longer than the tests' waits, so
// that nothing they see comes from it.
DataPlaneServer::Options SmallBounds() {
  DataPlaneServer::Options options = TestOptions();
  options.max_connections = 32;
  options.max_unauthenticated = 16;
  options.max_unauthenticated_per_source = 8;
  options.hello_timeout = absl::Seconds(60);
  return options;
}

TEST(DataPlaneTest, IdleConnectionsCannotKeepAClientOfTheJobOut) {
  testing::LogLines log;
  DataPlaneServer::Options options = SmallBounds();
  options.log = log.Sink();
  absl::StatusOr<std::unique_ptr<DataPlaneServer>> server =
      DataPlaneServer::Start(options, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  // 48 idle connections, more than max_connections, from five addresses:
  // 16 from the first, 8 from each other.
  const std::vector<int> idle =
      testing::ConnectLoopbackSockets((*server)->port(),
                                      {"127.0.0.2", "127.0.0.2", "127.0.0.3",
                                       "127.0.0.4", "127.0.0.5", "127.0.0.6"},
                                      8, RawSocketOptions());
  // A client of the job still gets in, and is served: within kWait, half
  // the hello timeout, so not because an idle one timed out.
  std::unique_ptr<DataPlaneConnection> c = ConnectTo(**server);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send(5, BufferOfPieces({"in"}), absl::Now() + kWait).ok());
  grpc::Status status;
  grpc::ByteBuffer response;
  ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(BytesOf(response), "5:ni");
  // Of the idle ones, max_unauthenticated less the one that made room for
  // the client stay open; the server closed the others.
  EXPECT_EQ(WaitForClosed(idle, 48 - 15), 48 - 15);
  int open = 0;
  for (int fd : idle) open += OpenNow(fd);
  EXPECT_EQ(open, 15);
  // The client is authenticated: newcomers do not close it.
  const std::vector<int> more = testing::ConnectLoopbackSockets(
      (*server)->port(), {"127.0.0.7", "127.0.0.8", "127.0.0.9"}, 8,
      RawSocketOptions());
  ASSERT_TRUE(c->Send(6, BufferOfPieces({"still"}), absl::Now() + kWait).ok());
  ASSERT_TRUE(c->Receive(absl::Now() + kWait, &status, &response).ok());
  EXPECT_EQ(BytesOf(response), "6:llits");
  // The closures were said, naming an attacker's address.
  ASSERT_TRUE(log.WaitForLines(1, kWait));
  EXPECT_THAT(log.Lines()[0],
              HasSubstr("refused the connection from 127.0.0."));
  for (int fd : idle) close(fd);
  for (int fd : more) close(fd);
}

TEST(DataPlaneTest, ConnectionsBeyondTheBoundOfOneAddressAreClosedAtOnce) {
  testing::LogLines log;
  DataPlaneServer::Options options = SmallBounds();
  options.max_unauthenticated_per_source = 4;
  options.log = log.Sink();
  absl::StatusOr<std::unique_ptr<DataPlaneServer>> server =
      DataPlaneServer::Start(options, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  std::vector<int> first, extra;
  for (int i = 0; i < 4; ++i) first.push_back(RawSocket(port, "127.0.0.2"));
  for (int i = 0; i < 4; ++i) extra.push_back(RawSocket(port, "127.0.0.2"));
  // The extra ones end at once (the hello timeout is a minute).
  EXPECT_EQ(WaitForClosed(extra, 4), 4);
  // Another address is not bound by them.
  const int other = RawSocket(port, "127.0.0.3");
  EXPECT_TRUE(Hello(other));
  // The first four are still open; once one has said hello, the address
  // has room for another.
  for (int fd : first) EXPECT_TRUE(OpenNow(fd));
  EXPECT_TRUE(Hello(first[0]));
  const int again = RawSocket(port, "127.0.0.2");
  EXPECT_TRUE(Hello(again));
  ASSERT_TRUE(log.WaitForLines(1, kWait));
  const std::vector<std::string> lines = log.Lines();
  EXPECT_THAT(lines[0], HasSubstr("refused the connection from 127.0.0.2:"));
  EXPECT_THAT(lines[0], HasSubstr("too many connections still in their "
                                  "handshake from this address"));
  for (int fd : first) close(fd);
  for (int fd : extra) close(fd);
  close(other);
  close(again);
}

TEST(DataPlaneTest, BoundsThatLetHandshakesFillTheServerAreRefused) {
  DataPlaneServer::Options options = TestOptions();
  options.max_connections = 16;
  options.max_unauthenticated = 16;
  absl::Status s = DataPlaneServer::Start(options, Echo).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("max_unauthenticated (16) must be at "
                                     "least 1 and below max_connections (16)"));
  options = TestOptions();
  options.max_unauthenticated_per_source = 0;
  s = DataPlaneServer::Start(options, Echo).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("max_unauthenticated_per_source (0)"));
}

}  // namespace
}  // namespace distrt::rpc
