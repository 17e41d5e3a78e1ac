#include "bench/checkpoint_delta_bench.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/ps_checkpoint.h"
#include "runtime/ps/hash_table_set.h"
#include "runtime/ps/variable_store.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt::bench {
namespace {

constexpr int64_t kDim = 16;
constexpr int64_t kBatch = 100000;

HashEmbeddingSpec TableSpec() {
  HashEmbeddingSpec spec;
  spec.name = "bench/checkpoint/table";
  spec.dim = kDim;
  spec.initializer.kind = InitializerSpec::Kind::kTruncatedNormal;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.01f;
  return spec;
}

// Pushes a gradient to every id of `ids`, in batches.
absl::Status PushAll(HashEmbeddingTable& table, const std::vector<int64_t>& ids,
                     int64_t step) {
  const std::vector<float> grads(kBatch * kDim, 1e-3f);
  for (size_t at = 0; at < ids.size(); at += kBatch) {
    const size_t n = std::min<size_t>(kBatch, ids.size() - at);
    RETURN_IF_ERROR(table.Push(absl::MakeConstSpan(ids).subspan(at, n),
                               absl::MakeConstSpan(grads).subspan(0, n * kDim),
                               SparseIds::kDistinct, step));
  }
  return absl::OkStatus();
}

// Seconds to save and commit shard 0 of 1 of `step`.
absl::StatusOr<double> TimeSave(const VariableStore& store,
                                const HashTableSet& tables,
                                const std::string& root, int64_t step,
                                const SaveShardOptions& options,
                                SavedShardInfo* saved) {
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(*saved, SaveShard(store, tables, root, step, 0, 1, options));
  RETURN_IF_ERROR(CommitCheckpoint(root, step, 1, 0).status());
  return absl::ToDoubleSeconds(absl::Now() - start);
}

}  // namespace

absl::Status RunCheckpointBench(const BenchConfig& config,
                                BenchReport* report) {
  report->BeginFamily(
      "checkpoint: a delta save against a full save of a hash table",
      "seconds: ratio < 1 is better (the delta takes that share of a full "
      "save's time)");
  const int64_t rows = config.quick ? 200000 : 2000000;
  const int64_t changed = rows / 100;
  VariableStore store;
  HashTableSet tables;
  ASSIGN_OR_RETURN(HashEmbeddingTable * table, tables.Create(TableSpec()));
  std::vector<int64_t> ids(rows);
  for (int64_t i = 0; i < rows; ++i) ids[i] = i * 7919 + 13;  // spread
  RETURN_IF_ERROR(PushAll(*table, ids, 1));
  const std::string root = JoinPath(config.scratch_dir, "checkpoint_delta");

  SaveShardOptions full;
  full.mark = true;
  SavedShardInfo full_saved;
  ASSIGN_OR_RETURN(const double full_seconds,
                   TimeSave(store, tables, root, 1, full, &full_saved));

  // 1% of the rows, at random, updated once.
  std::mt19937_64 random(7);
  std::shuffle(ids.begin(), ids.end(), random);
  ids.resize(changed);
  RETURN_IF_ERROR(PushAll(*table, ids, 2));
  SaveShardOptions delta;
  delta.mark = true;
  delta.delta.emplace();
  delta.delta->set_previous(CheckpointDirName(1));
  delta.delta->set_base(CheckpointDirName(1));
  SavedShardInfo delta_saved;
  ASSIGN_OR_RETURN(const double delta_seconds,
                   TimeSave(store, tables, root, 2, delta, &delta_saved));

  const std::string shape =
      absl::StrCat(rows / 1000, "k_rows/dim", kDim, "_adagrad");
  report->Note(absl::StrCat(
      "one table of ", rows, " rows, dim ", kDim,
      ", Adagrad (values and a slot), in one process; full save ",
      full_saved.bytes, " bytes (", full_saved.table_rows_written,
      " rows), delta after ", changed, " rows changed: ", delta_saved.bytes,
      " bytes (", delta_saved.table_rows_written,
      " rows); each timed from the save to its commit"));
  report->Add(absl::StrCat("checkpoint/save/delta_1pct_changed/", shape),
              delta_seconds, "s", "full_save", full_seconds);
  return RemoveDirectoryTree(root);
}

}  // namespace distrt::bench
