#include "worker/worker_group.h"

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "rpc/rendezvous_client.h"
#include "rpc/rendezvous_server.h"
#include "runtime/cluster/cluster_spec.h"

namespace distrt {
namespace {

// The group's keys in the store: Gloo's addresses under kGlooPrefix, the
// survivors of a failure under kSurvivorPrefix/<rank>. The store lives as
// long as the chief's process, so a restarted job starts from no keys.
constexpr char kGlooPrefix[] = "mwms/gloo";
constexpr char kSurvivorPrefix[] = "mwms/survivors/";
constexpr char kExplainedPrefix[] = "mwms/explained/";

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
  // Gloo takes a v6 address without the brackets of "[::1]:port".
  absl::ConsumePrefix(&host, "[");
  absl::ConsumeSuffix(&host, "]");
  return std::string(host);
}

}  // namespace

std::vector<std::string> WorkerGroup::TaskNamesByRank(const TfConfig& config) {
  std::vector<std::string> names;
  for (int i = 0; i < config.cluster.NumTasks(kChiefJob); ++i) {
    names.push_back(absl::StrCat(kChiefJob, ":", i));
  }
  for (int i = 0; i < config.cluster.NumTasks(kWorkerJob); ++i) {
    names.push_back(absl::StrCat(kWorkerJob, ":", i));
  }
  if (names.empty()) names.push_back("local");
  return names;
}

WorkerGroup::WorkerGroup(const Options& options,
                         std::vector<std::string> task_names,
                         std::string chief_address)
    : options_(options),
      task_names_(std::move(task_names)),
      chief_address_(std::move(chief_address)) {}

WorkerGroup::~WorkerGroup() {
  group_.reset();
  if (server_ != nullptr) server_->Stop();
}

absl::StatusOr<std::unique_ptr<WorkerGroup>> WorkerGroup::Join(
    const TfConfig& config, const Options& options) {
  std::vector<std::string> names = TaskNamesByRank(config);
  int rank = 0;
  std::string own_address;
  std::string chief_address;
  if (!config.is_local()) {
    if (!config.task.has_value() ||
        (config.task->type != kChiefJob && config.task->type != kWorkerJob)) {
      return absl::InvalidArgumentError(
          "the multi-worker group is made of chief and worker tasks; "
          "TF_CONFIG's task is neither");
    }
    const std::string me =
        absl::StrCat(config.task->type, ":", config.task->index);
    for (size_t r = 0; r < names.size(); ++r) {
      if (names[r] == me) rank = static_cast<int>(r);
    }
    absl::StatusOr<std::string> own =
        config.cluster.TaskAddress(config.task->type, config.task->index);
    if (!own.ok()) return own.status();
    own_address = *own;
    const bool has_chief = config.cluster.NumTasks(kChiefJob) > 0;
    absl::StatusOr<std::string> chief =
        config.cluster.TaskAddress(has_chief ? kChiefJob : kWorkerJob, 0);
    if (!chief.ok()) return chief.status();
    chief_address = *chief;
  }
  auto group = std::unique_ptr<WorkerGroup>(
      new WorkerGroup(options, std::move(names), chief_address));
  InMemoryKvStore local_store;
  if (config.is_local()) {
    group->store_ = &local_store;  // a group of one meets itself
  } else if (rank == 0) {
    absl::StatusOr<HostPort> chief = ParseTaskAddress(chief_address);
    if (!chief.ok()) return chief.status();
    rpc::RendezvousServer::Options server_options;
    server_options.listen_address =
        absl::StrCat(options.bind_host, ":", chief->port);
    absl::StatusOr<std::unique_ptr<rpc::RendezvousServer>> server =
        rpc::RendezvousServer::Start(server_options);
    if (!server.ok()) {
      return absl::Status(
          server.status().code(),
          absl::StrCat("the chief serves the workers' rendezvous on its "
                       "TF_CONFIG port: ",
                       server.status().message()));
    }
    group->server_ = *std::move(server);
    group->store_ = group->server_->store();
  } else {
    rpc::RendezvousClient::Options client_options;
    client_options.address = chief_address;
    client_options.connect_timeout = options.join_timeout;
    group->client_ = std::make_unique<rpc::RendezvousClient>(client_options);
    group->store_ = group->client_.get();
  }

  GlooGroup::Options gloo;
  gloo.rank = rank;
  gloo.size = static_cast<int>(group->task_names_.size());
  gloo.host = config.is_local() ? "127.0.0.1" : HostOf(own_address);
  gloo.timeout = options.collective_timeout;
  gloo.connect_timeout = options.join_timeout;
  gloo.prefix = kGlooPrefix;
  absl::StatusOr<std::unique_ptr<GlooGroup>> connected =
      GlooGroup::Create(group->store_, gloo);
  if (!connected.ok()) {
    return absl::Status(
        connected.status().code(),
        absl::StrCat(group->task_name(), " could not join the ", gloo.size,
                     " training tasks (",
                     absl::StrJoin(group->task_names_, ", "), ") within ",
                     absl::FormatDuration(options.join_timeout),
                     " (--wait_secs): ", connected.status().message()));
  }
  group->group_ = *std::move(connected);
  if (config.is_local()) group->store_ = nullptr;
  return group;
}

