#ifndef DISTRT_RUNTIME_PS_PLACEMENT_H_
#define DISTRT_RUNTIME_PS_PLACEMENT_H_

// Placement: which parameter-server task holds which rows of which variable.
//
// This is computed on the client side (every worker and the chief), not
// negotiated with the servers: given the same variables in the same order
// and the same policies, every worker computes the same layout, as with
// TensorFlow's ParameterServerStrategy. Everything here is therefore
// deterministic and depends only on its arguments (and, for VariablePlacer,
// on the sequence of earlier Place calls) — no clocks, no randomness, no
// process state.
//
// A variable is split by rows (its first dimension; a scalar has one row)
// into contiguous partitions according to a PartitionPolicy, then each
// partition ("part") is given to one ps task by a VariablePlacer. Hash
// tables, whose rows are ids not known in advance, are sharded per id by
// HashShardOf instead.
//
// Sizes count only the variable's values (rows * row width * dtype size),
// not optimizer slots, which are proportional to them anyway.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/util/splitmix64.h"

namespace distrt {

// How to split one variable's rows into partitions, after TensorFlow's
// tf.distribute.experimental.partitioners. Only the fields of the chosen
// kind are read (and validated); build one with the static constructors.
//
// Shard counts are always capped by the number of rows and are at least 1,
// and rows are split as TF splits them (see PartitionRows). Sizes are
// measured in whole rows, so "at least / at most N bytes" holds up to the
// granularity of a row.
struct PartitionPolicy {
  enum class Kind {
    // One partition holding every row.
    kNone,
    // Exactly `num_shards` partitions (FixedShardsPartitioner).
    kFixedShards,
    // As many partitions as possible with each at least `min_shard_bytes`,
    // but at most `max_shards` (MinSizePartitioner). A variable smaller than
    // `min_shard_bytes` stays whole.
    kMinSize,
    // As few partitions as possible with each at most `max_shard_bytes`,
    // but at most `max_shards` (MaxSizePartitioner). A cap can force shards
    // above `max_shard_bytes`, as in TF; so does a single row larger than
    // `max_shard_bytes`, since a row is never split.
    kMaxSize,
  };

  Kind kind = Kind::kNone;
  // kFixedShards: must be >= 1.
  int num_shards = 1;
  // kMinSize: must be >= 1. 256 KiB is TF's default.
  int64_t min_shard_bytes = 256 << 10;
  // kMaxSize: must be >= 1.
  int64_t max_shard_bytes = 0;
  // kMinSize and kMaxSize: the most partitions; 0 means no limit, negative
  // is invalid. Note the field's default (0, no limit) differs from TF's
  // MinSizePartitioner default (1); MinSize() below follows TF.
  int max_shards = 0;

