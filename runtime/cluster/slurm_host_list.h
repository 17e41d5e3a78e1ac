#ifndef DISTRT_RUNTIME_CLUSTER_SLURM_HOST_LIST_H_
#define DISTRT_RUNTIME_CLUSTER_SLURM_HOST_LIST_H_

// Slurm's compressed lists, expanded as Slurm itself expands them
// (`scontrol show hostnames`), for SlurmClusterResolver:
//
//   host lists       "node[01-04,07],login"  -> node01 node02 node03 node04
//                                               node07 login
//                    "rack[1-2]-n[1-2]"      -> rack1-n1 rack1-n2 rack2-n1
//                                               rack2-n2
//   tasks per node   "2(x3),1"               -> 2 2 2 1
//
// A range keeps the width of its first number ("[008-10]" -> 008 009 010).
// Order is kept and nothing is de-duplicated, as in Slurm's environment.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distrt {

// INVALID_ARGUMENT naming the bad part, for what scontrol refuses (a
// descending range, letters in a range, text after the last bracket) and for
// unbalanced brackets. The message does not repeat the list: the caller
// names where it came from (SlurmClusterResolver: "Slurm:
// SLURM_STEP_NODELIST=\"node[5-3]\": the range \"5-3\" descends").
absl::StatusOr<std::vector<std::string>> ExpandSlurmHostList(
    absl::string_view list);

// SLURM_STEP_TASKS_PER_NODE's "count" and "count(xrepeat)" items.
// INVALID_ARGUMENT naming the bad item for anything else, or a count below
// 1; as above, the caller names the list.
absl::StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(
    absl::string_view list);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_SLURM_HOST_LIST_H_
