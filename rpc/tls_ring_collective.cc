#include "rpc/tls_ring_collective.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "rpc/data_plane_wire.h"
#include "rpc/tcp_sockets.h"
#include "runtime/cluster/cluster_spec.h"

namespace distrt::rpc {
namespace {

// The connecting rank's hello, inside the TLS session: magic, version,
// rank, then the lengths of the token and the prefix, then both.
constexpr char kHelloMagic[4] = {'D', 'R', 'N', 'G'};
constexpr uint32_t kWireVersion = 1;
constexpr size_t kHelloFixedBytes = 4 + 4 * 4;
constexpr uint32_t kMaxHelloFieldBytes = 4096;
// The listener's answer: a status code (0: paired), nothing else; a refused
// peer learns no more than that (the listener logs why).
constexpr size_t kAnswerBytes = 4;
// Every message: the call's number and the payload's byte count.
constexpr size_t kMessageHeaderBytes = 16;
// Broadcast moves segments of this size along the ring, so that a rank
// forwards one while the next arrives.
constexpr size_t kBroadcastSegmentBytes = size_t{1} << 20;

void PutU32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetU32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}
void PutU64(char* out, uint64_t v) {
  PutU32(out, static_cast<uint32_t>(v));
  PutU32(out + 4, static_cast<uint32_t>(v >> 32));
}
uint64_t GetU64(const char* in) {
  return GetU32(in) | (static_cast<uint64_t>(GetU32(in + 4)) << 32);
}

std::string EncodeHello(int rank, absl::string_view token,
                        absl::string_view prefix) {
  std::string hello(kHelloFixedBytes, '\0');
  std::memcpy(hello.data(), kHelloMagic, 4);
  PutU32(hello.data() + 4, kWireVersion);
  PutU32(hello.data() + 8, static_cast<uint32_t>(rank));
  PutU32(hello.data() + 12, static_cast<uint32_t>(token.size()));
  PutU32(hello.data() + 16, static_cast<uint32_t>(prefix.size()));
  absl::StrAppend(&hello, token, prefix);
  return hello;
}

}  // namespace

// One TLS connection to a neighbour, used by one thread at a time.
class TlsRingCollective::Link {
 public:
  Link(int fd, DataPlaneTls::Session session, std::string peer)
      : fd_(fd), session_(std::move(session)), peer_(std::move(peer)) {}
  ~Link() {
    session_.reset();
    close(fd_);
  }

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  DataPlaneSocket socket() const {
    return DataPlaneSocket(fd_, session_.get());
  }

  absl::Status Send(uint64_t call, absl::Span<const char> bytes,
                    absl::Time deadline) const {
    char header[kMessageHeaderBytes];
    PutU64(header, call);
    PutU64(header + 8, bytes.size());
    std::vector<iovec> parts = {{header, sizeof(header)}};
    if (!bytes.empty()) {
      parts.push_back({const_cast<char*>(bytes.data()), bytes.size()});
    }
    return WriteAll(socket(), std::move(parts), deadline, peer_);
  }

  absl::Status Receive(uint64_t call, absl::Span<char> bytes,
                       absl::Time deadline) const {
    char header[kMessageHeaderBytes];
    if (absl::Status s =
            ReadExactly(socket(), absl::MakeSpan(header), deadline, peer_);
        !s.ok()) {
      return s;
    }
    const uint64_t their_call = GetU64(header);
    const uint64_t their_bytes = GetU64(header + 8);
    if (their_call != call || their_bytes != bytes.size()) {
      return absl::InternalError(absl::StrCat(
          "the ranks' calls differ: ", peer_, " sent ", their_bytes,
          " bytes as its collective #", their_call,
          " where this rank expected ", bytes.size(), " as its #", call));
    }
    if (bytes.empty()) return absl::OkStatus();
    return ReadExactly(socket(), bytes, deadline, peer_);
  }

 private:
  const int fd_;
  DataPlaneTls::Session session_;
  const std::string peer_;
};

