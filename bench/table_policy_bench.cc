#include "bench/table_policy_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"
#include "bench/zipf_ids.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/initializer.h"
#include "runtime/ps/table_policy.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

// Issue 48's traffic: Zipf(1.1), 100k ids a batch, a 10M-id vocabulary.
constexpr int64_t kVocabulary = 10000000;
constexpr double kExponent = 1.1;
constexpr int64_t kBatch = 100000;
constexpr int64_t kDim = 16;
// Not the transport cases' seed: a stream of its own.
constexpr uint64_t kSeed = 0x7ab1e5eedULL;
constexpr float kGradient = 1e-3f;

using Clock = std::chrono::steady_clock;

using Setup = TablePolicyBenchSetup;

// A table and the time its timed steps took.
struct TableRun {
  std::unique_ptr<HashEmbeddingTable> table;
  double pull_seconds = 0;
  double push_seconds = 0;

  double seconds() const { return pull_seconds + push_seconds; }
};

absl::StatusOr<TableRun> MakeTable(absl::string_view name,
                                   const TablePolicy& policy) {
  HashEmbeddingSpec spec;
  spec.name = std::string(name);
  spec.dim = kDim;
  // Never exactly 0 in all of a row: a pulled row of zeros is the unknown
  // row of an id the policy has not admitted.
  spec.initializer.kind = InitializerSpec::Kind::kTruncatedNormal;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.05f;
  spec.policy = policy;
  TableRun run;
  ASSIGN_OR_RETURN(run.table, HashEmbeddingTable::Create(spec));
  return run;
}

TablePolicy BoundedPolicy(const Setup& setup) {
  TablePolicy policy;
  if (setup.min_count > 0) {
    policy.admission.kind = AdmissionKind::kMinCount;
    policy.admission.min_count = setup.min_count;
    policy.admission.sketch_width = setup.sketch_width;
    policy.admission.unknown = UnknownRow::kZeros;
  }
  policy.eviction.max_rows = setup.max_rows;
  if (setup.ttl_steps > 0) policy.eviction.ttl_steps = setup.ttl_steps;
  return policy;
}

std::string DescribePolicy(const Setup& setup) {
  std::string text =
      setup.min_count > 0
          ? absl::StrFormat("min_count %d (count-min sketch 4 x %d, %d MiB)",
                            setup.min_count, setup.sketch_width,
                            (16 * setup.sketch_width) >> 20)
          : "every id admitted";
  absl::StrAppend(&text, ", max_rows ",
                  setup.max_rows > 0 ? absl::StrCat(setup.max_rows) : "none",
                  ", ttl_steps ",
                  setup.ttl_steps > 0 ? absl::StrCat(setup.ttl_steps) : "none");
  return text;
}

// One worker step on `run`'s table: the batch's rows pulled into `out`,
// then their gradients pushed at global step `step`; timed into `run` when
// `timed`.
absl::Status Step(TableRun& run, absl::Span<const int64_t> ids,
                  absl::Span<const float> grads, absl::Span<float> out,
                  int64_t step, bool timed) {
  const size_t values = ids.size() * kDim;
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(run.table->Pull(ids, out.first(values)));
  const Clock::time_point pulled = Clock::now();
  RETURN_IF_ERROR(
      run.table->Push(ids, grads.first(values), SparseIds::kDistinct, step));
  const Clock::time_point pushed = Clock::now();
  if (timed) {
    run.pull_seconds += std::chrono::duration<double>(pulled - start).count();
    run.push_seconds += std::chrono::duration<double>(pushed - pulled).count();
  }
  return absl::OkStatus();
}

// The ids of `ids` whose pulled row (in `out`) is not all zeros: those the
// policy table holds a row of.
std::vector<int64_t> IdsWithRows(absl::Span<const int64_t> ids,
                                 absl::Span<const float> out) {
  std::vector<int64_t> held;
  held.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* row = out.data() + i * kDim;
    if (std::any_of(row, row + kDim, [](float v) { return v != 0.0f; })) {
      held.push_back(ids[i]);
    }
  }
  return held;
}

// The tables: `unbounded` without a policy (every id admitted, nothing
// evicted), `bounded` with it, and, while timed, `same_rows`: without a
// policy, a copy of `bounded` when timing starts that then gets, each step,
// only the ids `bounded` held a row of. `bounded` against `unbounded` is
// what a policy changes in all (it skips the rows it does not admit);
// against `same_rows`, what its bookkeeping costs for the same rows.
struct Tables {
  TableRun unbounded;
  TableRun bounded;
  TableRun same_rows;
  bool with_same_rows = false;
  bool policy_table_only = false;
};

