#include "runtime/ps/placement.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

VariableSpec Spec(std::string name, std::vector<int64_t> shape,
                  DType dtype = DType::kFloat32) {
  VariableSpec spec;
  spec.name = std::move(name);
  spec.shape = std::move(shape);
  spec.dtype = dtype;
  return spec;
}

std::vector<RowRange> Partition(const VariableSpec& spec,
                                const PartitionPolicy& policy) {
  absl::StatusOr<std::vector<RowRange>> ranges = PartitionRows(spec, policy);
  EXPECT_TRUE(ranges.ok()) << ranges.status();
  return ranges.ok() ? *ranges : std::vector<RowRange>{};
}

// Rows and tasks of each part, as {begin, end, task} triples.
std::vector<std::vector<int64_t>> Layout(const VariablePlacement& p) {
  std::vector<std::vector<int64_t>> out;
  for (const VariablePart& part : p.parts) {
    out.push_back({part.rows.begin, part.rows.end, part.ps_task});
  }
  return out;
}

VariablePlacer MakePlacer(int num_ps_tasks, PlacementStrategy strategy) {
  absl::StatusOr<VariablePlacer> placer =
      VariablePlacer::Create(num_ps_tasks, strategy);
  EXPECT_TRUE(placer.ok()) << placer.status();
  return *std::move(placer);
}

std::vector<std::vector<int64_t>> PlaceLayout(VariablePlacer& placer,
                                              const VariableSpec& spec,
                                              const PartitionPolicy& policy) {
  absl::StatusOr<VariablePlacement> p = placer.Place(spec, policy);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? Layout(*p) : std::vector<std::vector<int64_t>>{};
}

TEST(PartitionRowsTest, NoneIsOneRangeOfAllRows) {
  EXPECT_THAT(Partition(Spec("v", {10, 4}), PartitionPolicy::None()),
              ElementsAre(RowRange{0, 10}));
  // A scalar has one row.
  EXPECT_THAT(Partition(Spec("s", {}), PartitionPolicy::None()),
              ElementsAre(RowRange{0, 1}));
}

TEST(PartitionRowsTest, FixedShardsGivesExtraRowsToTheFirstShards) {
  EXPECT_THAT(Partition(Spec("v", {10}), PartitionPolicy::FixedShards(3)),
              ElementsAre(RowRange{0, 4}, RowRange{4, 7}, RowRange{7, 10}));
  EXPECT_THAT(Partition(Spec("v", {11, 2}), PartitionPolicy::FixedShards(4)),
              ElementsAre(RowRange{0, 3}, RowRange{3, 6}, RowRange{6, 9},
                          RowRange{9, 11}));
  EXPECT_THAT(Partition(Spec("v", {8, 2}), PartitionPolicy::FixedShards(2)),
              ElementsAre(RowRange{0, 4}, RowRange{4, 8}));
}

TEST(PartitionRowsTest, FixedShardsIsCappedByRows) {
  EXPECT_THAT(Partition(Spec("v", {3, 5}), PartitionPolicy::FixedShards(5)),
              ElementsAre(RowRange{0, 1}, RowRange{1, 2}, RowRange{2, 3}));
  EXPECT_THAT(Partition(Spec("s", {}), PartitionPolicy::FixedShards(4)),
              ElementsAre(RowRange{0, 1}));
}

TEST(PartitionRowsTest, ZeroRowsGetOneEmptyShard) {
  const VariableSpec empty = Spec("empty", {0, 4});
  for (const PartitionPolicy& policy :
       {PartitionPolicy::None(), PartitionPolicy::FixedShards(3),
        PartitionPolicy::MinSize(1, 10), PartitionPolicy::MaxSize(1)}) {
    EXPECT_THAT(Partition(empty, policy), ElementsAre(RowRange{0, 0}));
  }
}

// float32 [1000, 64]: 256 bytes a row, 256000 bytes in all.
const VariableSpec& Embedding() {
  static const VariableSpec* spec = new VariableSpec(Spec("emb", {1000, 64}));
  return *spec;
}

