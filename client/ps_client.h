#ifndef DISTRT_CLIENT_PS_CLIENT_H_
#define DISTRT_CLIENT_PS_CLIENT_H_

// PsClient: a cluster's parameter servers seen as one store of variables,
// reached over gRPC (the ParameterServers of ps_server processes).
//
// Variables are placed on ps tasks on the client side, deterministically
// (runtime/ps/placement.h), so every worker that creates the same variables
// in the same order agrees on where they live; a variable created elsewhere
// is found with LookupVariable. Each operation is split into one request per
// ps task part (and per chunk of at most Options::max_request_bytes), the
// requests are sent in parallel (over Options::connections_per_task
// connections to each task), and the results are put back in order.
// Every request has a deadline; errors name the ps task and its address.
//
// Thread-safe: any number of threads may share one client (CreateVariable
// uses the shared placer, so concurrent creates place in arrival order).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/ps_service.pb.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/parameter_servers.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"

namespace distrt::rpc {
class TransportSecurity;
}  // namespace distrt::rpc

namespace distrt {

// A variable as the client sees it: the whole spec, where each part is, and
// per part its bytes and applied pushes.
struct DistributedVariableInfo {
  VariablePlacement placement;
  std::vector<int64_t> part_bytes;
  std::vector<int64_t> part_steps;
};

// A hash embedding table over every ps task, with each task's share.
struct DistributedHashTableInfo {
  HashEmbeddingSpec spec;
  std::vector<int64_t> rows_per_task;
  std::vector<int64_t> bytes_per_task;
};

class PsClient : public ParameterServers {
 public:
  struct Options {
    // Deadline of each attempt of a request.
    absl::Duration rpc_timeout = absl::Seconds(60);
    // A request that fails because its ps task cannot be reached, or does
    // not answer within the attempt's deadline, is sent again (after an
    // exponential backoff with jitter, from initial_retry_backoff up to
    // max_retry_backoff) for up to this long from its first attempt; then
    // the operation fails with UNAVAILABLE naming the task. Pushes too: each
    // carries a request id that the ps task applies once. Also caps each
    // attempt's deadline. A ps task that restarts at the same address within
    // it is used again as soon as it answers.
    absl::Duration ps_failure_timeout = absl::Minutes(2);
    // When every operation gives up, whatever it waits for: no attempt's
    // deadline (checkpoint_timeout's included) and no retry goes past it;
    // an operation still waiting then fails as for ps_failure_timeout. A
    // command line tool's limit on its whole run (distctl --timeout_secs);
    // the default is none.
    absl::Time deadline = absl::InfiniteFuture();
    // How messages name ps_failure_timeout and `deadline` to the user: the
    // flag that set them.
    std::string timeout_flag = "--ps_failure_timeout";
    absl::Duration initial_retry_backoff = absl::Milliseconds(50);
    absl::Duration max_retry_backoff = absl::Seconds(2);
    // Deadline of each ps task's save or restore of a checkpoint.
    absl::Duration checkpoint_timeout = absl::Minutes(30);
    PlacementStrategy placement = PlacementStrategy::kRoundRobin;
    // Requests carrying more tensor bytes are split into several; keep it
    // below the servers' message limit (ps_server --max_message_mb). Pieces
    // of a few MiB let a ps task apply one piece while the next arrives, and
    // bound the memory that requests in flight take on both sides.
    int64_t max_request_bytes = int64_t{2} << 20;
    // With `data_plane`, requests carry at most this many tensor bytes
    // (and at most max_request_bytes; 0: max_request_bytes alone). A data
    // plane connection is one ps task thread reading, applying and
    // answering one request at a time, so smaller pieces than gRPC's keep
    // both of a task's requests in flight working: one applied while the
    // next arrives (bench, 2 ps tasks, quick: sparse pushes of 10k rows of
    // 64 floats 0.49 -> 0.60 of bare gRPC with 512 KiB pieces; dense 1 MiB
    // pushes to one task 2.1 -> 3.2 GB/s). Requests to a task that falls
    // back to gRPC keep this size.
    int64_t data_plane_max_request_bytes = int64_t{512} << 10;
    // Requests of one operation sent at once over all ps tasks, and to any
    // one ps task; the next goes as soon as one is answered. The cap per
    // task bounds what one client's operation makes a ps task hold at once
    // (each request in flight costs it about three times its bytes); two
    // requests keep a task busy, one applied while the next arrives. Both
    // caps hold per path: with `data_plane`, requests over gRPC and over
    // the data planes are windowed apart, and a task's requests take both
    // only while its data plane is (re)learned mid-operation.
    int max_requests_in_flight = 8;
    int max_requests_in_flight_per_task = 2;
    // TCP connections (gRPC channels) to each ps task, at least 1. The
    // requests of one operation that carry tensors take a task's
    // connections in turn; the others use the first. With one connection
    // per task, every piece of a large pull or push goes through one socket
    // (one HTTP/2 connection, its flow-control window) and is read by one
    // gRPC thread on each side, so pieces in flight to the same task wait
    // for each other instead of being received in parallel.
    int connections_per_task = 2;
    // A Read or Update of several dense variables puts every part of a
    // variable (its rows on one ps task) of at most this many bytes, and
    // more than 0, into one request per ps task (PullDenseBatch /
    // PushDenseBatch, cut at max_request_bytes) instead of a request each:
    // small variables (biases, norms) would otherwise cost a round trip
    // each. Parts over max_request_bytes are never batched; 0 turns
    // batching off.
    int64_t batch_below_bytes = int64_t{64} << 10;
    // The requests of one round to the same ps task that carry at most this
    // many bytes each go together, in order, as one Bundle call (up to 64
    // of them): a training step's pulls, or its pushes with the global
    // step's add, cost one call per task instead of one per variable kind
    // and operation (each call costs both sides CPU in gRPC and system
    // calls, which on few cores is what bounds a small step). Larger
    // requests keep their own calls, spread over the task's connections.
    // 0 sends every request alone; a ps task that does not serve Bundle
    // (an older ps_server) gets them alone after its first refusal.
    int64_t bundle_below_bytes = int64_t{256} << 10;
    // Where progress messages go (e.g. which ps task is awaited); stderr
    // when unset.
    std::function<void(absl::string_view)> log;
    // The job's TLS and cluster token (rpc/transport_security.h); null:
    // plain TCP, no token.
    std::shared_ptr<const rpc::TransportSecurity> security;
    // Send the tensor RPCs over the ps tasks' TCP data planes
    // (rpc/data_plane_wire.h; TF_CONFIG "rpc_layer": "grpc+tcp") where
    // WaitForServers learns that a task has one; the others, and every
    // task before WaitForServers, over gRPC. A task whose data plane
    // cannot be reached goes back to gRPC (once, with a warning). With
    // `security`'s TLS, the data plane keeps it and the token
    // (rpc/data_plane_tls.h); refused by Create for a token without TLS.
    bool data_plane = false;
  };