// Draws, deduplicates and applies batches to the tables for steps
// [first, first + steps), alternating whether `unbounded` or `bounded`
// goes first so that a busy machine's drift hits them alike (`same_rows`
// right after `bounded`, whose pull says which ids it gets); stops early
// once `done(step)`. Returns the step after the last one run and adds the
// distinct ids to `distinct_ids`.
template <typename Done>
absl::StatusOr<int64_t> RunSteps(ZipfIds& zipf, Tables& t, int64_t first,
                                 int64_t steps, bool timed, Done done,
                                 int64_t* distinct_ids) {
  std::vector<int64_t> draws(kBatch);
  const std::vector<float> grads(kBatch * kDim, kGradient);
  std::vector<float> out(kBatch * kDim);
  int64_t step = first;
  for (; step < first + steps && !done(step); ++step) {
    zipf.Fill(absl::MakeSpan(draws));
    const std::vector<int64_t> ids = DistinctIds(draws);
    *distinct_ids += ids.size();
    for (int turn = 0; turn < 2; ++turn) {
      if ((turn == 0) == (step % 2 == 0)) {
        if (t.policy_table_only) continue;
        RETURN_IF_ERROR(
            Step(t.unbounded, ids, grads, absl::MakeSpan(out), step, timed));
        continue;
      }
      RETURN_IF_ERROR(
          Step(t.bounded, ids, grads, absl::MakeSpan(out), step, timed));
      if (!t.with_same_rows) continue;
      // Step leaves the pulled rows in `out`: the push does not touch it.
      const std::vector<int64_t> held = IdsWithRows(ids, out);
      RETURN_IF_ERROR(
          Step(t.same_rows, held, grads, absl::MakeSpan(out), step, timed));
    }
  }
  return step;
}

std::string Ms(double seconds) {
  return absl::StrFormat("%.2f ms", seconds * 1e3);
}

std::string PerStep(const TableRun& run, int64_t steps) {
  return absl::StrCat("pull ", Ms(run.pull_seconds / steps), " + push ",
                      Ms(run.push_seconds / steps), " = ",
                      Ms(run.seconds() / steps));
}

void NoteShares(const Tables& t, int64_t timed_steps, BenchReport* report) {
  report->Note(absl::StrFormat(
      "policy bookkeeping, per timed step: with the policy %s; without a "
      "policy, the same ids %s; without, the same rows as the policy "
      "table's %s",
      PerStep(t.bounded, timed_steps), PerStep(t.unbounded, timed_steps),
      PerStep(t.same_rows, timed_steps)));
  const double bounded = t.bounded.seconds();
  const double bookkeeping = (bounded - t.same_rows.seconds()) / bounded;
  const double overall = (bounded - t.unbounded.seconds()) / bounded;
  report->Note(absl::StrFormat(
      "policy bookkeeping, share of the policy table's step, (with - "
      "without) / with: against the same rows without a policy (the "
      "bookkeeping alone) %.1f%%, %s 10%%; against the table without a "
      "policy, which holds every id seen, %.1f%%, %s 10%% (negative: the "
      "rows the policy does not admit save more than its bookkeeping costs)",
      bookkeeping * 100, bookkeeping < 0.10 ? "under" : "NOT under",
      overall * 100, overall < 0.10 ? "under" : "NOT under"));
}

void NoteCounters(const Setup& setup, int64_t warmup_steps, int64_t timed_steps,
                  int64_t timed_distinct, const Tables& t,
                  const HashTableCounters& unbounded_before,
                  const HashTableCounters& before,
                  const HashTableCounters& after, BenchReport* report) {
  const int64_t unknown = after.unknown_lookups - before.unknown_lookups;
  report->Note(absl::StrFormat(
      "policy bookkeeping, while timed (%d steps after %d of warm-up, %.0f "
      "distinct ids a step): the policy table admitted %d rows, evicted %d "
      "by TTL and %d by max_rows, answered %d of %d pulled ids with the "
      "unknown row (%.1f%%) and dropped %d pushes; it held %d rows before "
      "and %d after (max_rows %d); the table without a policy grew from %d "
      "to %d rows, the same-rows one from %d to %d",
      timed_steps, warmup_steps,
      static_cast<double>(timed_distinct) / timed_steps,
      after.admitted - before.admitted,
      after.evicted_by_ttl - before.evicted_by_ttl,
      after.evicted_by_capacity - before.evicted_by_capacity, unknown,
      timed_distinct, 100.0 * unknown / timed_distinct,
      after.dropped_pushes - before.dropped_pushes, before.rows, after.rows,
      setup.max_rows, unbounded_before.rows, t.unbounded.table->num_rows(),
      before.rows, t.same_rows.table->num_rows()));
}

