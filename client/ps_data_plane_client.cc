#include "client/ps_data_plane_client.h"

#include <algorithm>
#include <cassert>
#include <deque>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/ps_calls.h"
#include "client/request_window.h"

namespace distrt::ps_client_internal {
namespace {

// "host" of "host:port", "v6" of "[v6]:port".
std::string HostOf(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

PsDataPlaneClient::PsDataPlaneClient(Options options)
    : options_(std::move(options)),
      planes_(std::make_unique<DataPlane[]>(options_.addresses.size())) {}

std::string PsDataPlaneClient::TaskName(int task) const {
  return PsTaskName(task, options_.addresses[task]);
}

void PsDataPlaneClient::Learn(int task, int port, uint64_t incarnation) {
  DataPlane& plane = planes_[task];
  plane.incarnation.store(incarnation, std::memory_order_relaxed);
  plane.relearn_after_ms.store(0, std::memory_order_relaxed);
  if (plane.port.exchange(port, std::memory_order_relaxed) == port) return;
  options_.log(
      port != 0
          ? absl::StrCat(
                TaskName(task), ": tensors over its TCP data plane at port ",
                port, " (rpc_layer \"grpc+tcp\"",
                options_.tls == nullptr         ? ""
                : options_.tls->token().empty() ? ", mutual TLS"
                                                : ", mutual TLS, cluster token",
                ")")
          : absl::StrCat("warning: ", TaskName(task),
                         " offers no TCP data plane (is \"rpc_layer\" "
                         "\"grpc+tcp\" in its TF_CONFIG too?); its tensors "
                         "go over gRPC"));
}

bool PsDataPlaneClient::Known(int task) const {
  return planes_[task].port.load(std::memory_order_relaxed) > 0;
}

bool PsDataPlaneClient::TakeTurnToAsk(int task) {
  DataPlane& plane = planes_[task];
  // One caller at a time asks, once the time has come.
  int64_t after = plane.relearn_after_ms.load();
  return after != 0 && absl::ToUnixMillis(absl::Now()) >= after &&
         plane.relearn_after_ms.compare_exchange_strong(
             after, absl::ToUnixMillis(absl::Now() + kRelearnEvery));
}

// One SendAll's requests in flight, in the order sent, and how each ends.
class PsDataPlaneClient::SendAllCall {
 public:
  using Done =
      absl::FunctionRef<void(size_t, const absl::Status&, grpc::Status)>;

  SendAllCall(PsDataPlaneClient& client, absl::Span<const Request> requests,
              absl::Time deadline, Done done)
      : client_(client),
        requests_(requests),
        deadline_(deadline),
        done_(done) {}

  // Sends request `index`, on a new connection when `fresh`. False when it
  // failed before it was sent (`done` has said why); true when it is in
  // flight, or queued to be sent again on a new connection because the
  // pooled one it was written to had died.
  bool Start(size_t index, bool fresh);

  bool AnyInFlight() const { return !in_flight_.empty(); }

  // Takes the oldest request in flight: sends it again on a new connection
  // when its pooled one had died, else reads its answer and calls `done`.
  // The request's index when it has ended; nullopt when it is still in
  // flight, on its new connection.
  std::optional<size_t> FinishOldest();

 private:
  struct Sent {
    size_t index;
    std::unique_ptr<rpc::DataPlaneConnection> connection;  // null: to resend
    bool reused = false;
  };

  PsDataPlaneClient& client_;
  const absl::Span<const Request> requests_;
  const absl::Time deadline_;
  const Done done_;
  std::deque<Sent> in_flight_;
};

bool PsDataPlaneClient::SendAllCall::Start(size_t index, bool fresh) {
  const Request& request = requests_[index];
  request.response->Clear();
  Sent sent{index, nullptr, false};
  absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>> connection =
      fresh ? nullptr : client_.TakeIdle(request.task);
  sent.reused = connection.ok() && *connection != nullptr;
  if (!sent.reused) connection = client_.Connect(request.task, deadline_);
  if (!connection.ok()) {
    done_(index, connection.status(), grpc::Status());
    return false;
  }
  sent.connection = *std::move(connection);
  absl::Status s =
      sent.connection->Send(request.method, *request.request, deadline_);
  if (!s.ok() && sent.reused) {
    // The pooled connection had died; a new one gets the request.
    in_flight_.push_back(std::move(sent));
    in_flight_.back().connection = nullptr;
    return true;
  }
  if (!s.ok()) {
    done_(index, s, grpc::Status());
    return false;
  }
  in_flight_.push_back(std::move(sent));
  return true;
}

std::optional<size_t> PsDataPlaneClient::SendAllCall::FinishOldest() {
  Sent sent = std::move(in_flight_.front());
  in_flight_.pop_front();
  const Request& request = requests_[sent.index];
  bool resent = false;
  if (sent.connection == nullptr) {  // its pooled connection had died
    resent = Start(sent.index, /*fresh=*/true);
  } else {
    grpc::Status status;
    absl::Status received =
        sent.connection->Receive(deadline_, &status, request.response);
    if (!received.ok() && sent.reused &&
        received.code() == absl::StatusCode::kUnavailable) {
      resent = Start(sent.index, /*fresh=*/true);
    } else if (!received.ok()) {
      done_(sent.index, received, grpc::Status());
    } else {
      client_.GiveBack(request.task, std::move(sent.connection));
      done_(sent.index, absl::OkStatus(), std::move(status));
    }
  }
  if (resent) return std::nullopt;
  return sent.index;
}

void PsDataPlaneClient::SendAll(
    absl::Span<const Request> requests, absl::Time deadline,
    absl::FunctionRef<void(size_t, const absl::Status&, grpc::Status)> done) {
  SendAllCall call(*this, requests, deadline, done);
  std::vector<int> task_of(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) task_of[i] = requests[i].task;
  RequestWindow window(task_of, options_.addresses.size(),
                       options_.max_requests_in_flight,
                       options_.max_requests_in_flight_per_task);
  std::deque<size_t> to_start;
  for (size_t index : window.Open()) to_start.push_back(index);
  // Bounded: every request is started once and ends once (sent again on a
  // fresh connection at most once, when its pooled connection had died).
  while (true) {
    while (!to_start.empty()) {
      const size_t index = to_start.front();
      to_start.pop_front();
      // A request that fails before it is sent ends at once, making room.
      if (!call.Start(index, /*fresh=*/false)) {
        if (std::optional<size_t> next = window.End(index)) {
          to_start.push_back(*next);
        }
      }
    }
    if (!call.AnyInFlight()) break;
    std::optional<size_t> ended = call.FinishOldest();
    if (!ended.has_value()) continue;  // still in flight, on a new connection
    if (std::optional<size_t> next = window.End(*ended)) {
      to_start.push_back(*next);
    }
  }
  // Every request went out (or failed trying): none is left reading as OK
  // without having been sent.
  assert(window.AllStarted());
}

std::unique_ptr<rpc::DataPlaneConnection> PsDataPlaneClient::TakeIdle(
    int task) {
  DataPlane& plane = planes_[task];
  absl::MutexLock lock(&plane.mu);
  if (plane.idle.empty()) return nullptr;
  std::unique_ptr<rpc::DataPlaneConnection> connection =
      std::move(plane.idle.back());
  plane.idle.pop_back();
  return connection;
}

absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>>
PsDataPlaneClient::Connect(int task, absl::Time deadline) {
  DataPlane& plane = planes_[task];
  const int port = plane.port.load(std::memory_order_relaxed);
  if (port <= 0) return absl::UnavailableError("no TCP data plane");
  rpc::DataPlaneConnection::Expected expected;
  expected.task_index = task;
  expected.incarnation = plane.incarnation.load(std::memory_order_relaxed);
  const absl::Time connect_by =
      std::min(deadline, absl::Now() + kConnectTimeout);
  absl::StatusOr<std::unique_ptr<rpc::DataPlaneConnection>> connection =
      rpc::DataPlaneConnection::Connect(HostOf(options_.addresses[task]), port,
                                        expected, connect_by,
                                        options_.tls.get());
  const absl::StatusCode code = connection.status().code();
  const bool unreachable =
      code == absl::StatusCode::kUnavailable ||
      (code == absl::StatusCode::kDeadlineExceeded && connect_by < deadline);
  if (unreachable && plane.port.exchange(0) > 0) {
    const int failures = std::min(plane.failures.fetch_add(1) + 1, 7);
    const absl::Duration wait =
        std::min(kRelearnEvery * (1 << (failures - 1)), absl::Minutes(5));
    plane.relearn_after_ms.store(absl::ToUnixMillis(absl::Now() + wait));
    options_.log(absl::StrCat(
        "warning: ", TaskName(task), ": ", connection.status().message(),
        "; its tensors go over gRPC until it is asked again in ",
        absl::FormatDuration(wait)));
  }
  if (unreachable && code == absl::StatusCode::kDeadlineExceeded) {
    return absl::UnavailableError(absl::StrCat(
        TaskName(task), ": TCP data plane at port ", port,
        " did not answer within ", absl::FormatDuration(kConnectTimeout)));
  }
  return connection;
}

void PsDataPlaneClient::GiveBack(
    int task, std::unique_ptr<rpc::DataPlaneConnection> connection) {
  DataPlane& plane = planes_[task];
  // A call went through: the next failure waits 5 s again.
  if (plane.failures.load(std::memory_order_relaxed) != 0) {
    plane.failures.store(0, std::memory_order_relaxed);
  }
  absl::MutexLock lock(&plane.mu);
  if (plane.idle.size() < kMaxIdleConnections) {
    plane.idle.push_back(std::move(connection));
  }
}

}  // namespace distrt::ps_client_internal
