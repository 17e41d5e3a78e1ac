#include "bench/tcp_baseline.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

// How often the server's thread looks at its stop flag while idle.
constexpr int kPollIntervalMs = 100;
constexpr size_t kHeaderBytes = 8;
constexpr uint64_t kPullBit = uint64_t{1} << 63;

absl::Status ErrnoError(absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

void EncodeHeader(uint64_t word, unsigned char out[kHeaderBytes]) {
  for (size_t i = 0; i < kHeaderBytes; ++i) {
    out[i] = static_cast<unsigned char>(word >> (8 * i));
  }
}

uint64_t DecodeHeader(const unsigned char in[kHeaderBytes]) {
  uint64_t word = 0;
  for (size_t i = 0; i < kHeaderBytes; ++i) {
    word |= static_cast<uint64_t>(in[i]) << (8 * i);
  }
  return word;
}

// TCP_NODELAY, so that the header, the ack and the last segment of a payload
// go out at once instead of waiting for Nagle's timer; SO_RCVTIMEO and
// SO_SNDTIMEO, so that no read or write (nor connect) blocks for longer than
// `io_timeout`.
absl::Status ConfigureSocket(int fd, absl::Duration io_timeout) {
  const int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return ErrnoError("setsockopt(TCP_NODELAY)");
  }
  const timeval timeout = absl::ToTimeval(io_timeout);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)) != 0) {
    return ErrnoError("setsockopt(SO_RCVTIMEO/SO_SNDTIMEO)");
  }
  return absl::OkStatus();
}

// Reads exactly `n` bytes into `data`. Each recv either makes progress or
// ends the loop, and blocks at most SO_RCVTIMEO.
absl::Status ReadFull(int fd, void* data, size_t n) {
  char* at = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = recv(fd, at, n, 0);
    if (r > 0) {
      at += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) {
      return absl::UnavailableError(absl::StrCat(
          "the peer closed the connection with ", n, " bytes still to come"));
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no bytes within the socket timeout, ", n, " still to come"));
    }
    return ErrnoError("recv");
  }
  return absl::OkStatus();
}

// Writes every byte of iov[0..count), resuming after partial writes; each
// sendmsg blocks at most SO_SNDTIMEO. MSG_NOSIGNAL: a closed peer is an
// error here, not a SIGPIPE that ends the process.
absl::Status WriteFull(int fd, iovec* iov, int count) {
  while (count > 0) {
    msghdr message = {};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t w = sendmsg(fd, &message, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return absl::DeadlineExceededError(
            "the peer took no bytes within the socket timeout");
      }
      return ErrnoError("sendmsg");
    }
    // Drop what was written, whole buffers first (empty ones too).
    size_t written = static_cast<size_t>(w);
    while (count > 0 && written >= iov->iov_len) {
      written -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + written;
      iov->iov_len -= written;
    }
  }
  return absl::OkStatus();
}

// Whether `fd` has something to read (or is closed) within one poll
// interval.
bool WaitReadable(int fd) {
  pollfd p = {};
  p.fd = fd;
  p.events = POLLIN;
  return poll(&p, 1, kPollIntervalMs) > 0;
}

sockaddr_in Loopback(int port) {
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

absl::Status CheckOptions(const TcpBaselineOptions& options) {
  if (options.max_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_bytes is negative (", options.max_bytes, ")"));
  }
  if (options.io_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("io_timeout must be positive, not ",
                     absl::FormatDuration(options.io_timeout)));
  }
  return absl::OkStatus();
}

}  // namespace

TcpBaselineServer::TcpBaselineServer(const TcpBaselineOptions& options,
                                     int listen_fd, int port)
    : options_(options), listen_fd_(listen_fd), port_(port) {
  const size_t bytes = std::max<size_t>(1, options.max_bytes);
  push_buffer_ = std::make_unique<char[]>(bytes);
  pull_buffer_ = std::make_unique<char[]>(bytes);
  // Written once so that their pages are mapped before any call is timed.
  std::memset(push_buffer_.get(), 0, bytes);
  std::memset(pull_buffer_.get(), 0x5a, bytes);
}

