#ifndef DISTRT_CLIENT_PS_DATA_PLANE_CLIENT_H_
#define DISTRT_CLIENT_PS_DATA_PLANE_CLIENT_H_

// PsDataPlaneClient: the client side of the ps tasks' TCP data planes
// (rpc/data_plane_wire.h; internal to client/). Per ps task it knows the
// data plane's port and the start of the task it belongs to (learned from
// the task's GetStatus), keeps the idle connections to it, and sends
// requests (already encoded message bytes, one RPC each) over them, a
// connection per request in flight. A data plane that cannot be reached
// sends its task back to gRPC, with a warning, and is asked for again after
// a backoff (5 s, doubling per failure in a row, at most 5 minutes).
//
// It decides nothing about retries (PsChannels does) nor what the bytes
// mean (ps_wire_coding.h).
//
// Thread-safety: thread-safe; several operations may send at once. SendAll
// blocks its caller and calls back on the caller's thread.
//
//   unknown (port -1) --Learn(port>0)--> known --connection fails--> gRPC
//        |                                 ^                          |
//        +---Learn(0): no data plane       +---Learn(port>0) <--------+
//                                              (after the backoff:
//                                               TakeTurnToAsk)

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"
#include "rpc/data_plane_connection.h"
#include "rpc/data_plane_tls.h"
#include "rpc/ps_methods.h"

namespace distrt::ps_client_internal {

class PsDataPlaneClient {
 public:
  struct Options {
    // The ps tasks' gRPC addresses: their data planes are on the same
    // hosts.
    std::vector<std::string> addresses;
    // The job's TLS on the data plane (null: plain TCP).
    std::shared_ptr<const rpc::DataPlaneTls> tls;
    // PsClient::Options' fields of these names: requests in flight in one
    // SendAll over all tasks, and to any one task.
    int max_requests_in_flight = 8;
    int max_requests_in_flight_per_task = 2;
    // Where warnings go; must be set.
    std::function<void(absl::string_view)> log;
  };

  explicit PsDataPlaneClient(Options options);

  PsDataPlaneClient(const PsDataPlaneClient&) = delete;
  PsDataPlaneClient& operator=(const PsDataPlaneClient&) = delete;

  // From now on `task`'s data plane is at `port` (0: it has none), in the
  // start of the task that `incarnation` names (both from its GetStatus).
  // Says which, once per change.
  void Learn(int task, int port, uint64_t incarnation);

  // Whether `task`'s data plane is known (and was not given up on).
  bool Known(int task) const;

  // For a task sent back to gRPC: true, once the backoff since it was has
  // run out, for one caller, who should then ask the task again (Learn).
  bool TakeTurnToAsk(int task);

  // One request to send: message bytes of `method` to `task`. `request`
  // (borrowed) and `response` (written) must outlive SendAll.
  struct Request {
    int task = 0;
    rpc::PsMethod method = rpc::kNumPsMethods;
    const grpc::ByteBuffer* request = nullptr;
    grpc::ByteBuffer* response = nullptr;
  };

  // Sends `requests`, each on a connection of its own, at most
  // max_requests_in_flight at a time and max_requests_in_flight_per_task
  // to one task, answers read in the order sent, all attempts ending by
  // `deadline`. A request whose pooled connection turns out closed (the
  // task restarted, or dropped it) is sent again at once on a new one (a
  // push is applied once per request id however often it is sent).
  // `done(i, connection_error, answer)` runs once per request, on this
  // thread: the connection's error when there was no answer, else OK and
  // the ps task's status (its response in *requests[i].response).
  void SendAll(
      absl::Span<const Request> requests, absl::Time deadline,
      absl::FunctionRef<void(size_t index, const absl::Status& connection_error,
                             grpc::Status answer)>
          done);

  // A data plane's connection and hello take well under a millisecond on
  // a working network; this long means it is not reachable.
  static constexpr absl::Duration kConnectTimeout = absl::Seconds(5);
  // How often a task sent back to gRPC is asked for its data plane again.
  static constexpr absl::Duration kRelearnEvery = absl::Seconds(5);
  // Idle connections kept per ps task: each holds a thread of the task.
  static constexpr size_t kMaxIdleConnections = 16;

 private:
  // One SendAll's requests in flight (defined in the .cc).
  class SendAllCall;

  std::string TaskName(int task) const;
  // An idle connection to `task`'s data plane; null when there is none.
  std::unique_ptr<rpc::DataPlaneConnection> TakeIdle(int task);
  // A new connection to `task`'s data plane. One that is refused or
  // unreachable (no hello within kConnectTimeout), or reaches something
  // else (another ps task, another start of it), sends the task back to
  // gRPC (see the class comment).
  absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>> Connect(
      int task, absl::Time deadline);
  // Keeps `connection` for the next call to `task`, up to
  // kMaxIdleConnections.
  void GiveBack(int task, std::unique_ptr<rpc::DataPlaneConnection> connection);

  // Per ps task: its data plane's port (0: none, gRPC; -1: not known yet,
  // gRPC) and the connections to it not in use.
  struct DataPlane {
    std::atomic<int> port{-1};
    std::atomic<uint64_t> incarnation{0};
    // When (Unix ms) to ask a task sent back to gRPC for its data plane
    // again; 0: never.
    std::atomic<int64_t> relearn_after_ms{0};
    // Times in a row its data plane could not be reached.
    std::atomic<int> failures{0};
    absl::Mutex mu;
    std::vector<std::unique_ptr<rpc::DataPlaneConnection>> idle
        ABSL_GUARDED_BY(mu);
  };

  // Constant after construction.
  const Options options_;
  // One per ps task; each synchronises itself.
  const std::unique_ptr<DataPlane[]> planes_;
};

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_DATA_PLANE_CLIENT_H_