namespace {

// INVALID_ARGUMENT, prefixed by `where`, for options Create cannot use.
absl::Status ValidateOptions(const TlsRingCollective::Options& options,
                             absl::string_view where) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the rank is not in [0, size)"));
  }
  if (options.timeout <= absl::ZeroDuration() ||
      options.connect_timeout < absl::ZeroDuration() ||
      options.hello_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": timeouts must be > 0"));
  }
  if (options.prefix.empty() || options.prefix.size() > kMaxHelloFieldBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the prefix must have 1 to ", kMaxHelloFieldBytes,
                     " characters"));
  }
  if (options.tls == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": no TLS (a job without it runs its collectives on Gloo)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsRingCollective>> TlsRingCollective::Create(
    KvStore* store, const Options& options) {
  const std::string where =
      absl::StrCat("TLS ring: rank ", options.rank, " of ", options.size,
                   " (group \"", options.prefix, "\")");
  if (absl::Status s = ValidateOptions(options, where); !s.ok()) return s;
  if (options.size == 1) {
    return std::unique_ptr<TlsRingCollective>(
        new TlsRingCollective(options, nullptr, nullptr));
  }
  const absl::Time deadline =
      absl::Now() + (options.connect_timeout > absl::ZeroDuration()
                         ? options.connect_timeout
                         : options.timeout);

  absl::StatusOr<ListeningSocket> listening = ListenTcp(options.host, 0);
  if (!listening.ok()) {
    return absl::UnavailableError(
        absl::StrCat(where, ": ", listening.status().message()));
  }
  const int listen_fd = listening->fd;
  // Non-blocking, so that a connection gone between poll and accept cannot
  // block the accept.
  fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
  if (absl::Status s =
          store->Set(absl::StrCat(options.prefix, "/", options.rank),
                     HostPortText(options.host, listening->port));
      !s.ok()) {
    close(listen_fd);
    return absl::Status(s.code(), absl::StrCat(where,
                                               ": publishing its "
                                               "address: ",
                                               s.message()));
  }

  // Connect to the right while accepting from the left: every rank does
  // both, so doing them one after the other would wait in a circle.
  absl::StatusOr<std::unique_ptr<Link>> right =
      absl::UnavailableError("not connected");
  std::thread connector(
      [&] { right = ConnectToRight(store, options, deadline); });
  int refused = 0;
  absl::StatusOr<std::unique_ptr<Link>> left =
      AcceptFromLeft(listen_fd, options, where, deadline, refused);
  close(listen_fd);  // nobody else may pair from now on
  connector.join();
  // The right-hand side's error first: a refused hello explains why the
  // left-hand neighbour (often the same rank) never came.
  if (!right.ok()) {
    return absl::Status(right.status().code(),
                        absl::StrCat(where, ": ", right.status().message()));
  }
  if (!left.ok()) {
    return absl::Status(
        left.status().code(),
        absl::StrCat(where, ": ", left.status().message(),
                     refused > 0 ? absl::StrCat(" (", refused,
                                                " other connections refused)")
                                 : ""));
  }
  return std::unique_ptr<TlsRingCollective>(
      new TlsRingCollective(options, *std::move(left), *std::move(right)));
}

absl::StatusOr<std::unique_ptr<TlsRingCollective::Link>>
TlsRingCollective::ConnectToRight(KvStore* store, const Options& options,
                                  absl::Time deadline) {
  const int right_rank = (options.rank + 1) % options.size;
  absl::StatusOr<std::vector<std::string>> address = store->Get(
      {absl::StrCat(options.prefix, "/", right_rank)}, deadline - absl::Now());
  if (!address.ok()) return address.status();
  absl::StatusOr<HostPort> published = ParseTaskAddress((*address)[0]);
  if (!published.ok()) return published.status();
  // Sockets and certificates take an IPv6 address without brackets.
  const std::string host(
      absl::StripSuffix(absl::StripPrefix(published->host, "["), "]"));
  const std::string peer =
      absl::StrCat("rank ", right_rank, " at ", (*address)[0]);
  absl::StatusOr<int> fd = ConnectTcp(host, published->port, deadline);
  if (!fd.ok()) {
    return absl::Status(fd.status().code(),
                        absl::StrCat(peer, ": ", fd.status().message()));
  }
  absl::StatusOr<DataPlaneTls::Session> session =
      options.tls->Connect(*fd, host, deadline, peer);
  if (!session.ok()) {
    close(*fd);
    return session.status();
  }
  auto link = std::make_unique<Link>(*fd, *std::move(session), peer);
  const std::string hello =
      EncodeHello(options.rank, options.tls->token(), options.prefix);
  char answer[kAnswerBytes];
  absl::Status s = WriteAll(link->socket(),
                            {{const_cast<char*>(hello.data()), hello.size()}},
                            deadline, peer);
  if (s.ok()) {
    s = ReadExactly(link->socket(), absl::MakeSpan(answer), deadline, peer);
  }
  if (s.ok() && GetU32(answer) != 0) {
    s = absl::PermissionDeniedError(absl::StrCat(
        peer, " refused this rank's hello (another job's token or group?)"));
  }
  if (!s.ok()) return s;
  return link;
}

