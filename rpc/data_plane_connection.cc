#include "rpc/data_plane_connection.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rpc/data_plane_wire.h"

namespace distrt::rpc {
namespace {

// Largest error text and response this client takes from a server: beyond
// them the stream is not a ps task's answer.
constexpr uint64_t kMaxResponseSlack = 1 << 20;

// Connects a non-blocking socket to `a` by `deadline`; the socket or an
// error text.
absl::StatusOr<int> ConnectTo(const addrinfo& a, absl::Time deadline) {
  const int fd = socket(
      a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol);
  if (fd < 0) return absl::UnavailableError(std::strerror(errno));
  if (connect(fd, a.ai_addr, a.ai_addrlen) != 0 && errno != EINPROGRESS) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(std::strerror(error));
  }
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      close(fd);
      return absl::DeadlineExceededError(
          "the deadline passed while connecting");
    }
    pollfd p{fd, POLLOUT, 0};
    const int n = poll(
        &p, 1,
        static_cast<int>(std::min<int64_t>(
            absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))),
            INT32_MAX)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // the deadline is checked above
    int error = 0;
    socklen_t length = sizeof(error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      close(fd);
      return absl::UnavailableError(std::strerror(error));
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataPlaneConnection>>
DataPlaneConnection::Connect(const std::string& host, int port,
                             const Expected& expected, absl::Time deadline,
                             const DataPlaneTls* tls) {
  const std::string peer = host.find(':') != std::string::npos
                               ? absl::StrCat("[", host, "]:", port)
                               : absl::StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error =
      getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (error != 0) {
    return absl::UnavailableError(absl::StrCat(
        "TCP data plane at ", peer, ": cannot resolve: ", gai_strerror(error)));
  }
  absl::Status last = absl::UnavailableError("no address");
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    absl::StatusOr<int> connected = ConnectTo(*a, deadline);
    if (connected.ok()) {
      fd = *connected;
    } else {
      last = connected.status();
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::Status(last.code(),
                        absl::StrCat("TCP data plane at ", peer,
                                     ": cannot connect: ", last.message()));
  }
  DataPlaneTls::Session session;
  if (tls != nullptr) {
    absl::StatusOr<DataPlaneTls::Session> started =
        tls->Connect(fd, host, deadline, peer);
    if (!started.ok()) {
      close(fd);
      return started.status();
    }
    session = *std::move(started);
  }
  const DataPlaneSocket socket(fd, session.get());
  const std::string hello =
      EncodeClientHello(tls != nullptr ? tls->token() : "");
  char answer[kServerHelloBytes];
  absl::Status sent =
      WriteAll(socket, {{const_cast<char*>(hello.data()), hello.size()}},
               deadline, peer);
  if (sent.ok()) {
    sent = ReadExactly(socket, absl::MakeSpan(answer), deadline, peer);
  }
  uint32_t error_length = 0;
  absl::StatusOr<ServerHello> server =
      sent.ok() ? DecodeServerHello(absl::string_view(answer, sizeof(answer)),
                                    &error_length)
                : absl::StatusOr<ServerHello>(sent);
  if (server.ok() && error_length > 0) {
    server->error.resize(error_length);
    if (absl::Status s =
            ReadExactly(socket, absl::MakeSpan(server->error), deadline, peer);
        !s.ok()) {
      server = s;
    }
  }
  absl::Status refused;
  if (!server.ok()) {
    const absl::Status& s = server.status();
    refused = absl::Status(
        s.code() == absl::StatusCode::kInvalidArgument
            ? absl::StatusCode::kUnavailable
            : s.code(),
        absl::StrCat("TCP data plane at ", peer, ": no hello: ", s.message()));
  } else if (server->code != 0) {
    const auto code = static_cast<absl::StatusCode>(server->code);
    refused = absl::Status(
        code == absl::StatusCode::kOk ? absl::StatusCode::kUnknown : code,
        absl::StrCat("TCP data plane at ", peer,
                     " refused this client: ", server->error));
  } else if (server->methods_fingerprint != MethodsFingerprint()) {
    refused = absl::UnavailableError(absl::StrCat(
        "TCP data plane at ", peer,
        " numbers its RPCs differently (a ps_server of another version)"));
  } else if (static_cast<int>(server->task_index) != expected.task_index ||
             server->incarnation != expected.incarnation) {
    refused = absl::UnavailableError(absl::StrCat(
        "TCP data plane at ", peer, " is ps task ", server->task_index,
        " (incarnation ", absl::Hex(server->incarnation, absl::kZeroPad16),
        "), not ps task ", expected.task_index, " (incarnation ",
        absl::Hex(expected.incarnation, absl::kZeroPad16), ")"));
  }
  if (!refused.ok()) {
    session.reset();
    close(fd);
    return refused;
  }
  // A server's word on its limit is bounded here, so that no sum below
  // overflows.
  const uint64_t limit =
      std::min<uint64_t>(server->max_message_bytes, uint64_t{1} << 40);
  return std::unique_ptr<DataPlaneConnection>(
      new DataPlaneConnection(fd, std::move(session), peer, limit));
}

// The session, freed after this, sends nothing: its BIO never touches the
// descriptor again.
DataPlaneConnection::~DataPlaneConnection() { close(fd_); }

absl::Status DataPlaneConnection::Send(int method,
                                       const grpc::ByteBuffer& request,
                                       absl::Time deadline) {
  std::vector<grpc::Slice> slices;
  std::vector<iovec> message = MessageParts(request, slices);
  uint64_t length = 0;
  for (const iovec& part : message) length += part.iov_len;
  if (length > max_message_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a request of ", length, " bytes is larger than the ps task at ", peer_,
        " accepts (", max_message_bytes_, ")"));
  }
  std::string header =
      EncodeRequestHeader({static_cast<uint32_t>(method), length});
  std::vector<iovec> parts;
  parts.reserve(message.size() + 1);
  parts.push_back({header.data(), header.size()});
  parts.insert(parts.end(), message.begin(), message.end());
  return WriteAll(socket_, std::move(parts), deadline, peer_);
}

absl::Status DataPlaneConnection::Receive(absl::Time deadline,
                                          grpc::Status* status,
                                          grpc::ByteBuffer* response) {
  char bytes[kResponseHeaderBytes];
  if (absl::Status s =
          ReadExactly(socket_, absl::MakeSpan(bytes), deadline, peer_);
      !s.ok()) {
    return s;
  }
  const ResponseHeader header =
      DecodeResponseHeader(absl::string_view(bytes, sizeof(bytes)));
  if (header.code > static_cast<uint32_t>(grpc::StatusCode::UNAUTHENTICATED) ||
      header.error_length > kMaxErrorBytes ||
      header.length > max_message_bytes_ + kMaxResponseSlack ||
      (header.code != 0 && header.length != 0)) {
    return absl::InternalError(absl::StrCat(
        "TCP data plane at ", peer_, " sent a malformed answer (status ",
        header.code, ", ", header.error_length, " bytes of error, ",
        header.length, " bytes of message)"));
  }
  std::string error(header.error_length, '\0');
  if (absl::Status s =
          ReadExactly(socket_, absl::MakeSpan(error), deadline, peer_);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<grpc::ByteBuffer> message =
      ReadMessage(socket_, header.length, deadline, peer_);
  if (!message.ok()) return message.status();
  *status = grpc::Status(static_cast<grpc::StatusCode>(header.code), error);
  *response = *std::move(message);
  return absl::OkStatus();
}

}  // namespace distrt::rpc