  // Clients of the "ps" job of `cluster`, whose tasks must be numbered
  // 0..n-1. INVALID_ARGUMENT when there is no ps job.
  static absl::StatusOr<std::unique_ptr<PsClient>> Create(
      const ClusterSpec& cluster, Options options);
  // Clients of the ps tasks at `addresses` ("host:port"), task i first.
  static absl::StatusOr<std::unique_ptr<PsClient>> Create(
      std::vector<std::string> addresses, Options options);

  ~PsClient();
  PsClient(const PsClient&) = delete;
  PsClient& operator=(const PsClient&) = delete;

  int num_ps_tasks() const override;
  const std::string& address(int ps_task) const;

  // Waits until every ps task answers, up to `timeout`, saying which task is
  // awaited every few seconds. UNAVAILABLE naming the tasks that did not
  // answer.
  absl::Status WaitForServers(absl::Duration timeout) override;

  // Places the variable (ParameterServers::CreateVariable) on the client
  // side: by the shared placer, or beside colocate_with (which the placer
  // does not count), then creates its parts on their ps tasks.
  using ParameterServers::CreateVariable;
  absl::StatusOr<VariablePlacement> CreateVariable(
      const CreateVariableRequest& request) override;
  // The placement of a variable created by any client, from the ps tasks.
  // NOT_FOUND when no task has it.
  absl::StatusOr<VariablePlacement> LookupVariable(
      absl::string_view name) override;
  // Every variable and hash table, sorted by name.
  absl::Status List(std::vector<DistributedVariableInfo>* variables,
                    std::vector<DistributedHashTableInfo>* hash_tables);