absl::StatusOr<std::unique_ptr<TlsRingCollective::Link>>
TlsRingCollective::AcceptFromLeft(int listen_fd, const Options& options,
                                  absl::string_view where, absl::Time deadline,
                                  int& refused) {
  const int left_rank = (options.rank + options.size - 1) % options.size;
  while (absl::Now() < deadline) {
    if (absl::Status s = AwaitSocket(listen_fd, POLLIN, deadline, "");
        !s.ok()) {
      break;
    }
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&address),
                           &length, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;  // gone already, or out of descriptors: wait on
    const std::string peer = PeerName(address, length, "a peer");
    const absl::Time hello_by =
        std::min(deadline, absl::Now() + options.hello_timeout);
    std::string why;
    std::unique_ptr<Link> link;
    absl::StatusOr<DataPlaneTls::Session> session =
        options.tls->Accept(fd, hello_by, peer);
    if (!session.ok()) {
      why = std::string(session.status().message());
      close(fd);
    } else {
      link = std::make_unique<Link>(fd, *std::move(session), peer);
      why = AnswerHello(*link, options, hello_by);
    }
    if (why.empty()) return link;
    ++refused;
    if (options.log) {
      options.log(absl::StrCat(where, ": refused the connection from ", peer,
                               ": ", why));
    }
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "rank ", left_rank,
      " never connected with its certificate and the job's token"));
}

std::string TlsRingCollective::AnswerHello(Link& link, const Options& options,
                                           absl::Time hello_by) {
  const int left_rank = (options.rank + options.size - 1) % options.size;
  const std::string& peer = link.peer();
  char fixed[kHelloFixedBytes];
  if (absl::Status s =
          ReadExactly(link.socket(), absl::MakeSpan(fixed), hello_by, peer);
      !s.ok()) {
    return absl::StrCat("no hello: ", s.message());
  }
  const uint32_t token_bytes = GetU32(fixed + 12);
  const uint32_t prefix_bytes = GetU32(fixed + 16);
  if (std::memcmp(fixed, kHelloMagic, 4) != 0 ||
      GetU32(fixed + 4) != kWireVersion || token_bytes > kMaxHelloFieldBytes ||
      prefix_bytes > kMaxHelloFieldBytes) {
    return "not a TLS ring hello of this version";
  }
  std::string token(token_bytes, '\0'), prefix(prefix_bytes, '\0');
  absl::Status s =
      ReadExactly(link.socket(), absl::MakeSpan(token), hello_by, peer);
  if (s.ok()) {
    s = ReadExactly(link.socket(), absl::MakeSpan(prefix), hello_by, peer);
  }
  if (!s.ok()) return absl::StrCat("a cut hello: ", s.message());
  std::string why;
  if (absl::Status allowed = options.tls->CheckToken(token); !allowed.ok()) {
    why = std::string(allowed.message());
  } else if (prefix != options.prefix) {
    why = absl::StrCat("its hello is for group \"", prefix, "\"");
  } else if (GetU32(fixed + 8) != static_cast<uint32_t>(left_rank)) {
    why = absl::StrCat("it says it is rank ", GetU32(fixed + 8),
                       ", not this rank's left-hand neighbour ", left_rank);
  }
  char answer[kAnswerBytes];
  PutU32(answer, why.empty() ? 0 : 1);
  s = WriteAll(link.socket(), {{answer, sizeof(answer)}}, hello_by, peer);
  if (!why.empty()) return why;
  if (!s.ok()) return std::string(s.message());
  return "";
}

TlsRingCollective::TlsRingCollective(const Options& options,
                                     std::unique_ptr<Link> left,
                                     std::unique_ptr<Link> right)
    : rank_(options.rank),
      size_(options.size),
      prefix_(options.prefix),
      timeout_(options.timeout),
      left_(std::move(left)),
      right_(std::move(right)) {}

