#include "rpc/data_plane_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <list>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rpc/data_plane_wire.h"
#include "rpc/tcp_sockets.h"

namespace distrt::rpc {
namespace {

// The source a peer's unauthenticated connections are counted against: its
// IPv4 address, or its IPv6 address's /64 (one host usually has a whole
// /64 to pick from).
std::string SourceOf(const sockaddr_storage& address, socklen_t length) {
  if (address.ss_family == AF_INET6) {
    in6_addr ip = reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
    if (!IN6_IS_ADDR_V4MAPPED(&ip)) {
      std::memset(&ip.s6_addr[8], 0, 8);
      char text[INET6_ADDRSTRLEN];
      if (inet_ntop(AF_INET6, &ip, text, sizeof(text)) == nullptr) return "";
      return absl::StrCat(text, "/64");
    }
  }
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host,
                  sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) {
    return "";
  }
  return host;
}

}  // namespace

class DataPlaneServer::Impl {
 public:
  Impl(const Options& options, Serve serve, int listen_fd, int port)
      : options_(options),
        serve_(std::move(serve)),
        listen_fd_(listen_fd),
        port_(port) {
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~Impl() { Stop(); }

  int port() const { return port_; }

  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      if (state_ != State::kServing) {
        mu_.Await(absl::Condition(
            +[](State* state) { return *state == State::kStopped; }, &state_));
        return;
      }
      state_ = State::kStopping;
      stopping_.store(true, std::memory_order_relaxed);
      // Wakes accept(), which then fails and sees the state.
      shutdown(listen_fd_, SHUT_RDWR);
    }
    acceptor_.join();
    std::list<std::unique_ptr<Connection>> connections;
    {
      absl::MutexLock lock(&mu_);
      // No request is read any more: idle connections end at once, one
      // being served writes its answer.
      for (const auto& c : connections_) shutdown(c->fd, SHUT_RD);
      mu_.AwaitWithTimeout(absl::Condition(this, &Impl::AllDone),
                           options_.stop_grace);
      for (const auto& c : connections_) shutdown(c->fd, SHUT_RDWR);
      connections = std::move(connections_);
    }
    for (const auto& c : connections) {
      c->thread.join();
      close(c->fd);
    }
    close(listen_fd_);
    absl::MutexLock lock(&mu_);
    state_ = State::kStopped;
  }

 private:
  enum class State { kServing, kStopping, kStopped };

  // A connection's stage (see the header's drawing).
  enum class Stage {
    kUnauthenticated,  // from accept until its hello and token are accepted
    kAuthenticated,
    kEvicted,  // shut down to make room; its thread is ending
  };

  struct Connection {
    // Constant after construction.
    int fd = -1;
    std::string peer;    // "host:port", for messages
    std::string source;  // what Options::max_unauthenticated_per_source counts
    std::thread thread;  // joined by the acceptor or Stop, then fd closed
    // Guarded by mu_.
    Stage stage = Stage::kUnauthenticated;
    bool done = false;  // the thread has ended
  };

  // The unauthenticated connections, for admitting one from `source`.
  struct Census {
    int running = 0;  // connections whose threads have not ended
    int unauthenticated = 0;
    int from_source = 0;
    int evicted = 0;  // not yet ended
    Connection* oldest_unauthenticated = nullptr;
  };

  // A refusal said after mu_ is released: Options::log may be slow.
  struct Refusal {
    std::string peer;
    absl::Status why;
  };

  static constexpr absl::Duration kRefusalLineEvery = absl::Seconds(30);
  // A client has this long to send the rest of a request it began or read
  // an answer (a worker that stopped reading, not a slow one: its own
  // deadline ends such calls far sooner).
  static constexpr absl::Duration kMessageTimeout = absl::Minutes(5);

  Census Count(const std::string& source) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Census census;
    // connections_ is in the order of accept: the first is the oldest.
    for (const auto& c : connections_) {
      if (c->done) continue;
      ++census.running;
      if (c->stage == Stage::kEvicted) {
        ++census.evicted;
      } else if (c->stage == Stage::kUnauthenticated) {
        ++census.unauthenticated;
        if (c->source == source) ++census.from_source;
        if (census.oldest_unauthenticated == nullptr) {
          census.oldest_unauthenticated = c.get();
        }
      }
    }
    return census;
  }

  // Whether fewer than max_connections threads are still running, or Stop
  // has begun.
  bool RoomOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (state_ != State::kServing) return true;
    int running = 0;
    for (const auto& c : connections_) running += !c->done;
    return running < options_.max_connections;
  }

  bool AllDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& c : connections_) {
      if (!c->done) return false;
    }
    return true;
  }

  // Non-blocking, no Nagle delay, and a peer whose host is gone noticed
  // within about a minute (keepalive probes; unacknowledged writes).
  static void Configure(int fd) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    const int idle_secs = 30, interval_secs = 10, probes = 3;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_secs, sizeof(idle_secs));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_secs,
               sizeof(interval_secs));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
    const unsigned int user_timeout_ms = 60000;
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
               sizeof(user_timeout_ms));
  }

  void AcceptLoop() {
    for (;;) {
      sockaddr_storage address{};
      socklen_t length = sizeof(address);
      const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address),
                             &length, SOCK_CLOEXEC | SOCK_NONBLOCK);
      const int error = errno;  // before the lock, which may change it
      std::vector<Refusal> refusals;
      {
        absl::MutexLock lock(&mu_);
        if (state_ != State::kServing) {
          if (fd >= 0) close(fd);
          return;
        }
        if (fd < 0) {
          // Out of descriptors or memory: wait a little rather than spin
          // (any other error ends with the listener at Stop).
          if (error == EMFILE || error == ENFILE || error == ENOBUFS ||
              error == ENOMEM) {
            mu_.AwaitWithTimeout(
                absl::Condition(
                    +[](State* state) { return *state != State::kServing; },
                    &state_),
                absl::Milliseconds(50));
          }
          continue;
        }
        Admit(fd, PeerName(address, length, "a TCP data plane client"),
              SourceOf(address, length), refusals);
      }
      for (const Refusal& r : refusals) NoteRefused(r.peer, r.why);
    }
  }

  // Serves the connection on `fd` from `peer` on a thread of its own, or
  // closes it; makes room by closing the oldest unauthenticated connection
  // when needed. What it closes is appended to `refusals`.
  void Admit(int fd, std::string peer, std::string source,
             std::vector<Refusal>& refusals)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Census census = Count(source);
    if (census.from_source >= options_.max_unauthenticated_per_source) {
      close(fd);
      refusals.push_back(
          {std::move(peer),
           absl::ResourceExhaustedError(absl::StrCat(
               "too many connections still in their handshake from this "
               "address (",
               census.from_source, ", max_unauthenticated_per_source)"))});
      return;
    }
    if (census.oldest_unauthenticated != nullptr &&
        (census.unauthenticated >= options_.max_unauthenticated ||
         census.running - census.evicted >= options_.max_connections)) {
      Connection* oldest = census.oldest_unauthenticated;
      oldest->stage = Stage::kEvicted;
      // Its thread wakes and ends; the descriptor stays open until it is
      // joined, so that this never shuts down a reused number.
      shutdown(oldest->fd, SHUT_RDWR);
      ++census.evicted;
      refusals.push_back(
          {oldest->peer,
           absl::ResourceExhaustedError(absl::StrCat(
               "closed in its handshake to make room for a newer connection (",
               census.unauthenticated,
               " connections were in their handshake, max_unauthenticated ",
               options_.max_unauthenticated, ")"))});
    }
    if (census.running >= options_.max_connections && census.evicted > 0) {
      // Those closed to make room end as soon as their threads wake.
      mu_.AwaitWithTimeout(absl::Condition(this, &Impl::RoomOrStopping),
                           options_.hello_timeout);
    }
    ReapFinished();
    if (state_ != State::kServing) {
      close(fd);
      return;
    }
    if (static_cast<int>(connections_.size()) >= options_.max_connections) {
      close(fd);
      refusals.push_back(
          {std::move(peer),
           absl::ResourceExhaustedError(absl::StrCat(
               "this ps task serves as many clients as it takes already (",
               options_.max_connections, ", max_connections)"))});
      return;
    }
    Configure(fd);
    auto connection = std::make_unique<Connection>();
    connection->fd = fd;
    connection->peer = std::move(peer);
    connection->source = std::move(source);
    Connection* c = connection.get();
    try {
      c->thread = std::thread([this, c] {
        ServeConnection(*c);
        // The client sees the end now; the descriptor is closed when the
        // thread is joined, so that Stop never shuts down a reused number.
        shutdown(c->fd, SHUT_RDWR);
        absl::MutexLock lock(&mu_);
        c->done = true;
      });
    } catch (const std::system_error&) {
      close(fd);  // no thread to serve it (a process limit): refused
      return;
    }
    connections_.push_back(std::move(connection));
  }

  // Joins and closes the connections whose threads have ended.
  void ReapFinished() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!(*it)->done) {
        ++it;
        continue;
      }
      (*it)->thread.join();
      close((*it)->fd);
      it = connections_.erase(it);
    }
  }

  // Whether `c` was closed to make room (its failure is no refusal of its
  // own: Admit said why).
  bool Evicted(const Connection& c) {
    absl::MutexLock lock(&mu_);
    return c.stage == Stage::kEvicted;
  }

  // Marks `c` authenticated; false when it was closed to make room first.
  bool Authenticate(Connection& c) {
    absl::MutexLock lock(&mu_);
    if (c.stage == Stage::kEvicted) return false;
    c.stage = Stage::kAuthenticated;
    return true;
  }

  // Says why `c` was refused, unless it was closed to make room (Admit said
  // why then).
  void Refuse(Connection& c, const absl::Status& why) {
    if (!Evicted(c)) NoteRefused(c.peer, why);
  }

  void ServeConnection(Connection& c) {
    const absl::Time hello_by = absl::Now() + options_.hello_timeout;
    // Freed when this returns, before the thread shuts the socket down.
    DataPlaneTls::Session session;
    if (options_.tls != nullptr) {
      absl::StatusOr<DataPlaneTls::Session> accepted =
          options_.tls->Accept(c.fd, hello_by, c.peer);
      if (!accepted.ok()) {
        Refuse(c, accepted.status());
        return;
      }
      session = *std::move(accepted);
    }
    const DataPlaneSocket socket(c.fd, session.get());
    std::optional<std::string> token = ReadClientHello(c, socket, hello_by);
    if (!token.has_value()) return;
    if (!AnswerHello(c, socket, *token)) return;
    ServeRequests(socket, c.peer);
  }

  // The client's hello, checked, and the token that follows it; nullopt
  // when the connection ends (refused, or the client went away).
  std::optional<std::string> ReadClientHello(Connection& c,
                                             const DataPlaneSocket& socket,
                                             absl::Time hello_by) {
    const std::string& peer = c.peer;
    char hello[kClientHelloBytes];
    if (!ReadExactly(socket, absl::MakeSpan(hello, kHelloPrefixBytes), hello_by,
                     peer)
             .ok()) {
      return std::nullopt;
    }
    if (absl::Status s =
            CheckClientHelloPrefix(absl::string_view(hello, kHelloPrefixBytes));
        !s.ok()) {
      Refuse(c, s);
      return std::nullopt;
    }
    if (!ReadExactly(socket,
                     absl::MakeSpan(hello + kHelloPrefixBytes,
                                    kClientHelloBytes - kHelloPrefixBytes),
                     hello_by, peer)
             .ok()) {
      return std::nullopt;
    }
    absl::StatusOr<uint32_t> token_length =
        DecodeClientHello(absl::string_view(hello, sizeof(hello)));
    if (!token_length.ok()) {
      Refuse(c, token_length.status());
      return std::nullopt;
    }
    std::string token(*token_length, '\0');
    if (!ReadExactly(socket, absl::MakeSpan(token), hello_by, peer).ok()) {
      return std::nullopt;
    }
    return token;
  }

  // Checks the client's `token` and writes this task's hello, which says
  // whether it was accepted; true when requests are to be served.
  bool AnswerHello(Connection& c, const DataPlaneSocket& socket,
                   const std::string& token) {
    const absl::Status allowed = options_.tls != nullptr
                                     ? options_.tls->CheckToken(token)
                                     : absl::OkStatus();
    ServerHello mine;
    mine.max_message_bytes = static_cast<uint64_t>(options_.max_message_bytes);
    mine.task_index = static_cast<uint32_t>(options_.task_index);
    mine.incarnation = options_.incarnation;
    mine.methods_fingerprint = MethodsFingerprint();
    mine.code = static_cast<uint32_t>(allowed.code());
    mine.error = std::string(allowed.message());
    std::string answer = EncodeServerHello(mine);
    if (!allowed.ok()) {
      Refuse(c, allowed);
    } else if (!Authenticate(c)) {
      return false;
    }
    return WriteAll(socket, {{answer.data(), answer.size()}},
                    absl::Now() + options_.hello_timeout, c.peer)
               .ok() &&
           allowed.ok();
  }

  // Serves the requests of an authenticated connection, one at a time,
  // until it ends.
  void ServeRequests(const DataPlaneSocket& socket, const std::string& peer) {
    for (;;) {
      char bytes[kRequestHeaderBytes];
      // Idle connections wait as long as they like (keepalive notices a
      // peer that is gone); Stop ends the wait.
      if (!ReadExactly(socket, absl::MakeSpan(bytes), absl::InfiniteFuture(),
                       peer)
               .ok()) {
        return;
      }
      const RequestHeader header =
          DecodeRequestHeader(absl::string_view(bytes, sizeof(bytes)));
      const absl::Time deadline = absl::Now() + kMessageTimeout;
      if (header.length > static_cast<uint64_t>(options_.max_message_bytes)) {
        // The request's bytes are not read: the stream is lost after this.
        Respond(socket, peer, deadline,
                absl::ResourceExhaustedError(absl::StrCat(
                    "a request of ", header.length,
                    " bytes is larger than this ps task accepts (",
                    options_.max_message_bytes, ", --max_message_mb)")),
                grpc::ByteBuffer());
        return;
      }
      absl::StatusOr<grpc::ByteBuffer> request =
          ReadMessage(socket, header.length, deadline, peer);
      if (!request.ok()) return;
      grpc::ByteBuffer response;
      const absl::Status status =
          serve_(static_cast<int>(header.method), &*request, &response);
      if (!Respond(socket, peer, absl::Now() + kMessageTimeout, status,
                   response)) {
        return;
      }
    }
  }

  // Tells Options::log why the connection from `peer` was refused, at most
  // once per kRefusalLineEvery: a port scanner, a TCP health check or a
  // client of another job retrying must not flood the task's log. The
  // refusals in between are counted in the next line.
  void NoteRefused(const std::string& peer, const absl::Status& why) {
    // Stop shuts connections down, which fails the handshakes and hellos
    // still in progress: those are not refusals.
    if (!options_.log || stopping_.load(std::memory_order_relaxed)) return;
    // The TLS errors already name the peer for the client's side.
    absl::string_view reason = why.message();
    absl::ConsumePrefix(&reason,
                        absl::StrCat("TCP data plane to ", peer, ": "));
    std::string line;
    {
      absl::MutexLock lock(&refusals_mu_);
      const absl::Time now = absl::Now();
      if (now < next_refusal_line_) {
        ++refusals_unsaid_;
        return;
      }
      next_refusal_line_ = now + kRefusalLineEvery;
      line = absl::StrCat("TCP data plane: refused the connection from ", peer,
                          ": ", reason);
      if (refusals_unsaid_ > 0) {
        absl::StrAppend(&line, " (", refusals_unsaid_,
                        " more refused since the last such line)");
      }
      refusals_unsaid_ = 0;
    }
    options_.log(line);
  }

  // Writes `status` and, when it is OK, `response`. False when the
  // connection failed.
  bool Respond(const DataPlaneSocket& socket, const std::string& peer,
               absl::Time deadline, const absl::Status& status,
               const grpc::ByteBuffer& response) {
    const absl::string_view error = status.message().substr(0, kMaxErrorBytes);
    std::vector<grpc::Slice> slices;
    std::vector<iovec> message;
    if (status.ok()) message = MessageParts(response, slices);
    uint64_t length = 0;
    for (const iovec& part : message) length += part.iov_len;
    std::string header =
        EncodeResponseHeader({static_cast<uint32_t>(status.code()),
                              static_cast<uint32_t>(error.size()), length});
    std::vector<iovec> parts;
    parts.push_back({header.data(), header.size()});
    if (!error.empty()) {
      parts.push_back({const_cast<char*>(error.data()), error.size()});
    }
    parts.insert(parts.end(), message.begin(), message.end());
    return WriteAll(socket, std::move(parts), deadline, peer).ok();
  }

  const Options options_;
  const Serve serve_;
  const int listen_fd_;
  const int port_;
  std::thread acceptor_;
  absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kServing;
  std::list<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
  // Set with state_ = kStopping; read without mu_ by NoteRefused.
  std::atomic<bool> stopping_{false};
  absl::Mutex refusals_mu_;
  absl::Time next_refusal_line_ ABSL_GUARDED_BY(refusals_mu_) =
      absl::InfinitePast();
  int64_t refusals_unsaid_ ABSL_GUARDED_BY(refusals_mu_) = 0;
};

