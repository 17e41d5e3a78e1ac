#include "runtime/cluster/cluster_spec.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace distrt {
namespace {

// What to tell a user who wrote a task type that multi-worker training does
// not know; empty when there is nothing more specific than the list.
std::string SuggestTaskType(absl::string_view job) {
  const std::string lower = absl::AsciiStrToLower(job);
  if (lower == "master") {
    return "use \"chief\" instead (\"master\" is TF1's name for it)";
  }
  for (absl::string_view known :
       {kChiefJob, kWorkerJob, kPsJob, kEvaluatorJob}) {
    if (lower == known) {
      return absl::StrCat("use \"", known, "\" (task types are lower case)");
    }
  }
  return "";
}

bool IsKnownTaskType(absl::string_view job) {
  return job == kChiefJob || job == kWorkerJob || job == kPsJob ||
         job == kEvaluatorJob;
}

}  // namespace

absl::Status ValidateTaskType(absl::string_view type) {
  if (IsKnownTaskType(type)) return absl::OkStatus();
  std::string suggestion = SuggestTaskType(type);
  return absl::InvalidArgumentError(
      absl::StrCat("\"", type, "\" is not a task type of multi-worker training",
                   suggestion.empty() ? "" : "; ", suggestion,
                   " (allowed: chief, worker, ps, evaluator)"));
}

absl::StatusOr<HostPort> ParseTaskAddress(absl::string_view address) {
  if (address.empty()) {
    return absl::InvalidArgumentError("address is empty");
  }
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos ||
      (address.front() == '[' && address[colon - 1] != ']')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "address \"", address, "\" has no port; write it as \"host:port\""));
  }
  absl::string_view host = address.substr(0, colon);
  absl::string_view port_text = address.substr(colon + 1);
  if (host.empty() || host == "[]") {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", address, "\" has no host"));
  }
  int port = 0;
  if (port_text.empty() ||
      !std::all_of(port_text.begin(), port_text.end(),
                   [](char c) { return absl::ascii_isdigit(c); }) ||
      !absl::SimpleAtoi(port_text, &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", address, "\" has port \"", port_text,
                     "\"; a port is a number from 1 to 65535"));
  }
  return HostPort{std::string(host), port};
}

absl::Status ValidateTaskAddress(absl::string_view address) {
  return ParseTaskAddress(address).status();
}

absl::StatusOr<ClusterSpec> ClusterSpec::Create(std::vector<JobSpec> jobs) {
  // Address -> "job task i", to name both users of a duplicate address.
  absl::flat_hash_map<std::string, std::string> owner_of_address;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const JobSpec& job = jobs[j];
    if (absl::Status s = ValidateTaskType(job.name); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("job ", s.message()));
    }
    for (size_t k = 0; k < j; ++k) {
      if (jobs[k].name == job.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("job \"", job.name, "\" is given twice"));
      }
    }
    if ((job.name == kChiefJob || job.name == kEvaluatorJob) &&
        job.tasks.size() > 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "job \"%s\" has %d tasks; there may be at most one %s task", job.name,
          job.tasks.size(), job.name));
    }
    for (const auto& [index, address] : job.tasks) {
      const std::string task_name = absl::StrCat(job.name, " task ", index);
      if (index < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "job \"", job.name, "\": task index ", index, " is negative"));
      }
      if (absl::Status s = ValidateTaskAddress(address); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "job \"", job.name, "\" task ", index, ": ", s.message()));
      }
      auto [it, inserted] = owner_of_address.emplace(address, task_name);
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("address \"", address, "\" is used by both ",
                         it->second, " and ", task_name));
      }
    }
  }
  return ClusterSpec(std::move(jobs));
}

bool ClusterSpec::empty() const { return NumTasks() == 0; }

const JobSpec* ClusterSpec::FindJob(absl::string_view job) const {
  for (const JobSpec& spec : jobs_) {
    if (spec.name == job) return &spec;
  }
  return nullptr;
}

int ClusterSpec::NumTasks(absl::string_view job) const {
  const JobSpec* spec = FindJob(job);
  return spec == nullptr ? 0 : static_cast<int>(spec->tasks.size());
}

int ClusterSpec::NumTasks() const {
  int total = 0;
  for (const JobSpec& spec : jobs_) total += spec.tasks.size();
  return total;
}

std::vector<int> ClusterSpec::TaskIndices(absl::string_view job) const {
  std::vector<int> indices;
  if (const JobSpec* spec = FindJob(job)) {
    for (const auto& entry : spec->tasks) indices.push_back(entry.first);
  }
  return indices;
}

absl::StatusOr<std::string> ClusterSpec::TaskAddress(absl::string_view job,
                                                     int index) const {
  const JobSpec* spec = FindJob(job);
  if (spec == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no job \"", job, "\" in the cluster"));
  }
  auto it = spec->tasks.find(index);
  if (it == spec->tasks.end()) {
    return absl::NotFoundError(
        absl::StrCat("job \"", job, "\" has no task ", index));
  }
  return it->second;
}

}  // namespace distrt
