#include "runtime/ps/placement.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Rounds up; a and b positive, and no a + b - 1 that could overflow.
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// INVALID_ARGUMENT: `variable "<name>": <what>`.
absl::Status VariableError(const VariableSpec& spec, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("variable \"", spec.name, "\": ", what));
}

// How many partitions `policy` makes of `spec`, which has rows > 0 and
// passed ValidateVariableSpec (so the byte counts below cannot overflow).
// The size-based kinds follow TF's min_max_variable_partitioner and
// variable_axis_size_partitioner: they first decide how many whole rows a
// shard holds and derive the count from that, which is what guarantees
// that every shard really is >= min (resp. <= max) bytes. Dividing total
// bytes by the limit instead does not: 10 rows of 100 bytes with a 250-byte
// minimum would give 4 shards, two of them of 200 bytes.
int64_t NumShards(const VariableSpec& spec, const PartitionPolicy& policy,
                  int64_t rows) {
  const int64_t row_bytes = RowWidth(spec) * DTypeSize(spec.dtype);
  int64_t shards = 1;
  switch (policy.kind) {
    case PartitionPolicy::Kind::kNone:
      break;
    case PartitionPolicy::Kind::kFixedShards:
      shards = policy.num_shards;
      break;
    case PartitionPolicy::Kind::kMinSize:
      // Zero-byte rows: no size to split by.
      if (row_bytes > 0) {
        shards = rows / CeilDiv(policy.min_shard_bytes, row_bytes);
      }
      break;
    case PartitionPolicy::Kind::kMaxSize:
      if (row_bytes > 0) {
        const int64_t rows_per_shard =
            std::max<int64_t>(1, policy.max_shard_bytes / row_bytes);
        shards = CeilDiv(rows, rows_per_shard);
      }
      break;
  }
  const bool sized = policy.kind == PartitionPolicy::Kind::kMinSize ||
                     policy.kind == PartitionPolicy::Kind::kMaxSize;
  if (sized && policy.max_shards > 0) {
    shards = std::min<int64_t>(shards, policy.max_shards);
  }
  return std::max<int64_t>(1, std::min(shards, rows));
}