TlsRingCollective::~TlsRingCollective() { Close(); }

void TlsRingCollective::Close() {
  // Before taking mu_: a collective in progress holds it, and fails at once
  // on its shut sockets instead of at its timeout.
  if (left_ != nullptr) shutdown(left_->fd(), SHUT_RDWR);
  if (right_ != nullptr) shutdown(right_->fd(), SHUT_RDWR);
  absl::MutexLock lock(&mu_);
  if (failed_.ok()) {
    failed_ = absl::FailedPreconditionError(
        absl::StrCat("TLS ring \"", prefix_, "\": closed"));
  }
}

absl::Status TlsRingCollective::BeginCall(absl::string_view what) {
  if (!failed_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("TLS ring \"", prefix_, "\": ", what, " on rank ", rank_,
                     ": the group failed earlier: ", failed_.message()));
  }
  ++calls_;
  return absl::OkStatus();
}

absl::Status TlsRingCollective::EndCall(absl::string_view what,
                                        absl::Status status) {
  if (status.ok()) return status;
  status = absl::Status(
      status.code(),
      absl::StrCat("TLS ring \"", prefix_, "\": ", what, " on rank ", rank_,
                   " of ", size_, ": ", status.message()));
  failed_ = status;
  return status;
}

absl::Status TlsRingCollective::Exchange(absl::Span<const char> out,
                                         absl::Span<char> in, uint64_t call,
                                         absl::Time deadline) {
  // The right-hand link is written by its own thread while this one reads
  // the left-hand link: each TLS session is used by one thread.
  absl::Status sent;
  const Link* right = right_.get();
  std::thread sender([&] { sent = right->Send(call, out, deadline); });
  absl::Status received = left_->Receive(call, in, deadline);
  if (!received.ok()) {
    // Unblock the sender at once rather than at the deadline.
    shutdown(right_->fd(), SHUT_RDWR);
  }
  sender.join();
  return received.ok() ? sent : received;
}

namespace {

// Block b of `count` elements split among `n` ranks: [Start(b), Start(b+1)).
size_t BlockStart(size_t count, int n, int b) {
  return count * static_cast<size_t>(b) / static_cast<size_t>(n);
}

template <typename T>
absl::Span<const char> BytesOf(absl::Span<const T> values) {
  return absl::Span<const char>(reinterpret_cast<const char*>(values.data()),
                                values.size() * sizeof(T));
}
template <typename T>
absl::Span<char> BytesOf(absl::Span<T> values) {
  return absl::Span<char>(reinterpret_cast<char*>(values.data()),
                          values.size() * sizeof(T));
}

}  // namespace

