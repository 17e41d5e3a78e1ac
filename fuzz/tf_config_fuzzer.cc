// Fuzzes the reading of TF_CONFIG and of cluster spec files: the input is
// the text of the variable (or of the file).
//
// Checked beyond "no crash": errors are INVALID_ARGUMENT (and, for
// TF_CONFIG, start "TF_CONFIG: "); a config that parses names a task that
// its cluster has (or the evaluator outside it); every cluster read prints
// back (ClusterSpecToJson) as JSON that reads as the same cluster.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/cluster_spec_json.h"
#include "runtime/cluster/json_util.h"
#include "runtime/cluster/tf_config.h"

namespace distrt::fuzz {
namespace {

bool SameCluster(const ClusterSpec& a, const ClusterSpec& b) {
  if (a.jobs().size() != b.jobs().size()) return false;
  for (size_t i = 0; i < a.jobs().size(); ++i) {
    const JobSpec& x = a.jobs()[i];
    const JobSpec& y = b.jobs()[i];
    if (x.name != y.name || x.sparse != y.sparse || x.tasks != y.tasks) {
      return false;
    }
  }
  return true;
}

// The cluster must survive ClusterSpecToJson, both as a Json value and as
// the text it prints.
void CheckRoundTrip(const ClusterSpec& cluster, absl::string_view what) {
  const Json json = ClusterSpecToJson(cluster);
  absl::StatusOr<ClusterSpec> again = ClusterSpecFromJson(json);
  if (!again.ok()) {
    FuzzFail(absl::StrCat(what, ": its cluster printed as ", json.dump(),
                          " does not read back: ", again.status().ToString()));
  }
  if (!SameCluster(cluster, *again)) {
    FuzzFail(absl::StrCat(what, ": its cluster printed as ", json.dump(),
                          " reads back as another cluster"));
  }
  absl::StatusOr<ClusterSpec> from_text = ParseClusterSpecText(json.dump());
  if (!from_text.ok() || !SameCluster(cluster, *from_text)) {
    FuzzFail(absl::StrCat(what, ": the text ", json.dump(),
                          " does not read as the same cluster"));
  }
}

void CheckTfConfig(absl::string_view text) {
  absl::StatusOr<TfConfig> config = ParseTfConfig(text);
  if (!config.ok()) {
    ExpectCode(config.status(), absl::StatusCode::kInvalidArgument,
               "ParseTfConfig");
    if (!absl::StartsWith(config.status().message(), "TF_CONFIG: ")) {
      FuzzFail(absl::StrCat("ParseTfConfig error without its prefix: ",
                            config.status().message()));
    }
    return;
  }
  CheckRoundTrip(config->cluster, "ParseTfConfig");
  if (config->is_local() || !config->task.has_value()) return;
  const TaskId& task = *config->task;
  if (!ValidateTaskType(task.type).ok()) {
    FuzzFail(
        absl::StrCat("ParseTfConfig accepted task type \"", task.type, "\""));
  }
  absl::StatusOr<std::string> address =
      config->cluster.TaskAddress(task.type, task.index);
  const bool lone_evaluator = task.type == kEvaluatorJob && task.index == 0 &&
                              !config->cluster.HasJob(kEvaluatorJob);
  if (!address.ok() && !lone_evaluator) {
    FuzzFail(absl::StrCat(
        "ParseTfConfig accepted task ", task.type, ":", task.index,
        ", which its cluster does not have: ", address.status().ToString()));
  }
  if (address.ok() && !ValidateTaskAddress(*address).ok()) {
    FuzzFail(
        absl::StrCat("ParseTfConfig accepted the address \"", *address, "\""));
  }
}

void CheckClusterSpecText(absl::string_view text) {
  absl::StatusOr<ClusterSpec> cluster = ParseClusterSpecText(text);
  if (!cluster.ok()) {
    ExpectCode(cluster.status(), absl::StatusCode::kInvalidArgument,
               "ParseClusterSpecText");
    return;
  }
  CheckRoundTrip(*cluster, "ParseClusterSpecText");
  int total = 0;
  for (const JobSpec& job : cluster->jobs()) {
    total += cluster->NumTasks(job.name);
    for (const auto& [index, address] : job.tasks) {
      absl::StatusOr<HostPort> host_port = ParseTaskAddress(address);
      if (index < 0 || !host_port.ok() || host_port->port < 1 ||
          host_port->port > 65535 || host_port->host.empty()) {
        FuzzFail(absl::StrCat("ParseClusterSpecText accepted task ", job.name,
                              ":", index, " at \"", address, "\""));
      }
    }
  }
  if (total != cluster->NumTasks()) {
    FuzzFail("ClusterSpec::NumTasks() is not the sum over its jobs");
  }
}

// The address parser on its own: what the text says when it is one address.
void CheckTaskAddress(absl::string_view text) {
  absl::StatusOr<HostPort> host_port = ParseTaskAddress(text);
  if (!host_port.ok()) {
    ExpectCode(host_port.status(), absl::StatusCode::kInvalidArgument,
               "ParseTaskAddress");
    return;
  }
  if (host_port->host.empty() || host_port->port < 1 ||
      host_port->port > 65535 ||
      absl::StrCat(host_port->host, ":") !=
          text.substr(0, text.rfind(':') + 1)) {
    FuzzFail(absl::StrCat("ParseTaskAddress(\"", text, "\") gave host \"",
                          host_port->host, "\" port ", host_port->port));
  }
}

}  // namespace
}  // namespace distrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  distrt::fuzz::CheckTfConfig(text);
  distrt::fuzz::CheckClusterSpecText(text);
  distrt::fuzz::CheckTaskAddress(text);
  return 0;
}
