#include "runtime/cluster/cluster_spec_json.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

absl::Status AddressError(const std::string& job, int index,
                          const Json& address) {
  return absl::InvalidArgumentError(absl::StrCat(
      "job \"", job, "\" task ", index,
      ": address must be a \"host:port\" string, got ", DescribeJson(address)));
}

absl::StatusOr<JobSpec> JobFromJson(const std::string& name,
                                    const Json& tasks) {
  JobSpec job;
  job.name = name;
  if (tasks.is_array()) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      const int index = static_cast<int>(i);
      if (!tasks[i].is_string()) return AddressError(name, index, tasks[i]);
      job.tasks.emplace(index, tasks[i].get<std::string>());
    }
    return job;
  }
  if (tasks.is_object()) {
    job.sparse = true;
    for (const auto& [key, address] : tasks.items()) {
      ASSIGN_OR_RETURN(
          int index, ParseTaskIndex(Json(key), absl::StrCat("job \"", name,
                                                            "\": task index")));
      if (!address.is_string()) return AddressError(name, index, address);
      if (!job.tasks.emplace(index, address.get<std::string>()).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "job \"", name, "\": task index ", index, " is given twice"));
      }
    }
    return job;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "job \"", name,
      "\" must be a list of \"host:port\" addresses or an object from task "
      "index to address, got ",
      DescribeJson(tasks)));
}

}  // namespace

absl::StatusOr<ClusterSpec> ClusterSpecFromJson(const Json& cluster) {
  if (!cluster.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"cluster\" must be an object from task type to task addresses, "
        "got ",
        DescribeJson(cluster)));
  }
  std::vector<JobSpec> jobs;
  for (const auto& [name, tasks] : cluster.items()) {
    ASSIGN_OR_RETURN(JobSpec job, JobFromJson(name, tasks));
    jobs.push_back(std::move(job));
  }
  return ClusterSpec::Create(std::move(jobs));
}

absl::StatusOr<ClusterSpec> ParseClusterSpecText(absl::string_view text) {
  ASSIGN_OR_RETURN(Json json, ParseJson(text));
  if (json.is_object() && json.contains("cluster")) {
    return ClusterSpecFromJson((json)["cluster"]);
  }
  return ClusterSpecFromJson(json);
}

Json ClusterSpecToJson(const ClusterSpec& spec) {
  Json cluster = Json::object();
  for (const JobSpec& job : spec.jobs()) {
    Json tasks = job.sparse ? Json::object() : Json::array();
    for (const auto& [index, address] : job.tasks) {
      if (job.sparse) {
        tasks[std::to_string(index)] = address;
      } else {
        tasks.push_back(address);
      }
    }
    cluster[job.name] = std::move(tasks);
  }
  return cluster;
}

}  // namespace distrt