template <typename T>
absl::Status TlsRingCollective::RingAllReduce(absl::Span<T> values) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = BeginCall("all-reduce"); !s.ok()) return s;
  if (size_ == 1) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + timeout_;
  const size_t count = values.size();
  auto block = [&](int b) {
    b = ((b % size_) + size_) % size_;
    const size_t start = BlockStart(count, size_, b);
    return values.subspan(start, BlockStart(count, size_, b + 1) - start);
  };
  std::vector<T> incoming(count / size_ + 1);
  // Reduce-scatter: after size - 1 steps this rank holds the whole sum of
  // block rank + 1.
  for (int step = 0; step < size_ - 1; ++step) {
    absl::Span<T> out = block(rank_ - step);
    absl::Span<T> in = block(rank_ - step - 1);
    absl::Span<T> scratch = absl::MakeSpan(incoming).first(in.size());
    if (absl::Status s = Exchange(BytesOf(absl::Span<const T>(out)),
                                  BytesOf(scratch), calls_, deadline);
        !s.ok()) {
      return EndCall("all-reduce", s);
    }
    for (size_t i = 0; i < in.size(); ++i) in[i] += scratch[i];
  }
  // All-gather: each whole block goes round the ring.
  for (int step = 0; step < size_ - 1; ++step) {
    absl::Span<T> out = block(rank_ + 1 - step);
    absl::Span<T> in = block(rank_ - step);
    if (absl::Status s = Exchange(BytesOf(absl::Span<const T>(out)),
                                  BytesOf(in), calls_, deadline);
        !s.ok()) {
      return EndCall("all-reduce", s);
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status TlsRingCollective::RingBroadcast(absl::Span<T> values, int root) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS ring \"", prefix_, "\": broadcast from rank ", root,
                     ", which is not in [0, ", size_, ")"));
  }
  absl::MutexLock lock(&mu_);
  if (absl::Status s = BeginCall("broadcast"); !s.ok()) return s;
  if (size_ == 1) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + timeout_;
  // How far along the ring from the root: the root only sends, the last
  // only receives, so nobody waits in a circle.
  const int distance = (rank_ - root + size_) % size_;
  absl::Span<char> bytes = BytesOf(values);
  size_t offset = 0;
  do {
    const size_t n = std::min(kBroadcastSegmentBytes, bytes.size() - offset);
    absl::Span<char> segment = bytes.subspan(offset, n);
    absl::Status s;
    if (distance > 0) s = left_->Receive(calls_, segment, deadline);
    if (s.ok() && distance < size_ - 1) {
      s = right_->Send(calls_, segment, deadline);
    }
    if (!s.ok()) return EndCall("broadcast", s);
    offset += n;
  } while (offset < bytes.size());
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<std::vector<T>> TlsRingCollective::RingAllGather(
    absl::Span<const T> mine) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = BeginCall("all-gather"); !s.ok()) return s;
  if (size_ == 1) return std::vector<T>(mine.begin(), mine.end());
  const absl::Time deadline = absl::Now() + timeout_;
  // First every rank's count, round the ring, then the blocks the same way.
  std::vector<int64_t> counts(size_);
  counts[rank_] = static_cast<int64_t>(mine.size());
  for (int step = 0; step < size_ - 1; ++step) {
    const int out = (rank_ - step + size_) % size_;
    const int in = (rank_ - step - 1 + size_) % size_;
    if (absl::Status s = Exchange(
            BytesOf(absl::Span<const int64_t>(&counts[out], 1)),
            BytesOf(absl::Span<int64_t>(&counts[in], 1)), calls_, deadline);
        !s.ok()) {
      return EndCall("all-gather", s);
    }
  }
  std::vector<size_t> starts(size_ + 1, 0);
  for (int r = 0; r < size_; ++r) {
    if (counts[r] < 0 || counts[r] > (int64_t{1} << 40)) {
      return EndCall("all-gather",
                     absl::InternalError(absl::StrCat("rank ", r, " announced ",
                                                      counts[r], " elements")));
    }
    starts[r + 1] = starts[r] + static_cast<size_t>(counts[r]);
  }
  std::vector<T> all(starts[size_]);
  std::copy(mine.begin(), mine.end(), all.begin() + starts[rank_]);
  auto block = [&](int r) {
    return absl::MakeSpan(all).subspan(starts[r], starts[r + 1] - starts[r]);
  };
  for (int step = 0; step < size_ - 1; ++step) {
    const int out = (rank_ - step + size_) % size_;
    const int in = (rank_ - step - 1 + size_) % size_;
    if (absl::Status s = Exchange(BytesOf(absl::Span<const T>(block(out))),
                                  BytesOf(block(in)), calls_, deadline);
        !s.ok()) {
      return EndCall("all-gather", s);
    }
  }
  return all;
}

absl::Status TlsRingCollective::AllReduceSum(absl::Span<float> values) {
  return RingAllReduce(values);
}
absl::Status TlsRingCollective::AllReduceSum(absl::Span<int64_t> values) {
  return RingAllReduce(values);
}
absl::Status TlsRingCollective::AllReduceSum(absl::Span<double> values) {
  return RingAllReduce(values);
}
absl::Status TlsRingCollective::Broadcast(absl::Span<float> values, int root) {
  return RingBroadcast(values, root);
}
absl::Status TlsRingCollective::Broadcast(absl::Span<int64_t> values,
                                          int root) {
  return RingBroadcast(values, root);
}
absl::StatusOr<std::vector<float>> TlsRingCollective::AllGather(
    absl::Span<const float> mine) {
  return RingAllGather(mine);
}
absl::StatusOr<std::vector<int64_t>> TlsRingCollective::AllGather(
    absl::Span<const int64_t> mine) {
  return RingAllGather(mine);
}
absl::Status TlsRingCollective::Barrier() {
  int64_t one = 1;
  return RingAllReduce(absl::MakeSpan(&one, 1));
}

}  // namespace distrt::rpc