  static PartitionPolicy None() { return PartitionPolicy(); }
  static PartitionPolicy FixedShards(int num_shards) {
    PartitionPolicy p;
    p.kind = Kind::kFixedShards;
    p.num_shards = num_shards;
    return p;
  }
  // TF's defaults: 256 KiB, and a single shard (so MinSize() alone never
  // partitions; pass max_shards to allow it).
  static PartitionPolicy MinSize(int64_t min_shard_bytes = 256 << 10,
                                 int max_shards = 1) {
    PartitionPolicy p;
    p.kind = Kind::kMinSize;
    p.min_shard_bytes = min_shard_bytes;
    p.max_shards = max_shards;
    return p;
  }
  // max_shards 0: no limit (TF's default, None).
  static PartitionPolicy MaxSize(int64_t max_shard_bytes, int max_shards = 0) {
    PartitionPolicy p;
    p.kind = Kind::kMaxSize;
    p.max_shard_bytes = max_shard_bytes;
    p.max_shards = max_shards;
    return p;
  }
};

// The values' size in bytes: NumRows * RowWidth * DTypeSize. Only
// meaningful for a spec that passes ValidateVariableSpec.
int64_t VariableBytes(const VariableSpec& spec);

// Splits [0, NumRows(spec)) into contiguous, non-empty, increasing ranges,
// one per shard, the number of shards given by `policy`. When the rows do not
// divide evenly, the first (rows % shards) ranges get one extra row (TF's
// convention): 10 rows in 3 shards are [0, 4), [4, 7), [7, 10). A variable
// with 0 rows gets the single empty range [0, 0).
//
// INVALID_ARGUMENT naming the variable when `spec` fails ValidateVariableSpec
// or when a field of `policy` that its kind uses is out of range.
absl::StatusOr<std::vector<RowRange>> PartitionRows(
    const VariableSpec& spec, const PartitionPolicy& policy);

enum class PlacementStrategy {
  // Each part goes to the next ps task in turn: TF's default
  // (ParameterServerStrategy's round-robin variable placement).
  kRoundRobin,
  // Each part goes to the ps task with the fewest bytes placed so far; ties
  // go to the lowest task index.
  kGreedyByBytes,
};

// "round_robin", "greedy_bytes".
absl::string_view PlacementStrategyName(PlacementStrategy strategy);
// The inverse of PlacementStrategyName; INVALID_ARGUMENT listing the known
// names otherwise.
absl::StatusOr<PlacementStrategy> ParsePlacementStrategy(
    absl::string_view name);

// One partition of a variable and the ps task that holds it.
struct VariablePart {
  int ps_task = 0;
  RowRange rows;
};

struct VariablePlacement {
  VariableSpec spec;
  // Sorted by rows, contiguous, together covering [0, NumRows(spec)); see
  // ValidatePlacement. A 0-row variable has one part with rows [0, 0).
  std::vector<VariablePart> parts;
};

// Assigns the parts of variables to ps tasks, remembering what it placed
// earlier: the result of a Place call depends on every call before it, so
// workers that create the same variables in the same order (with the same
// policies) agree. It does not remember names: placing a variable twice
// places it twice.
//
// A ps task holds at most one part of each variable (parts are keyed by the
// variable's name on the task), so a policy asking for more parts than there
// are ps tasks gets one part per task (rows split as FixedShards would);
// greedy placement picks among the tasks without a part of the variable.
//
// Not thread-safe: a client places its variables from one thread, in model
// order, which is what makes the order the same on every worker.
class VariablePlacer {
 public:
  // INVALID_ARGUMENT when num_ps_tasks < 1 or `strategy` is not one of the
  // enumerators.
  static absl::StatusOr<VariablePlacer> Create(int num_ps_tasks,
                                               PlacementStrategy strategy);

  // Partitions `spec` with `policy` and assigns each part a task. Errors are
  // PartitionRows's; after an error the placer is unchanged, so a refused
  // variable does not shift the placement of later ones.
  absl::StatusOr<VariablePlacement> Place(const VariableSpec& spec,
                                          const PartitionPolicy& policy);

  int num_ps_tasks() const { return static_cast<int>(bytes_per_task_.size()); }
  PlacementStrategy strategy() const { return strategy_; }
  // Bytes placed on each task so far (kept for both strategies; greedy
  // placement decides by it). Size num_ps_tasks().
  const std::vector<int64_t>& bytes_per_task() const { return bytes_per_task_; }

 private:
  VariablePlacer(int num_ps_tasks, PlacementStrategy strategy)
      : strategy_(strategy), bytes_per_task_(num_ps_tasks, 0) {}

  PlacementStrategy strategy_;
  // kRoundRobin: the task that gets the next part.
  int next_task_ = 0;
  std::vector<int64_t> bytes_per_task_;
};

// The index into placement.parts of the part holding `row`, or -1 when `row`
// is outside [0, NumRows). Binary search; `placement` must be valid (see
// ValidatePlacement).
int PartContainingRow(const VariablePlacement& placement, int64_t row);

// OK when `placement.parts` is non-empty, every part's range is non-empty
// (but for the single [0, 0) part of a 0-row variable), the parts are sorted,
// contiguous and cover exactly [0, NumRows(spec)), and every ps_task >= 0.
// Otherwise INVALID_ARGUMENT naming the variable and the first problem, e.g.
// the rows of a gap or an overlap. For a placement rebuilt from what servers
// report; the caller checks ps_task against the cluster's size.
absl::Status ValidatePlacement(const VariablePlacement& placement);

// The shard (in [0, num_shards)) that holds hash-table id `id`: a 64-bit
// mixer (the splitmix64 finalizer) followed by a modulo, so consecutive ids
// spread evenly. -1 when num_shards < 1.
//
// STABLE FOREVER: this decides which ps task restores which rows of a hash
// table from a checkpoint, and checkpoints outlive binaries. Changing the
// function (or its constants) silently moves ids to tasks that do not hold
// them; a new scheme needs a new function and a version in the checkpoint.
// Inline: clients call it for every id of every hash table pull and push.
inline int HashShardOf(int64_t id, int num_shards) {
  if (num_shards < 1) return -1;
  const uint64_t z = SplitMix64Finalize(static_cast<uint64_t>(id));
  return static_cast<int>(z % static_cast<uint64_t>(num_shards));
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_PLACEMENT_H_
