#ifndef DISTRT_JOB_WORKER_GROUP_H_
#define DISTRT_JOB_WORKER_GROUP_H_

// WorkerGroup: this training task's membership in the job's group of
// workers for MultiWorkerMirroredStrategy (every chief and worker task; no
// ps tasks).
//
//   * Rank: the task's id_in_cluster (TF's): the chief is 0, worker i is
//     i + 1 with a chief and i without one. The task of rank 0 (the chief)
//     serves the rendezvous store on its own TF_CONFIG port; the others
//     reach it there.
//   * Join() connects the workers' collective through that store, waiting
//     up to Options.join_timeout for every task to start: in a job with TLS
//     a rpc::TlsRingCollective (a ring of mutual-TLS connections that only
//     the job's members can join, carrying the job's token), otherwise a
//     GlooGroup (Gloo's full TCP mesh, neither authenticated nor
//     encrypted).
//   * After a failed step, ExplainFailure() closes this task's connections
//     (so that every other worker fails at once, not at its timeout) and
//     finds out which tasks are gone: every survivor reports to the
//     rendezvous store, and the tasks that do not within a few seconds are
//     named as lost. A task that cannot reach the store names the chief.
//
// Destroying it closes the connections, then (on the chief) stops serving
// the store.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/cluster/tf_config.h"
#include "runtime/collective/cross_worker_collective.h"
#include "runtime/collective/kv_store.h"

namespace distrt {

namespace rpc {
class RendezvousServer;
class TransportSecurity;
}  // namespace rpc

class WorkerGroup {
 public:
  struct Options {
    // Address the chief's rendezvous server listens on, with the port of
    // its cluster address; empty: the host of that address ("0.0.0.0":
    // every interface).
    std::string bind_host;
    // TLS and cluster token of the rendezvous and, with TLS, of the
    // collective's connections (rpc/transport_security.h); null: plain
    // TCP, no token, and Gloo.
    std::shared_ptr<const rpc::TransportSecurity> security;
    // How long to wait for the rendezvous server and every worker to join.
    absl::Duration join_timeout = absl::Minutes(5);
    // How long a collective waits for a peer.
    absl::Duration collective_timeout = absl::Minutes(5);
    // How long ExplainFailure waits for the other survivors to report.
    absl::Duration survivor_wait = absl::Seconds(8);
    // Where connections that the TLS ring refused are said (the peer and
    // why); null: nowhere.
    std::function<void(absl::string_view)> log;
  };

  // "chief:0", "worker:0", ... in rank order, for `config`'s cluster.
  static std::vector<std::string> TaskNamesByRank(const TfConfig& config);

  // Joins the group of every chief and worker task of `config`; this task
  // (config.task, a chief or worker) takes its id_in_cluster as rank. In
  // local mode (no cluster), a group of one. INVALID_ARGUMENT for a task
  // that is not a chief or worker; UNAVAILABLE when the chief's port cannot
  // be listened on; DEADLINE_EXCEEDED naming the tasks that did not join.
  static absl::StatusOr<std::unique_ptr<WorkerGroup>> Join(
      const TfConfig& config, const Options& options);

  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  CrossWorkerCollective& collective() { return *group_; }
  // What carries the collectives, for start-up lines: "Gloo (TCP, no
  // TLS)" or "a TLS ring (mutual TLS, cluster token)".
  const std::string& transport() const { return transport_; }
  // Known before the group connects (its errors name this task).
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(task_names_.size()); }
  const std::string& task_name() const { return task_names_[rank()]; }

  // `failure` (a failed step) with which tasks are gone: closes this task's
  // connections and waits (bounded by Options.survivor_wait) for the other
  // survivors' reports. Returns `failure`'s code, with a message that
  // starts with "lost worker:2" (or "lost contact with the chief ...") when
  // that is known. Call once; the group is unusable afterwards.
  absl::Status ExplainFailure(const absl::Status& failure);

  // A failure of this task's own rather than of a collective (a bad
  // checkpoint, a full disk, bad data): tells the others why (in the store,
  // so that their ExplainFailure quotes it as "worker:1 failed: ..."),
  // closes this task's connections so that they stop at once, and returns
  // `failure`. The chief then keeps serving the store until the others
  // have read it (bounded). Does nothing but return `failure` after
  // ExplainFailure or Abandon.
  absl::Status Abandon(const absl::Status& failure);

 private:
  WorkerGroup(const Options& options, std::vector<std::string> task_names,
              int rank, std::string chief_address);

  // The store for explaining a failure: the chief's own, or a client that
  // gives up on an unreachable chief quickly (kept in *holder).
  KvStore* FailureStore(std::unique_ptr<KvStore>* holder) const;
  // The chief: serves the store until every rank not in `lost` says it has
  // read what it needed, or `until`.
  void ServeUntilExplained(const std::vector<std::string>& lost,
                           absl::Time until);

  const Options options_;
  const std::vector<std::string> task_names_;
  const int rank_;
  const std::string chief_address_;
  std::unique_ptr<rpc::RendezvousServer> server_;  // on the chief only
  std::unique_ptr<KvStore> client_;                // on the others
  KvStore* store_ = nullptr;  // the server's store, or client_
  std::unique_ptr<CrossWorkerCollective> group_;
  std::string transport_;
  bool failed_ = false;  // ExplainFailure or Abandon ran
};

}  // namespace distrt

#endif  // DISTRT_JOB_WORKER_GROUP_H_