absl::StatusOr<std::unique_ptr<TcpBaselineServer>> TcpBaselineServer::Start(
    const TcpBaselineOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("raw TCP baseline: socket");
  sockaddr_in address = Loopback(0);
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) !=
          0 ||
      listen(fd, 4) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    absl::Status error = ErrnoError("raw TCP baseline: listen on 127.0.0.1:0");
    close(fd);
    return error;
  }
  std::unique_ptr<TcpBaselineServer> server(
      new TcpBaselineServer(options, fd, ntohs(address.sin_port)));
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

TcpBaselineServer::~TcpBaselineServer() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
}

void TcpBaselineServer::Serve() {
  while (!stopping_.load()) {
    if (!WaitReadable(listen_fd_)) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    // A failed accept (the peer gave up first) is retried after the next
    // poll.
    if (fd < 0) continue;
    if (ConfigureSocket(fd, options_.io_timeout).ok()) ServeConnection(fd);
    close(fd);
  }
}

void TcpBaselineServer::ServeConnection(int fd) {
  // Errors end the connection: the client sees it closed and reports that.
  while (!stopping_.load()) {
    if (!WaitReadable(fd)) continue;
    unsigned char header[kHeaderBytes];
    if (!ReadFull(fd, header, sizeof(header)).ok()) return;
    const uint64_t word = DecodeHeader(header);
    const uint64_t n = word & ~kPullBit;
    if (n > static_cast<uint64_t>(options_.max_bytes)) return;
    if ((word & kPullBit) != 0) {
      iovec iov = {pull_buffer_.get(), static_cast<size_t>(n)};
      if (!WriteFull(fd, &iov, 1).ok()) return;
    } else {
      if (!ReadFull(fd, push_buffer_.get(), n).ok()) return;
      char ack = 1;
      iovec iov = {&ack, 1};
      if (!WriteFull(fd, &iov, 1).ok()) return;
    }
  }
}

absl::StatusOr<std::unique_ptr<TcpBaselineClient>> TcpBaselineClient::Connect(
    int port, const TcpBaselineOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("raw TCP baseline: socket");
  absl::Status s = ConfigureSocket(fd, options.io_timeout);
  const sockaddr_in address = Loopback(port);
  if (s.ok() && connect(fd, reinterpret_cast<const sockaddr*>(&address),
                        sizeof(address)) != 0) {
    s = ErrnoError("connect");
  }
  if (!s.ok()) {
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("raw TCP baseline: cannot connect to 127.0.0.1:", port,
                     ": ", s.message()));
  }
  return std::unique_ptr<TcpBaselineClient>(new TcpBaselineClient(fd, port));
}

TcpBaselineClient::~TcpBaselineClient() {
  if (fd_ >= 0) close(fd_);
}

absl::Status TcpBaselineClient::Failed(absl::Status status) {
  broken_ = absl::Status(
      status.code(), absl::StrCat("raw TCP baseline 127.0.0.1:", port_, ": ",
                                  status.message()));
  return broken_;
}

absl::Status TcpBaselineClient::Push(absl::Span<const char> payload) {
  RETURN_IF_ERROR(broken_);
  unsigned char header[kHeaderBytes];
  EncodeHeader(payload.size(), header);
  // One sendmsg for header and payload: no small segment of its own for the
  // header.
  iovec iov[2] = {{header, sizeof(header)},
                  {const_cast<char*>(payload.data()), payload.size()}};
  if (absl::Status s = WriteFull(fd_, iov, 2); !s.ok()) return Failed(s);
  char ack = 0;
  if (absl::Status s = ReadFull(fd_, &ack, 1); !s.ok()) return Failed(s);
  return absl::OkStatus();
}

absl::Status TcpBaselineClient::Pull(absl::Span<char> out) {
  RETURN_IF_ERROR(broken_);
  unsigned char header[kHeaderBytes];
  EncodeHeader(out.size() | kPullBit, header);
  iovec iov = {header, sizeof(header)};
  if (absl::Status s = WriteFull(fd_, &iov, 1); !s.ok()) return Failed(s);
  if (absl::Status s = ReadFull(fd_, out.data(), out.size()); !s.ok()) {
    return Failed(s);
  }
  return absl::OkStatus();
}

}  // namespace distrt::bench
