#include "job/worker_group.h"

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "rpc/data_plane_tls.h"
#include "rpc/rendezvous_client.h"
#include "rpc/rendezvous_server.h"
#include "rpc/tls_ring_collective.h"
#include "rpc/transport_security.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/collective/gloo_group.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// The group's keys in the store: the collective's addresses under
// kGlooPrefix or kRingPrefix, the survivors of a failure under
// kSurvivorPrefix/<rank>. The store lives as long as the chief's process, so a
// restarted job starts from no keys.
constexpr char kGlooPrefix[] = "mwms/gloo";
constexpr char kRingPrefix[] = "mwms/ring";
constexpr char kSurvivorPrefix[] = "mwms/survivors/";
constexpr char kExplainedPrefix[] = "mwms/explained/";
constexpr char kErrorPrefix[] = "mwms/errors/";

// How long a task waits to reach the store while explaining a failure: the
// chief is either there (it answers at once) or gone.
constexpr absl::Duration kStoreReachTimeout = absl::Seconds(3);
// The chief waits for survivors this much longer than the others do, and
// then for each of them to say it has read what it needs, so that their
// last reads still reach its store.
constexpr absl::Duration kChiefLinger = absl::Seconds(2);

std::string HostOf(absl::string_view address) {
  absl::StatusOr<HostPort> parsed = ParseTaskAddress(address);
  if (!parsed.ok()) return "127.0.0.1";
  absl::string_view host = parsed->host;
  // The collectives take a v6 address without the brackets of "[::1]:port".
  absl::ConsumePrefix(&host, "[");
  absl::ConsumeSuffix(&host, "]");
  return std::string(host);
}

// Where this task stands in the group: its rank, its own address and the
// address of rank 0's task, which serves the rendezvous. Empty addresses in
// local mode.
struct Membership {
  int rank = 0;
  std::string own_address;
  std::string chief_address;
};

absl::StatusOr<Membership> FindMembership(
    const TfConfig& config, const std::vector<std::string>& names) {
  Membership membership;
  if (config.is_local()) return membership;
  if (!config.task.has_value() ||
      (config.task->type != kChiefJob && config.task->type != kWorkerJob)) {
    return absl::InvalidArgumentError(
        "the multi-worker group is made of chief and worker tasks; "
        "TF_CONFIG's task is neither");
  }
  const std::string me =
      absl::StrCat(config.task->type, ":", config.task->index);
  const auto found = absl::c_find(names, me);
  if (found == names.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG's task ", me,
                     " is not in its cluster's chief and worker "
                     "jobs"));
  }
  membership.rank = static_cast<int>(found - names.begin());
  ASSIGN_OR_RETURN(
      membership.own_address,
      config.cluster.TaskAddress(config.task->type, config.task->index));
  // Rank 0's task serves the rendezvous.
  const std::vector<std::string> first = absl::StrSplit(names[0], ':');
  int first_index = 0;
  if (first.size() != 2 || !absl::SimpleAtoi(first[1], &first_index)) {
    return absl::InternalError(
        absl::StrCat("bad task name \"", names[0], "\""));
  }
  ASSIGN_OR_RETURN(membership.chief_address,
                   config.cluster.TaskAddress(first[0], first_index));
  return membership;
}

// The chief's rendezvous server, on the port of its cluster address.
absl::StatusOr<std::unique_ptr<rpc::RendezvousServer>> StartRendezvousServer(
    const std::string& chief_address, const WorkerGroup::Options& options) {
  ASSIGN_OR_RETURN(HostPort chief, ParseTaskAddress(chief_address));
  rpc::RendezvousServer::Options server_options;
  server_options.listen_address =
      absl::StrCat(options.bind_host.empty() ? chief.host : options.bind_host,
                   ":", chief.port);
  server_options.security = options.security;
  absl::StatusOr<std::unique_ptr<rpc::RendezvousServer>> server =
      rpc::RendezvousServer::Start(server_options);
  if (!server.ok()) {
    return absl::Status(
        server.status().code(),
        absl::StrCat("the chief serves the workers' rendezvous on its "
                     "TF_CONFIG port: ",
                     server.status().message()));
  }
  return server;
}

bool UsesTls(const WorkerGroup::Options& options) {
  return options.security != nullptr && options.security->uses_tls();
}