absl::Status ValidatePolicy(const VariableSpec& spec,
                            const PartitionPolicy& policy) {
  switch (policy.kind) {
    case PartitionPolicy::Kind::kNone:
      return absl::OkStatus();
    case PartitionPolicy::Kind::kFixedShards:
      if (policy.num_shards < 1) {
        return VariableError(
            spec, absl::StrCat("fixed-shards partitioning needs num_shards "
                               ">= 1, got ",
                               policy.num_shards));
      }
      return absl::OkStatus();
    case PartitionPolicy::Kind::kMinSize:
      if (policy.min_shard_bytes < 1) {
        return VariableError(
            spec, absl::StrCat("min-size partitioning needs min_shard_bytes "
                               ">= 1, got ",
                               policy.min_shard_bytes));
      }
      break;
    case PartitionPolicy::Kind::kMaxSize:
      if (policy.max_shard_bytes < 1) {
        return VariableError(
            spec, absl::StrCat("max-size partitioning needs max_shard_bytes "
                               ">= 1, got ",
                               policy.max_shard_bytes));
      }
      break;
    default:
      return VariableError(spec, absl::StrCat("unknown partition policy kind ",
                                              static_cast<int>(policy.kind)));
  }
  if (policy.max_shards < 0) {
    return VariableError(
        spec, absl::StrCat("partitioning needs max_shards >= 0 (0: no "
                           "limit), got ",
                           policy.max_shards));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t VariableBytes(const VariableSpec& spec) {
  return NumRows(spec) * RowWidth(spec) * DTypeSize(spec.dtype);
}

absl::StatusOr<std::vector<RowRange>> PartitionRows(
    const VariableSpec& spec, const PartitionPolicy& policy) {
  RETURN_IF_ERROR(ValidateVariableSpec(spec));
  RETURN_IF_ERROR(ValidatePolicy(spec, policy));
  const int64_t rows = NumRows(spec);
  if (rows == 0) return std::vector<RowRange>{RowRange{0, 0}};
  const int64_t shards = NumShards(spec, policy, rows);
  const int64_t base = rows / shards;
  const int64_t extra = rows % shards;  // the first `extra` get one more row
  std::vector<RowRange> ranges;
  ranges.reserve(shards);
  int64_t begin = 0;
  for (int64_t i = 0; i < shards; ++i) {
    const int64_t end = begin + base + (i < extra ? 1 : 0);
    ranges.push_back(RowRange{begin, end});
    begin = end;
  }
  return ranges;
}

absl::string_view PlacementStrategyName(PlacementStrategy strategy) {
  switch (strategy) {
    case PlacementStrategy::kRoundRobin:
      return "round_robin";
    case PlacementStrategy::kGreedyByBytes:
      return "greedy_bytes";
  }
  return "unknown";
}

absl::StatusOr<PlacementStrategy> ParsePlacementStrategy(
    absl::string_view name) {
  for (PlacementStrategy strategy :
       {PlacementStrategy::kRoundRobin, PlacementStrategy::kGreedyByBytes}) {
    if (name == PlacementStrategyName(strategy)) return strategy;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown placement strategy \"", name,
                   "\" (known: round_robin, greedy_bytes)"));
}

absl::StatusOr<VariablePlacer> VariablePlacer::Create(
    int num_ps_tasks, PlacementStrategy strategy) {
  if (num_ps_tasks < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable placement needs at least 1 ps task, got ", num_ps_tasks));
  }
  if (strategy != PlacementStrategy::kRoundRobin &&
      strategy != PlacementStrategy::kGreedyByBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown placement strategy ", static_cast<int>(strategy)));
  }
  return VariablePlacer(num_ps_tasks, strategy);
}

absl::StatusOr<VariablePlacement> VariablePlacer::Place(
    const VariableSpec& spec, const PartitionPolicy& policy) {
  // The only step that can fail comes before any state changes.
  absl::StatusOr<std::vector<RowRange>> ranges = PartitionRows(spec, policy);
  RETURN_IF_ERROR(ranges.status());
  // A ps task holds at most one part of a variable (its parts are keyed by
  // name there), and a second part on the same task would not spread any
  // load: more parts than tasks become one part per task.
  if (static_cast<int>(ranges->size()) > num_ps_tasks()) {
    ranges = PartitionRows(spec, PartitionPolicy::FixedShards(num_ps_tasks()));
    RETURN_IF_ERROR(ranges.status());
  }
  std::vector<bool> task_used(num_ps_tasks(), false);
  const int64_t row_bytes = RowWidth(spec) * DTypeSize(spec.dtype);
  VariablePlacement placement;
  placement.spec = spec;
  placement.parts.reserve(ranges->size());
  for (const RowRange& range : *ranges) {
    int task = 0;
    if (strategy_ == PlacementStrategy::kRoundRobin) {
      task = next_task_;
      next_task_ = (next_task_ + 1) % num_ps_tasks();
    } else {
      // The fewest bytes among tasks without a part of this variable; ties
      // go to the lowest index.
      task = -1;
      for (int t = 0; t < num_ps_tasks(); ++t) {
        if (!task_used[t] &&
            (task < 0 || bytes_per_task_[t] < bytes_per_task_[task])) {
          task = t;
        }
      }
    }
    task_used[task] = true;
    bytes_per_task_[task] += range.size() * row_bytes;
    placement.parts.push_back(VariablePart{task, range});
  }
  return placement;
}

int PartContainingRow(const VariablePlacement& placement, int64_t row) {
  const std::vector<VariablePart>& parts = placement.parts;
  // The first part that ends after `row`; it holds `row` unless `row` is
  // before the first part or past the last.
  auto it = std::upper_bound(
      parts.begin(), parts.end(), row,
      [](int64_t r, const VariablePart& part) { return r < part.rows.end; });
  if (it == parts.end() || row < it->rows.begin) return -1;
  return static_cast<int>(it - parts.begin());
}

absl::Status ValidatePlacement(const VariablePlacement& placement) {
  const VariableSpec& spec = placement.spec;
  RETURN_IF_ERROR(ValidateVariableSpec(spec));
  const std::vector<VariablePart>& parts = placement.parts;
  auto error = [&spec](absl::string_view what) {
    return VariableError(spec, absl::StrCat("invalid placement: ", what));
  };
  if (parts.empty()) return error("no parts");
  const int64_t rows = NumRows(spec);
  int64_t covered = 0;  // parts[0, i) cover [0, covered)
  std::vector<int> tasks;
  for (size_t i = 0; i < parts.size(); ++i) {
    const RowRange& r = parts[i].rows;
    const std::string part = absl::StrCat("part ", i, " ", RowRangeString(r));
    if (parts[i].ps_task < 0) {
      return error(
          absl::StrCat(part, " has ps_task ", parts[i].ps_task, " < 0"));
    }
    if (std::find(tasks.begin(), tasks.end(), parts[i].ps_task) !=
        tasks.end()) {
      return error(absl::StrCat(part, " is on ps task ", parts[i].ps_task,
                                ", which holds another part"));
    }
    tasks.push_back(parts[i].ps_task);
    if (r.begin > r.end) return error(absl::StrCat(part, " is reversed"));
    // Only a 0-row variable may (and must) have an empty part.
    if (r.begin == r.end && !(rows == 0 && parts.size() == 1)) {
      return error(absl::StrCat(part, " is empty"));
    }
    if (r.begin > covered) {
      return error(absl::StrCat("rows ", RowRangeString({covered, r.begin}),
                                " are in no part (gap before ", part, ")"));
    }
    if (r.begin < covered) {
      if (i > 0 && r.begin < parts[i - 1].rows.begin) {
        return error(absl::StrCat("parts are not sorted: ", part,
                                  " starts before part ", i - 1, " ",
                                  RowRangeString(parts[i - 1].rows)));
      }
      return error(absl::StrCat(
          "rows ", RowRangeString({r.begin, std::min(covered, r.end)}),
          " are in both ", part, " and part ", i - 1, " ",
          RowRangeString(parts[i - 1].rows)));
    }
    covered = r.end;
  }
  if (covered != rows) {
    if (covered < rows) {
      return error(absl::StrCat("rows ", RowRangeString({covered, rows}),
                                " are in no part"));
    }
    return error(absl::StrCat("parts cover rows ", RowRangeString({0, covered}),
                              " but the variable has ", rows, " rows"));
  }
  return absl::OkStatus();
}

}  // namespace distrt