TEST(PartitionRowsTest, VariableBytesCountsValuesOnly) {
  EXPECT_EQ(VariableBytes(Embedding()), 256000);
  EXPECT_EQ(VariableBytes(Spec("i", {100, 4}, DType::kInt64)), 3200);
  EXPECT_EQ(VariableBytes(Spec("s", {})), 4);
}

TEST(PartitionRowsTest, MinSizeShardCounts) {
  // TF's defaults (256 KiB, at most 1 shard) never split.
  EXPECT_EQ(Partition(Embedding(), PartitionPolicy::MinSize()).size(), 1);
  // 256000 bytes < 256 KiB: too small to split at all.
  EXPECT_EQ(
      Partition(Embedding(), PartitionPolicy::MinSize(256 << 10, 100)).size(),
      1);
  // 64000 bytes is 250 rows: 4 shards of exactly 64000 bytes.
  EXPECT_THAT(Partition(Embedding(), PartitionPolicy::MinSize(64000, 100)),
              ElementsAre(RowRange{0, 250}, RowRange{250, 500},
                          RowRange{500, 750}, RowRange{750, 1000}));
  // ... unless max_shards says fewer.
  EXPECT_THAT(
      Partition(Embedding(), PartitionPolicy::MinSize(64000, 3)),
      ElementsAre(RowRange{0, 334}, RowRange{334, 667}, RowRange{667, 1000}));
  // 0 is no limit: one row each.
  EXPECT_EQ(Partition(Embedding(), PartitionPolicy::MinSize(256, 0)).size(),
            1000);
  // 100000 bytes needs 391 rows: only 2 shards fit.
  EXPECT_EQ(
      Partition(Embedding(), PartitionPolicy::MinSize(100000, 100)).size(), 2);
}

TEST(PartitionRowsTest, MinSizeKeepsEveryShardAtLeastTheMinimum) {
  // float32 [10, 25]: 100 bytes a row. A 250-byte minimum needs 3 rows a
  // shard, so 3 shards (TF's rule), not 1000 / 250 = 4, which would leave
  // shards of 2 rows (200 bytes).
  EXPECT_THAT(Partition(Spec("v", {10, 25}), PartitionPolicy::MinSize(250, 10)),
              ElementsAre(RowRange{0, 4}, RowRange{4, 7}, RowRange{7, 10}));
}

TEST(PartitionRowsTest, MaxSizeShardCounts) {
  EXPECT_EQ(Partition(Embedding(), PartitionPolicy::MaxSize(256000)).size(), 1);
  // One byte under the whole: 999 rows fit, so 2 shards.
  EXPECT_THAT(Partition(Embedding(), PartitionPolicy::MaxSize(255999)),
              ElementsAre(RowRange{0, 500}, RowRange{500, 1000}));
  EXPECT_EQ(Partition(Embedding(), PartitionPolicy::MaxSize(64000)).size(), 4);
  // 100000 bytes holds 390 rows: 3 shards of at most 334 rows (85504 bytes).
  EXPECT_THAT(
      Partition(Embedding(), PartitionPolicy::MaxSize(100000)),
      ElementsAre(RowRange{0, 334}, RowRange{334, 667}, RowRange{667, 1000}));
  // A cap wins over the size, as in TF: 2 shards of 128000 bytes.
  EXPECT_THAT(Partition(Embedding(), PartitionPolicy::MaxSize(64000, 2)),
              ElementsAre(RowRange{0, 500}, RowRange{500, 1000}));
  // A row is never split: rows larger than the maximum get a shard each.
  EXPECT_EQ(Partition(Embedding(), PartitionPolicy::MaxSize(1)).size(), 1000);
  // int64 [100, 4]: 32 bytes a row, 31 rows in 1000 bytes: 4 shards.
  EXPECT_EQ(Partition(Spec("i", {100, 4}, DType::kInt64),
                      PartitionPolicy::MaxSize(1000))
                .size(),
            4);
}