// The collective of the `size` tasks, met through `store`: in a job with
// TLS a TLS ring over `tls` (the job's), otherwise Gloo's TCP mesh.
absl::StatusOr<std::unique_ptr<CrossWorkerCollective>> ConnectCollective(
    KvStore* store, const WorkerGroup::Options& options,
    std::shared_ptr<const rpc::DataPlaneTls> tls, int rank, int size,
    const std::string& host) {
  if (UsesTls(options)) {
    rpc::TlsRingCollective::Options ring;
    ring.rank = rank;
    ring.size = size;
    ring.host = host;
    ring.timeout = options.collective_timeout;
    ring.connect_timeout = options.join_timeout;
    ring.prefix = kRingPrefix;
    ring.tls = std::move(tls);
    ring.log = options.log;
    return rpc::TlsRingCollective::Create(store, ring);
  }
  GlooGroup::Options gloo;
  gloo.rank = rank;
  gloo.size = size;
  gloo.host = host;
  gloo.timeout = options.collective_timeout;
  gloo.connect_timeout = options.join_timeout;
  gloo.prefix = kGlooPrefix;
  return GlooGroup::Create(store, gloo);
}

}  // namespace

std::vector<std::string> WorkerGroup::TaskNamesByRank(const TfConfig& config) {
  // TF's id_in_cluster order: the chief, then the workers by index (a
  // sparse job's indices need not start at 0 or be contiguous).
  std::vector<std::string> names;
  for (absl::string_view job : {kChiefJob, kWorkerJob}) {
    for (int index : config.cluster.TaskIndices(job)) {
      names.push_back(absl::StrCat(job, ":", index));
    }
  }
  if (names.empty()) names.push_back("local");
  return names;
}

WorkerGroup::WorkerGroup(const Options& options,
                         std::vector<std::string> task_names, int rank,
                         std::string chief_address)
    : options_(options),
      task_names_(std::move(task_names)),
      rank_(rank),
      chief_address_(std::move(chief_address)) {}

WorkerGroup::~WorkerGroup() {
  group_.reset();
  if (server_ != nullptr) server_->Stop();
}

absl::StatusOr<std::unique_ptr<WorkerGroup>> WorkerGroup::Join(
    const TfConfig& config, const Options& options) {
  std::vector<std::string> names = TaskNamesByRank(config);
  ASSIGN_OR_RETURN(const Membership membership, FindMembership(config, names));
  const int rank = membership.rank;
  auto group = std::unique_ptr<WorkerGroup>(new WorkerGroup(
      options, std::move(names), rank, membership.chief_address));
  InMemoryKvStore local_store;
  if (config.is_local()) {
    group->store_ = &local_store;  // a group of one meets itself
  } else if (rank == 0) {
    ASSIGN_OR_RETURN(group->server_,
                     StartRendezvousServer(membership.chief_address, options));
    group->store_ = group->server_->store();
  } else {
    rpc::RendezvousClient::Options client_options;
    client_options.address = membership.chief_address;
    client_options.connect_timeout = options.join_timeout;
    client_options.security = options.security;
    group->client_ = std::make_unique<rpc::RendezvousClient>(client_options);
    group->store_ = group->client_.get();
  }

  const int size = static_cast<int>(group->task_names_.size());
  const std::string host =
      config.is_local() ? "127.0.0.1" : HostOf(membership.own_address);
  std::shared_ptr<const rpc::DataPlaneTls> tls;
  if (UsesTls(options)) {
    ASSIGN_OR_RETURN(tls, rpc::DataPlaneTls::ForJob(*options.security));
  }
  group->transport_ = UsesTls(options)
                          ? "a TLS ring (mutual TLS, cluster token)"
                          : "Gloo (TCP, no TLS)";
  absl::StatusOr<std::unique_ptr<CrossWorkerCollective>> connected =
      ConnectCollective(group->store_, options, tls, rank, size, host);
  if (!connected.ok()) {
    return absl::Status(
        connected.status().code(),
        absl::StrCat(group->task_name(), " could not join the ", size,
                     " training tasks (",
                     absl::StrJoin(group->task_names_, ", "), ") within ",
                     absl::FormatDuration(options.join_timeout),
                     " (--wait_secs): ", connected.status().message()));
  }
  group->group_ = *std::move(connected);
  if (config.is_local()) group->store_ = nullptr;
  return group;
}

