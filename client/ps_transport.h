#ifndef DISTRT_CLIENT_PS_TRANSPORT_H_
#define DISTRT_CLIENT_PS_TRANSPORT_H_

// PsTransport: how a round of PsClient's tensor-carrying calls (message
// bytes, ps_wire_coding.h) reaches the ps tasks (internal to client/). It
// sends the round at once, with at most max_requests_in_flight outstanding
// (and per task max_requests_in_flight_per_task: RequestWindow); a task's
// small calls go together as one Bundle call where the planner bundles
// them; calls to a task with a known TCP data plane go over it
// (PsDataPlaneClient), the others over gRPC through the task's connections
// in turn (PsChannels), which also retries what failed for want of the
// task. Each response is decoded as it arrives, by the caller's `decode`.
//
// Thread-safety: thread-safe; any number of rounds may run at once. It
// borrows the channels and the planner, which must outlive it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "client/ps_calls.h"
#include "client/ps_channels.h"
#include "client/ps_data_plane_client.h"
#include "client/ps_request_planner.h"
#include "rpc/data_plane_tls.h"
#include "rpc/ps_methods.h"

namespace distrt::ps_client_internal {

class PsTransport {
 public:
  struct Options {
    // PsClient::Options' fields of these names.
    bool data_plane = false;
    int max_requests_in_flight = 8;
    int max_requests_in_flight_per_task = 2;
    // With `data_plane`: the job's TLS on it (null: plain TCP).
    std::shared_ptr<const rpc::DataPlaneTls> data_plane_tls;
  };

  PsTransport(const Options& options, PsChannels* channels,
              const PsRequestPlanner* planner);

  PsTransport(const PsTransport&) = delete;
  PsTransport& operator=(const PsTransport&) = delete;

  // Decodes a call's response; its error counts as the call's. Runs on a
  // gRPC thread or on the round's own, for several calls at once.
  using Decode = absl::FunctionRef<absl::Status(CallBase&)>;

  // Sends `calls` (those without a method as `method`), decoding each
  // response with `decode(call)` (called with the calls' own type), and
  // returns when every call has ended: OK, or the first error, naming the
  // RPC and the ps task. Every attempt is bounded by AttemptTimeout().
  template <typename CallType, typename DecodeCall>
  absl::Status RunWire(rpc::PsMethod method,
                       std::vector<std::unique_ptr<CallType>>& calls,
                       DecodeCall decode) {
    std::vector<CallBase*> all;
    all.reserve(calls.size());
    for (auto& call : calls) {
      if (call->method == rpc::kNumPsMethods) call->method = method;
      all.push_back(call.get());
    }
    return RunWireCalls(std::move(all), [&decode](CallBase& call) {
      return decode(static_cast<CallType&>(call));
    });
  }

  // RunWire over calls owned elsewhere, possibly of several kinds, each
  // with its method set: one operation's requests, or a training step's
  // several operations sent in one round (a step's Read). With `bundle`, the
  // round's small calls to one ps task go as one Bundle call
  // (PsRequestPlanner::BundleUnits): the pieces that max_request_bytes cuts
  // a large operation into are too large for it and still travel apart.
  absl::Status RunWireCalls(std::vector<CallBase*> all, Decode decode,
                            bool bundle = false);

  // With Options::data_plane, the tensor RPCs to `task` go over its TCP
  // data plane at `port` from now on, to the start of the task that
  // `incarnation` names (both from its GetStatus); port 0: over gRPC.
  void LearnDataPlane(int task, int port, uint64_t incarnation);

 private:
  // A Bundle call's own context and messages.
  struct BundleCall {
    std::unique_ptr<grpc::ClientContext> context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };

  // Sends `round` (see RunWireCalls) and returns when every call has ended:
  // units (one call, or a Bundle of calls to one ps task) to tasks with a
  // data plane go there, from this thread, while the others go over gRPC,
  // each through a window of its own.
  void SendWireRound(const std::vector<CallBase*>& round, Decode decode,
                     bool bundle);
  // Sends `units` over the ps tasks' TCP data planes, from this thread.
  void SendOverDataPlanes(const std::vector<std::vector<CallBase*>>& units,
                          Decode decode);
  // Whether calls to `task` go over its TCP data plane: one is known, or
  // the task was sent back to gRPC and, asked again (GetStatus) now that
  // the data plane client says it is time, names one.
  bool OverDataPlane(int task);
  // Sends `parts` (calls to one ps task) as one Bundle call through the
  // task's first connection; when it ends, gives each call its part's
  // status and response (FinishBundle) and runs `done`.
  void SendBundle(const std::vector<CallBase*>& parts, BundleCall& bundle,
                  std::chrono::system_clock::time_point deadline, Decode decode,
                  std::function<void()> done);
  // Gives `parts` the outcome of their Bundle call, which ended with
  // `status`, decoding those that succeeded. A failed Bundle fails every
  // part alike; one refused as unknown (an older ps_server) is marked
  // retryable, and the task gets no more.
  void FinishBundle(const std::vector<CallBase*>& parts,
                    grpc::ByteBuffer& response, grpc::Status status,
                    Decode decode);
  // Gives each of `parts` its answer in a Bundle response, decoding those
  // that succeeded. An error when the response does not answer them all.
  grpc::Status TakeBundleAnswers(int task, grpc::ByteBuffer& response,
                                 const std::vector<CallBase*>& parts,
                                 Decode decode);

  // Constant after construction.
  const Options options_;
  PsChannels* const channels_;
  const PsRequestPlanner* const planner_;
  // Null without Options::data_plane.
  const std::unique_ptr<PsDataPlaneClient> data_plane_;
  // Per ps task: whether it refused a Bundle (so its calls go alone).
  const std::unique_ptr<std::atomic<bool>[]> serves_no_bundles_;
};

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_TRANSPORT_H_