absl::StatusOr<std::unique_ptr<DataPlaneServer>> DataPlaneServer::Start(
    const Options& options, Serve serve) {
  if (options.max_unauthenticated < 1 ||
      options.max_unauthenticated >= options.max_connections) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TCP data plane: max_unauthenticated (", options.max_unauthenticated,
        ") must be at least 1 and below max_connections (",
        options.max_connections,
        "), so that connections in their handshake cannot fill it"));
  }
  if (options.max_unauthenticated_per_source < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TCP data plane: max_unauthenticated_per_source (",
        options.max_unauthenticated_per_source, ") must be at least 1"));
  }
  if (options.hello_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TCP data plane: hello_timeout (",
        absl::FormatDuration(options.hello_timeout), ") must be positive"));
  }
  absl::StatusOr<ListeningSocket> listening =
      ListenTcp(options.host, options.port);
  if (!listening.ok()) {
    return absl::Status(
        listening.status().code(),
        absl::StrCat("TCP data plane: ", listening.status().message()));
  }
  return std::unique_ptr<DataPlaneServer>(
      new DataPlaneServer(std::make_unique<Impl>(
          options, std::move(serve), listening->fd, listening->port)));
}

DataPlaneServer::DataPlaneServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

DataPlaneServer::~DataPlaneServer() { Stop(); }

int DataPlaneServer::port() const { return impl_->port(); }

void DataPlaneServer::Stop() { impl_->Stop(); }

}  // namespace distrt::rpc