TEST(PartitionRowsTest, MaxSizeKeepsEveryShardAtMostTheMaximum) {
  // float32 [10, 25]: 100 bytes a row; 2 rows fit in 250 bytes, so 5 shards,
  // not ceil(1000 / 250) = 4, which would make shards of 300 bytes.
  EXPECT_EQ(
      Partition(Spec("v", {10, 25}), PartitionPolicy::MaxSize(250)).size(), 5);
}

TEST(PartitionRowsTest, ZeroByteRowsAreNotSplitBySize) {
  const VariableSpec spec = Spec("v", {10, 0});
  EXPECT_EQ(Partition(spec, PartitionPolicy::MinSize(1, 0)).size(), 1);
  EXPECT_EQ(Partition(spec, PartitionPolicy::MaxSize(1)).size(), 1);
  EXPECT_EQ(Partition(spec, PartitionPolicy::FixedShards(2)).size(), 2);
}

TEST(PartitionRowsTest, BadPoliciesNameTheVariable) {
  const VariableSpec spec = Spec("dense/kernel", {10, 4});
  absl::StatusOr<std::vector<RowRange>> r =
      PartitionRows(spec, PartitionPolicy::FixedShards(0));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "variable \"dense/kernel\": fixed-shards partitioning needs "
            "num_shards >= 1, got 0");

  r = PartitionRows(spec, PartitionPolicy::MinSize(0, 1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "variable \"dense/kernel\": min-size partitioning needs "
            "min_shard_bytes >= 1, got 0");

  r = PartitionRows(spec, PartitionPolicy::MaxSize(-5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "variable \"dense/kernel\": max-size partitioning needs "
            "max_shard_bytes >= 1, got -5");

  for (const PartitionPolicy& policy : {PartitionPolicy::MinSize(1024, -1),
                                        PartitionPolicy::MaxSize(1024, -1)}) {
    r = PartitionRows(spec, policy);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "variable \"dense/kernel\": partitioning needs max_shards >= 0 "
              "(0: no limit), got -1");
  }
}

TEST(PartitionRowsTest, FieldsOfOtherKindsAreIgnored) {
  PartitionPolicy policy = PartitionPolicy::FixedShards(2);
  policy.max_shard_bytes = -1;
  policy.max_shards = -1;
  EXPECT_EQ(Partition(Spec("v", {10}), policy).size(), 2);
}

TEST(PartitionRowsTest, InvalidSpecIsRefused) {
  absl::StatusOr<std::vector<RowRange>> r =
      PartitionRows(Spec("bad", {-1, 4}), PartitionPolicy::None());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("\"bad\""));
}

TEST(PlacementStrategyTest, NamesRoundTrip) {
  for (PlacementStrategy s :
       {PlacementStrategy::kRoundRobin, PlacementStrategy::kGreedyByBytes}) {
    absl::StatusOr<PlacementStrategy> parsed =
        ParsePlacementStrategy(PlacementStrategyName(s));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(PlacementStrategyName(PlacementStrategy::kRoundRobin),
            "round_robin");
  EXPECT_EQ(PlacementStrategyName(PlacementStrategy::kGreedyByBytes),
            "greedy_bytes");
  absl::StatusOr<PlacementStrategy> bad = ParsePlacementStrategy("random");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "unknown placement strategy \"random\" (known: round_robin, "
            "greedy_bytes)");
}