void AddFigures(const Tables& t, int64_t timed_distinct, BenchReport* report) {
  const std::string suffix =
      absl::StrCat("/hash_zipf1.1/dim", kDim, "_adagrad/10M_vocab/100k_ids");
  // Every table's rows/s counts the step's distinct ids, so that each ratio
  // is that of the times of the same steps.
  const double rows = static_cast<double>(timed_distinct);
  report->Add("sparse/policy/pull+push" + suffix, rows / t.bounded.seconds(),
              "rows/s", "no_policy", rows / t.unbounded.seconds());
  for (const char* op : {"pull", "push", "pull+push"}) {
    const absl::string_view name = op;
    auto seconds = [name](const TableRun& run) {
      return name == "pull"   ? run.pull_seconds
             : name == "push" ? run.push_seconds
                              : run.seconds();
    };
    report->Add(absl::StrCat("sparse/policy_bookkeeping/", op, suffix),
                rows / seconds(t.bounded), "rows/s", "no_policy_same_rows",
                rows / seconds(t.same_rows));
  }
}

// Until the policy table is at max_rows and past its TTL (or
// max_warmup_steps); returns the step after the last.
absl::StatusOr<int64_t> WarmUp(const Setup& setup, ZipfIds& zipf, Tables& t,
                               BenchReport* report) {
  int64_t distinct = 0;
  ASSIGN_OR_RETURN(const int64_t next,
                   RunSteps(
                       zipf, t, 1, setup.max_warmup_steps, /*timed=*/false,
                       [&](int64_t step) {
                         // Without max_rows: all of max_warmup_steps.
                         return step > setup.ttl_steps && setup.max_rows > 0 &&
                                t.bounded.table->num_rows() >= setup.max_rows;
                       },
                       &distinct));
  if (setup.max_rows > 0 && t.bounded.table->num_rows() < setup.max_rows) {
    report->Note(absl::StrCat("policy bookkeeping: the policy table held ",
                              t.bounded.table->num_rows(), " rows after ",
                              next - 1, " warm-up steps, below its max_rows ",
                              setup.max_rows, ": timed below capacity"));
  }
  return next;
}

}  // namespace

TablePolicyBenchSetup DefaultTablePolicyBenchSetup(bool quick) {
  TablePolicyBenchSetup setup;
  setup.max_rows = quick ? 200000 : 1000000;
  setup.ttl_steps = quick ? 40 : 200;
  setup.max_warmup_steps = quick ? 200 : 800;
  setup.timed_steps = quick ? 20 : 200;
  return setup;
}

absl::Status RunTablePolicyBench(const BenchConfig& config,
                                 BenchReport* report) {
  return RunTablePolicyBench(DefaultTablePolicyBenchSetup(config.quick),
                             report);
}

absl::Status RunTablePolicyBench(const Setup& setup, BenchReport* report) {
  report->Note(absl::StrFormat(
      "policy bookkeeping (in-process, no RPC): Zipf(%.1f) batches of %d "
      "draws over %d ids, deduplicated as the worker does, pulled then "
      "pushed (the step as global_step) into hash tables of dim %d, Adagrad, "
      "truncated normal: with %s, and without a policy; alternating which "
      "goes first",
      kExponent, kBatch, kVocabulary, kDim, DescribePolicy(setup)));
  ASSIGN_OR_RETURN(ZipfIds zipf,
                   ZipfIds::Create(kVocabulary, kExponent, kSeed));
  Tables t;
  t.policy_table_only = setup.policy_table_only;
  ASSIGN_OR_RETURN(t.unbounded, MakeTable("bench/policy/none", TablePolicy()));
  ASSIGN_OR_RETURN(t.bounded,
                   MakeTable("bench/policy/bounded", BoundedPolicy(setup)));
  ASSIGN_OR_RETURN(t.same_rows,
                   MakeTable("bench/policy/same_rows", TablePolicy()));
  ASSIGN_OR_RETURN(const int64_t warmed, WarmUp(setup, zipf, t, report));

  if (!setup.policy_table_only) {
    RETURN_IF_ERROR(t.same_rows.table->Replace(t.bounded.table->Export()));
    t.with_same_rows = true;
  }
  const HashTableCounters unbounded_before = t.unbounded.table->counters();
  const HashTableCounters before = t.bounded.table->counters();
  int64_t timed_distinct = 0;
  ASSIGN_OR_RETURN(const int64_t end,
                   RunSteps(
                       zipf, t, warmed, setup.timed_steps, /*timed=*/true,
                       [](int64_t) { return false; }, &timed_distinct));
  const int64_t timed_steps = end - warmed;
  const HashTableCounters after = t.bounded.table->counters();

  if (setup.policy_table_only) {
    report->Note(absl::StrCat("policy table only, per timed step: ",
                              PerStep(t.bounded, timed_steps)));
    return absl::OkStatus();
  }
  AddFigures(t, timed_distinct, report);
  NoteShares(t, timed_steps, report);
  NoteCounters(setup, warmed - 1, timed_steps, timed_distinct, t,
               unbounded_before, before, after, report);
  return absl::OkStatus();
}

}  // namespace distrt::bench
