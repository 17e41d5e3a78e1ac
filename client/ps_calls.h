#ifndef DISTRT_CLIENT_PS_CALLS_H_
#define DISTRT_CLIENT_PS_CALLS_H_

// The requests PsClient sends, as records (internal to client/): one call
// to one ps task of one RPC (a PsMethod), with its gRPC context, status and
// message bytes. PsRequestPlanner decides which calls to make, the wire
// coding (ps_wire_coding.h) fills in and reads their messages, PsChannels
// and PsTransport send them.
//
// Thread-safety: a call is plain data. While it is in flight only the
// transport writes it (its status, response and `decoded`, from one gRPC
// or data plane thread at a time); its owner reads it once the round that
// sent it has ended.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"
#include "rpc/ps_methods.h"
#include "runtime/ps/placement.h"
#include "runtime/util/default_init_allocator.h"

namespace distrt::ps_client_internal {

// What every request has, whatever its messages: the ps task, the RPC, the
// gRPC call, and for the RPCs that carry tensors, the message bytes.
struct CallBase {
  explicit CallBase(int task) : ps_task(task) {}

  const int ps_task;
  // The RPC. kNumPsMethods until set: a call sent by PsChannels::RunAll or
  // PsTransport::RunWire without one gets the method these are given;
  // calls sent together that are of several RPCs (Impl::PullMany, a training
  // step's round) each carry their own.
  rpc::PsMethod method = rpc::kNumPsMethods;
  // The current attempt's context: a context serves one attempt only.
  std::unique_ptr<grpc::ClientContext> context;
  // Whether attempts wait for the connection (rather than failing at once
  // while the ps task is unreachable).
  bool wait_for_ready = false;
  grpc::Status status;
  // The last failure of an earlier attempt that said more than that time
  // ran out: when a retry only times out (inside the channel's reconnect
  // backoff, say), errors quote it, so that a refusal ("Socket closed" by
  // a TLS server) is not reported as a mere deadline.
  grpc::Status earlier_failure;
  // Said in errors after the RPC's name (e.g. " of \"w\""); may be empty.
  std::string about;

  // RPCs that carry tensors go as message bytes (rpc/wire_message.h): the
  // other fields are encoded beside the tensors.
  grpc::ByteBuffer wire_request;
  grpc::ByteBuffer wire_response;
  // Decoding the response, run as it arrives.
  absl::Status decoded;
  // Which of its ps task's connections it goes through.
  int stripe = 0;
  // The bytes the response will carry, where a pull knows them (0 for the
  // short answers of pushes): with the request's, they decide whether the
  // call is small enough to go in a Bundle.
  int64_t response_bytes = 0;

  // A fresh context for the next attempt, ending at `deadline`; owned by
  // the call, valid until the next NewAttempt.
  grpc::ClientContext* NewAttempt(
      std::chrono::system_clock::time_point deadline);
};

// One request of a batch sent in parallel.
template <typename Request, typename Response>
struct Call : CallBase {
  explicit Call(int task) : CallBase(task) {}
  // For RPCs sent as message bytes, the fields that are not tensors.
  Request request;
  Response response;
  // Where the request's elements go in, or come from, the caller's buffer:
  // a contiguous run (dense) or one position per id (sparse).
  int64_t offset = 0;
  std::vector<size_t> positions;

  // Sparse requests: the ids at `positions`, and the rows pulled for them
  // or the gradients pushed (written whole after each resize, so not
  // zeroed first).
  std::vector<int64_t> ids;
  UninitializedVector<float> rows;
};

// Rows of the variable at `variable` in an Impl::PullMany / PushMany list.
struct DensePiece {
  size_t variable = 0;
  RowRange rows;
};

// A request of Impl::PullMany / PushMany: one piece (PullDense / PushDense), or
// several small ones in one batch (PullDenseBatch / PushDenseBatch).
struct ManyCall : CallBase {
  using CallBase::CallBase;
  bool batch = false;
  std::vector<DensePiece> pieces;  // in the request's order
};

template <typename Request, typename Response>
using Calls = std::vector<std::unique_ptr<Call<Request, Response>>>;

// One call of `request` to each of `tasks`.
template <typename Response, typename Request>
Calls<Request, Response> CallTasks(const std::vector<int>& tasks,
                                   const Request& request) {
  Calls<Request, Response> calls;
  for (int task : tasks) {
    calls.push_back(std::make_unique<Call<Request, Response>>(task));
    calls.back()->request = request;
  }
  return calls;
}

// Tasks 0..n-1.
std::vector<int> AllTasks(int n);

// "ps task 3 (host:port)", as every error and message names a ps task.
std::string PsTaskName(int task, const std::string& address);

}  // namespace distrt::ps_client_internal

#endif  // DISTRT_CLIENT_PS_CALLS_H_