TEST(VariablePlacerTest, CreateRefusesNoTasks) {
  for (int n : {0, -3}) {
    absl::StatusOr<VariablePlacer> placer =
        VariablePlacer::Create(n, PlacementStrategy::kRoundRobin);
    EXPECT_EQ(placer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(placer.status().message(), HasSubstr("at least 1 ps task"));
  }
  absl::StatusOr<VariablePlacer> placer =
      VariablePlacer::Create(3, PlacementStrategy::kGreedyByBytes);
  ASSERT_TRUE(placer.ok()) << placer.status();
  EXPECT_EQ(placer->num_ps_tasks(), 3);
  EXPECT_EQ(placer->strategy(), PlacementStrategy::kGreedyByBytes);
}

TEST(VariablePlacerTest, RoundRobinTakesTurnsPerPart) {
  VariablePlacer placer = MakePlacer(2, PlacementStrategy::kRoundRobin);
  using L = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(PlaceLayout(placer, Spec("a", {10, 4}), PartitionPolicy::None()),
            (L{{0, 10, 0}}));
  // Three shards asked of two tasks: one part per task.
  EXPECT_EQ(
      PlaceLayout(placer, Spec("b", {9, 4}), PartitionPolicy::FixedShards(3)),
      (L{{0, 5, 1}, {5, 9, 0}}));
  EXPECT_EQ(PlaceLayout(placer, Spec("c", {}), PartitionPolicy::None()),
            (L{{0, 1, 1}}));
  EXPECT_EQ(
      PlaceLayout(placer, Spec("d", {4}), PartitionPolicy::FixedShards(2)),
      (L{{0, 2, 0}, {2, 4, 1}}));
  EXPECT_EQ(PlaceLayout(placer, Spec("e", {7}), PartitionPolicy::None()),
            (L{{0, 7, 0}}));
  // a: 160, b: 80 + 64, c: 4, d: 8 + 8, e: 28 bytes.
  EXPECT_THAT(placer.bytes_per_task(),
              ElementsAre(160 + 64 + 8 + 28, 80 + 4 + 8));
}

TEST(VariablePlacerTest, GreedyPutsEachPartOnTheLightestTask) {
  VariablePlacer placer = MakePlacer(3, PlacementStrategy::kGreedyByBytes);
  using L = std::vector<std::vector<int64_t>>;
  // All empty: the lowest index wins the tie.
  EXPECT_EQ(PlaceLayout(placer, Spec("a", {100, 10}), PartitionPolicy::None()),
            (L{{0, 100, 0}}));  // 4000 bytes -> {4000, 0, 0}
  EXPECT_EQ(PlaceLayout(placer, Spec("b", {50, 10}), PartitionPolicy::None()),
            (L{{0, 50, 1}}));  // 2000 -> {4000, 2000, 0}
  // Two parts of 1200 bytes: the first goes to the lightest task, the second
  // to the lightest of the others (a task holds one part of a variable).
  EXPECT_EQ(
      PlaceLayout(placer, Spec("c", {60, 10}), PartitionPolicy::FixedShards(2)),
      (L{{0, 30, 2}, {30, 60, 1}}));  // -> {4000, 3200, 1200}
  EXPECT_EQ(PlaceLayout(placer, Spec("d", {50, 10}), PartitionPolicy::None()),
            (L{{0, 50, 2}}));  // 2000 -> {4000, 3200, 3200}
  // Tie between tasks 1 and 2: the lower index.
  EXPECT_EQ(PlaceLayout(placer, Spec("e", {1}), PartitionPolicy::None()),
            (L{{0, 1, 1}}));
  EXPECT_THAT(placer.bytes_per_task(), ElementsAre(4000, 3204, 3200));
}

TEST(VariablePlacerTest, SameCallsGiveSamePlacement) {
  const std::vector<std::pair<VariableSpec, PartitionPolicy>> model = {
      {Spec("emb", {1000, 64}), PartitionPolicy::MaxSize(64000)},
      {Spec("dense/kernel", {64, 32}), PartitionPolicy::None()},
      {Spec("dense/bias", {32}), PartitionPolicy::None()},
      {Spec("counts", {500, 3}, DType::kInt64),
       PartitionPolicy::FixedShards(3)},
      {Spec("step", {}, DType::kInt64), PartitionPolicy::None()},
      {Spec("emb2", {333, 16}), PartitionPolicy::MinSize(1000, 4)},
  };
  for (PlacementStrategy strategy :
       {PlacementStrategy::kRoundRobin, PlacementStrategy::kGreedyByBytes}) {
    VariablePlacer a = MakePlacer(3, strategy);
    VariablePlacer b = MakePlacer(3, strategy);
    for (const auto& [spec, policy] : model) {
      EXPECT_EQ(PlaceLayout(a, spec, policy), PlaceLayout(b, spec, policy))
          << spec.name << " with " << PlacementStrategyName(strategy);
    }
    EXPECT_EQ(a.bytes_per_task(), b.bytes_per_task());
  }
}

TEST(VariablePlacerTest, RefusedVariableDoesNotShiftLaterOnes) {
  for (PlacementStrategy strategy :
       {PlacementStrategy::kRoundRobin, PlacementStrategy::kGreedyByBytes}) {
    VariablePlacer with_error = MakePlacer(2, strategy);
    VariablePlacer without = MakePlacer(2, strategy);
    PlaceLayout(with_error, Spec("a", {10}), PartitionPolicy::None());
    PlaceLayout(without, Spec("a", {10}), PartitionPolicy::None());
    absl::StatusOr<VariablePlacement> bad =
        with_error.Place(Spec("b", {10}), PartitionPolicy::FixedShards(0));
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(PlaceLayout(with_error, Spec("c", {10}), PartitionPolicy::None()),
              PlaceLayout(without, Spec("c", {10}), PartitionPolicy::None()));
  }
}

TEST(VariablePlacerTest, PlacementKeepsTheSpecAndIsValid) {
  VariablePlacer placer = MakePlacer(4, PlacementStrategy::kRoundRobin);
  absl::StatusOr<VariablePlacement> p =
      placer.Place(Embedding(), PartitionPolicy::FixedShards(7));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->spec.name, "emb");
  EXPECT_EQ(p->spec.shape, Embedding().shape);
  EXPECT_EQ(p->parts.size(), 4);  // 7 asked, one per ps task
  EXPECT_TRUE(ValidatePlacement(*p).ok()) << ValidatePlacement(*p);
}