absl::Status WorkerGroup::ExplainFailure(const absl::Status& failure) {
  group_->Close();
  if (size() == 1) return failure;
  const std::string what = std::string(failure.message());

  // Reach the store with a short connect timeout: the chief answers at once
  // or is gone.
  std::unique_ptr<KvStore> client;
  KvStore* store = store_;
  if (server_ == nullptr) {
    rpc::RendezvousClient::Options client_options;
    client_options.address = chief_address_;
    client_options.connect_timeout = kStoreReachTimeout;
    client_options.rpc_timeout = options_.survivor_wait + kChiefLinger;
    client = std::make_unique<rpc::RendezvousClient>(client_options);
    store = client.get();
  }
  auto lost_chief = [&] {
    return absl::Status(
        failure.code(),
        absl::StrCat("lost contact with the chief (", task_names_[0], " at ",
                     chief_address_, "); the step failed: ", what));
  };
  if (!store->Set(absl::StrCat(kSurvivorPrefix, rank()), task_name()).ok()) {
    return lost_chief();
  }
  // Every survivor reports within moments of the failure (closing
  // connections spreads it at once); a task that has not reported by the
  // deadline is gone, or stopped.
  const absl::Time deadline =
      absl::Now() + options_.survivor_wait +
      (server_ != nullptr ? kChiefLinger : absl::ZeroDuration());
  std::vector<std::string> lost;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    absl::StatusOr<std::vector<std::string>> reported =
        store->Get({absl::StrCat(kSurvivorPrefix, r)},
                   std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (reported.ok()) continue;
    if (absl::IsDeadlineExceeded(reported.status())) {
      lost.push_back(task_names_[r]);
      continue;
    }
    return lost_chief();
  }
  if (server_ == nullptr) {
    // Done with the store: the chief may stop serving it.
    store->Set(absl::StrCat(kExplainedPrefix, rank()), task_name())
        .IgnoreError();
  } else {
    // The others may still be reading; serve until they say they are done
    // (bounded: a survivor that cannot say so is not waited for long).
    const absl::Time until = deadline + kChiefLinger;
    for (int r = 1; r < size(); ++r) {
      if (absl::c_linear_search(lost, task_names_[r])) continue;
      store
          ->Get({absl::StrCat(kExplainedPrefix, r)},
                std::max(until - absl::Now(), absl::ZeroDuration()))
          .status()
          .IgnoreError();
    }
  }
  if (lost.empty()) {
    return absl::Status(
        failure.code(),
        absl::StrCat("the step failed, and every training task is still "
                     "there: ",
                     what));
  }
  return absl::Status(
      failure.code(),
      absl::StrCat("lost ", absl::StrJoin(lost, ", "),
                   " (it did not report within ",
                   absl::FormatDuration(options_.survivor_wait),
                   " of the failure: it died, hung or lost the network); the "
                   "step failed: ",
                   what));
}

}  // namespace distrt