  // Reads as ParameterServers::Read says. Each item's requests are split
  // as its parts and Options::max_request_bytes say; ids are sent once
  // each (a pull copies a repeated id's row to every position that asked
  // for it). How the items travel:
  //   - with sparse items: the dense and sparse items in one round, small
  //     requests to one ps task bundled (Options::bundle_below_bytes);
  //   - several dense items alone: their small parts batched per ps task
  //     (Options::batch_below_bytes), in one round without bundles;
  //   - one dense item alone: its parts' requests;
  //   - each int64 and hash-table item: its own requests, after those.
  // Every round sends at most max_requests_in_flight requests at a time
  // (max_requests_in_flight_per_task to one ps task), each within
  // rpc_timeout. Errors other than the checks name the ps task and the
  // variable(s).
  absl::Status Read(const ReadRequest& request) override;
  // Updates as ParameterServers::Update says; every request carries a
  // request id that the ps task applies once. How the items travel:
  //   - writes without the optimizer (one PushDense per part with its
  //     write) and hash-table gradients: each its own requests, first;
  //   - with then_read: the gradients, the int64 adds and then_read's
  //     dense and sparse reads in one round, updates first, small requests
  //     to one ps task bundled; then then_read's other items as Read sends
  //     them;
  //   - without: with sparse gradients or int64 adds, the gradients and
  //     adds in one bundled round; several dense gradients alone batched
  //     as Read batches them, in one round; one alone, its parts' requests.
  // Gradients of a repeated id are summed in float, in the order they
  // appear, and sent once. An add's values after come back in its
  // response (from a ps_server too old for that, by a read after it).
  absl::Status Update(const UpdateRequest& request) override;
  // Rows of a float32 variable, outside the interface (tools).
  absl::Status PullRows(const VariablePlacement& variable, RowRange rows,
                        absl::Span<float> out);
  absl::Status PushRows(const VariablePlacement& variable, RowRange rows,
                        absl::Span<const float> grad);

  // Hash embedding tables: a shard on every ps task.
  absl::Status CreateHashTable(const HashEmbeddingSpec& spec) override;

  // Each ps task's status and statistics, task 0 first.
  absl::StatusOr<std::vector<ps::GetStatusResponse>> Stats();

  // Every ps task writes its shard of checkpoint `step` under `directory`,
  // then task 0 commits it and keeps the newest `keep_last` (0: all).
  absl::StatusOr<CheckpointSaved> Save(const std::string& directory,
                                       int64_t step, int keep_last) override;
  // As Save, as a delta (ParameterServers::SaveDelta); a task whose tables
  // were not last saved or restored as delta.previous refuses it.
  absl::StatusOr<CheckpointSaved> SaveDelta(const std::string& directory,
                                            int64_t step, int keep_last,
                                            const DeltaSaveOf& delta) override;
  // Restores every variable and hash table that exists on the ps tasks from
  // `directory` (a checkpoint, or a directory of them: the latest). First
  // every task verifies that it can, then every task loads, so a bad
  // checkpoint changes nothing anywhere.
  absl::StatusOr<CheckpointRestored> Restore(
      const std::string& directory) override;

  // Asks every ps task to exit; returns the first error, after trying all.
  absl::Status Shutdown(const std::string& reason);

 private:
  // Save and SaveDelta; `delta` null for a full save.
  absl::StatusOr<CheckpointSaved> SaveShards(const std::string& directory,
                                             int64_t step, int keep_last,
                                             const DeltaSaveOf* delta);
  class Impl;
  explicit PsClient(std::unique_ptr<Impl> impl);
  // Creates the parts of `placement` on their ps tasks, or checks that an
  // existing variable of that name is placed the same.
  absl::StatusOr<VariablePlacement> CreatePlaced(VariablePlacement placement);
  std::unique_ptr<Impl> impl_;
};

}  // namespace distrt

#endif  // DISTRT_CLIENT_PS_CLIENT_H_