VariablePlacement TenRowsInThree() {
  VariablePlacement p;
  p.spec = Spec("w", {10, 2});
  p.parts = {{0, {0, 4}}, {1, {4, 7}}, {2, {7, 10}}};
  return p;
}

TEST(PartContainingRowTest, FindsThePart) {
  const VariablePlacement p = TenRowsInThree();
  const std::vector<std::pair<int64_t, int>> cases = {
      {0, 0},
      {3, 0},
      {4, 1},
      {6, 1},
      {7, 2},
      {9, 2},
      {10, -1},
      {-1, -1},
      {std::numeric_limits<int64_t>::max(), -1},
      {std::numeric_limits<int64_t>::min(), -1}};
  for (const auto& [row, part] : cases) {
    EXPECT_EQ(PartContainingRow(p, row), part) << "row " << row;
  }
}

TEST(PartContainingRowTest, NoRowInAnEmptyVariable) {
  VariablePlacement p;
  p.spec = Spec("empty", {0});
  p.parts = {{0, {0, 0}}};
  EXPECT_EQ(PartContainingRow(p, 0), -1);
  EXPECT_TRUE(ValidatePlacement(p).ok());
}

TEST(ValidatePlacementTest, AcceptsAValidPlacement) {
  EXPECT_TRUE(ValidatePlacement(TenRowsInThree()).ok());
}

TEST(ValidatePlacementTest, CatchesAGap) {
  VariablePlacement p = TenRowsInThree();
  p.parts[1].rows.begin = 5;
  absl::Status s = ValidatePlacement(p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "variable \"w\": invalid placement: rows [4, 5) are in no part "
            "(gap before part 1 [5, 7))");

  p = TenRowsInThree();
  p.parts[2].rows.end = 9;
  s = ValidatePlacement(p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "variable \"w\": invalid placement: rows [9, 10) are in no part");

  p = TenRowsInThree();
  p.parts[0].rows.begin = 1;
  EXPECT_THAT(ValidatePlacement(p).message(),
              HasSubstr("rows [0, 1) are in no part"));
}

TEST(ValidatePlacementTest, CatchesAnOverlap) {
  VariablePlacement p = TenRowsInThree();
  p.parts[1].rows.begin = 3;
  absl::Status s = ValidatePlacement(p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "variable \"w\": invalid placement: rows [3, 4) are in both part 1 "
            "[3, 7) and part 0 [0, 4)");

  p = TenRowsInThree();
  p.parts[2].rows.end = 12;
  s = ValidatePlacement(p);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "variable \"w\": invalid placement: parts cover rows [0, 12) but "
            "the variable has 10 rows");
}