KvStore* WorkerGroup::FailureStore(std::unique_ptr<KvStore>* holder) const {
  if (server_ != nullptr) return store_;
  rpc::RendezvousClient::Options client_options;
  client_options.address = chief_address_;
  client_options.connect_timeout = kStoreReachTimeout;
  client_options.security = options_.security;
  client_options.rpc_timeout = options_.survivor_wait + kChiefLinger;
  *holder = std::make_unique<rpc::RendezvousClient>(client_options);
  return holder->get();
}

void WorkerGroup::ServeUntilExplained(const std::vector<std::string>& lost,
                                      absl::Time until) {
  for (int r = 1; r < size(); ++r) {
    if (absl::c_linear_search(lost, task_names_[r])) continue;
    store_
        ->Get({absl::StrCat(kExplainedPrefix, r)},
              std::max(until - absl::Now(), absl::ZeroDuration()))
        .status()
        .IgnoreError();
  }
}

absl::Status WorkerGroup::Abandon(const absl::Status& failure) {
  if (failed_ || size() == 1) {
    group_->Close();
    return failure;
  }
  failed_ = true;
  std::unique_ptr<KvStore> client;
  KvStore* store = FailureStore(&client);
  // Best effort: with the chief gone there is nobody to tell.
  store
      ->Set(absl::StrCat(kErrorPrefix, rank()),
            absl::StrCat(absl::StatusCodeToString(failure.code()), ": ",
                         failure.message()))
      .IgnoreError();
  group_->Close();
  if (server_ != nullptr) {
    ServeUntilExplained(
        {}, absl::Now() + options_.survivor_wait + kChiefLinger + kChiefLinger);
  }
  return failure;
}

absl::Status WorkerGroup::ExplainFailure(const absl::Status& failure) {
  group_->Close();
  if (failed_ || size() == 1) return failure;
  failed_ = true;
  const std::string what = std::string(failure.message());

  // Reach the store with a short connect timeout: the chief answers at once
  // or is gone.
  std::unique_ptr<KvStore> client;
  KvStore* store = FailureStore(&client);
  auto lost_chief = [&] {
    return absl::Status(
        failure.code(),
        absl::StrCat("lost contact with the chief (", task_names_[0], " at ",
                     chief_address_,
                     "); this task's step then failed: ", what));
  };
  if (!store->Set(absl::StrCat(kSurvivorPrefix, rank()), task_name()).ok()) {
    return lost_chief();
  }
  // Every survivor reports within moments of the failure (closing
  // connections spreads it at once); a task that has not reported by the
  // deadline is gone, stopped, or busy elsewhere for that long. A task that
  // failed by itself left its error.
  const absl::Time deadline =
      absl::Now() + options_.survivor_wait +
      (server_ != nullptr ? kChiefLinger : absl::ZeroDuration());
  std::vector<std::string> lost;
  std::vector<std::string> errors;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    absl::StatusOr<std::vector<std::string>> reported =
        store->Get({absl::StrCat(kSurvivorPrefix, r)},
                   std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (reported.ok()) continue;
    if (!absl::IsDeadlineExceeded(reported.status())) return lost_chief();
    lost.push_back(task_names_[r]);
    absl::StatusOr<std::vector<std::string>> error =
        store->Get({absl::StrCat(kErrorPrefix, r)}, absl::ZeroDuration());
    if (error.ok()) {
      errors.push_back(absl::StrCat(task_names_[r], " failed: ", (*error)[0]));
    }
  }
  if (server_ == nullptr) {
    // Done with the store: the chief may stop serving it.
    store->Set(absl::StrCat(kExplainedPrefix, rank()), task_name())
        .IgnoreError();
  } else {
    // The others may still be reading; serve until they say they are done
    // (bounded: a survivor that cannot say so is not waited for long).
    ServeUntilExplained(lost, deadline + kChiefLinger);
  }
  if (!errors.empty()) {
    return absl::Status(failure.code(),
                        absl::StrCat(absl::StrJoin(errors, "; "),
                                     "; this task's step then failed: ", what));
  }
  if (lost.empty()) {
    return absl::Status(
        failure.code(),
        absl::StrCat("a collective failed, and every training task is still "
                     "there: ",
                     what));
  }
  return absl::Status(
      failure.code(),
      absl::StrCat("lost ", absl::StrJoin(lost, ", "),
                   " (it did not report within ",
                   absl::FormatDuration(options_.survivor_wait),
                   " of the failure: it died, hung, lost the network or was "
                   "busy elsewhere); this task's step then failed: ",
                   what));
}

}  // namespace distrt
