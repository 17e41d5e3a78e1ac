#ifndef DISTRT_BENCH_TCP_BASELINE_H_
#define DISTRT_BENCH_TCP_BASELINE_H_

// The raw-TCP baseline of the dense family: what the loopback interface
// itself moves with blocking socket calls and no RPC layer, one persistent
// connection, TCP_NODELAY on both ends.
//
// Wire format: every request starts with an 8-byte little-endian header, the
// byte count N, with the top bit set for a pull.
//   push ("send-and-ack"): the client sends the header and N bytes; the
//       server reads all N into a buffer of its own, then sends 1 byte.
//   pull: the client sends the header; the server sends N bytes from a
//       buffer allocated once, which the client reads straight into the
//       caller's memory.
//
// Every socket has SO_RCVTIMEO and SO_SNDTIMEO set to io_timeout, so no read
// or write blocks longer than that; the server's thread also wakes every
// poll interval to see whether it should stop.

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace distrt::bench {

struct TcpBaselineOptions {
  // The largest push or pull. The server's two buffers (where pushes land,
  // where pulls come from) are allocated and written once at start-up, so
  // that no timed call pays for page faults. A larger request closes the
  // connection.
  int64_t max_bytes = int64_t{64} << 20;
  // Bound of every blocking read and write (SO_RCVTIMEO / SO_SNDTIMEO).
  absl::Duration io_timeout = absl::Seconds(30);
};

// Serves one connection at a time on a thread of its own, on 127.0.0.1 on a
// port the OS picks.
class TcpBaselineServer {
 public:
  // UNAVAILABLE naming the call that failed when it cannot listen;
  // INVALID_ARGUMENT for bad options.
  static absl::StatusOr<std::unique_ptr<TcpBaselineServer>> Start(
      const TcpBaselineOptions& options);

  // Tells the thread to stop and joins it: within the poll interval when it
  // is idle, within io_timeout when a peer has stalled in the middle of a
  // request.
  ~TcpBaselineServer();

  TcpBaselineServer(const TcpBaselineServer&) = delete;
  TcpBaselineServer& operator=(const TcpBaselineServer&) = delete;

  int port() const { return port_; }

 private:
  TcpBaselineServer(const TcpBaselineOptions& options, int listen_fd, int port);
  // The thread: accepts connections and serves each until it closes.
  void Serve();
  // Answers requests on `fd` until the peer closes it, an error, or stop.
  void ServeConnection(int fd);

  // Constant after construction.
  const TcpBaselineOptions options_;
  const int listen_fd_;
  const int port_;
  std::unique_ptr<char[]> push_buffer_;
  std::unique_ptr<char[]> pull_buffer_;

  std::atomic<bool> stopping_{false};
  // Started last in Start(), joined by the destructor.
  std::thread thread_;
};

// One connection to a TcpBaselineServer. Not thread-safe. After an error the
// connection is in an unknown state: every later call fails.
class TcpBaselineClient {
 public:
  // Connects to 127.0.0.1:`port`. UNAVAILABLE naming the port and the
  // error when it cannot.
  static absl::StatusOr<std::unique_ptr<TcpBaselineClient>> Connect(
      int port, const TcpBaselineOptions& options);
  // Closes the connection.
  ~TcpBaselineClient();

  TcpBaselineClient(const TcpBaselineClient&) = delete;
  TcpBaselineClient& operator=(const TcpBaselineClient&) = delete;

  // Sends `payload` and waits for the server's 1-byte ack.
  absl::Status Push(absl::Span<const char> payload);
  // Asks for out.size() bytes and reads them into `out`.
  absl::Status Pull(absl::Span<char> out);

 private:
  TcpBaselineClient(int fd, int port) : fd_(fd), port_(port) {}
  absl::Status Failed(absl::Status status);

  int fd_;
  const int port_;
  absl::Status broken_;  // the first error, returned by every later call
};

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_TCP_BASELINE_H_