TEST(ValidatePlacementTest, CatchesOtherMistakes) {
  VariablePlacement p = TenRowsInThree();
  std::swap(p.parts[0], p.parts[1]);
  EXPECT_THAT(ValidatePlacement(p).message(), HasSubstr("gap"));

  p = TenRowsInThree();
  p.parts = {{0, {0, 4}}, {1, {4, 7}}, {2, {2, 10}}};
  EXPECT_THAT(ValidatePlacement(p).message(),
              HasSubstr("parts are not sorted: part 2 [2, 10) starts before "
                        "part 1 [4, 7)"));

  p = TenRowsInThree();
  p.parts[2].ps_task = 0;
  EXPECT_THAT(ValidatePlacement(p).message(),
              HasSubstr("part 2 [7, 10) is on ps task 0, which holds another "
                        "part"));

  p = TenRowsInThree();
  p.parts[1].ps_task = -1;
  EXPECT_THAT(ValidatePlacement(p).message(),
              HasSubstr("part 1 [4, 7) has ps_task -1 < 0"));

  p = TenRowsInThree();
  p.parts.insert(p.parts.begin() + 1, VariablePart{3, {4, 4}});
  EXPECT_THAT(ValidatePlacement(p).message(),
              HasSubstr("part 1 [4, 4) is empty"));

  p = TenRowsInThree();
  p.parts.clear();
  EXPECT_EQ(ValidatePlacement(p).message(),
            "variable \"w\": invalid placement: no parts");
}

TEST(HashShardOfTest, StaysInRangeAndIsDeterministic) {
  const std::vector<int64_t> ids = {0,
                                    1,
                                    -1,
                                    42,
                                    1 << 20,
                                    std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min()};
  for (int shards : {1, 2, 3, 7, 1000}) {
    for (int64_t id : ids) {
      const int shard = HashShardOf(id, shards);
      EXPECT_GE(shard, 0);
      EXPECT_LT(shard, shards);
      EXPECT_EQ(HashShardOf(id, shards), shard);
    }
  }
  EXPECT_EQ(HashShardOf(5, 0), -1);
  EXPECT_EQ(HashShardOf(5, -2), -1);
}

// Checkpoints depend on these: if this test fails, the function changed and
// existing checkpoints of hash tables would be restored onto the wrong ps
// tasks. Expected values computed independently (Python) from the splitmix64
// finalizer.
TEST(HashShardOfTest, IsStableForever) {
  EXPECT_EQ(HashShardOf(0, 1000), 0);
  EXPECT_EQ(HashShardOf(1, 1000), 789);
  EXPECT_EQ(HashShardOf(2, 1000), 730);
  EXPECT_EQ(HashShardOf(3, 1000), 856);
  EXPECT_EQ(HashShardOf(12345, 1000), 873);
  EXPECT_EQ(HashShardOf(-1, 1000), 67);
  EXPECT_EQ(HashShardOf(std::numeric_limits<int64_t>::min(), 1000), 50);
  EXPECT_EQ(HashShardOf(std::numeric_limits<int64_t>::max(), 7), 3);
  EXPECT_EQ(HashShardOf(1, 7), 6);
  EXPECT_EQ(HashShardOf(3, 3), 2);
}

TEST(HashShardOfTest, SpreadsConsecutiveIdsEvenly) {
  constexpr int kIds = 100000;
  constexpr int kShards = 3;
  std::vector<int> counts(kShards, 0);
  for (int64_t id = 0; id < kIds; ++id) ++counts[HashShardOf(id, kShards)];
  const double even = static_cast<double>(kIds) / kShards;
  for (int shard = 0; shard < kShards; ++shard) {
    EXPECT_NEAR(counts[shard], even, 0.02 * even) << "shard " << shard;
  }
}

}  // namespace
}  // namespace distrt
