#ifndef DISTRT_RUNTIME_DISTRIBUTE_DISTRIBUTED_DATASET_H_
#define DISTRT_RUNTIME_DISTRIBUTE_DISTRIBUTED_DATASET_H_

// A dataset distributed by a strategy (TF's
// strategy.experimental_distribute_dataset and
// distribute_datasets_from_function): each step gives every local replica
// its share of the global batch, as the strategy's InputContext splits it
// (global batch / num_replicas_in_sync examples each, over every worker
// under MultiWorkerMirroredStrategy). Examples come from this worker's
// input pipeline: shard the files with ShardInput(files,
// strategy.input_context()) first, or let DistributeDatasetsFromFunction
// hand the context to a function that reads its shard. DistributeFiles
// streams the files instead (tf.data's files -> interleave -> parse ->
// shuffle -> batch -> prefetch; see input_pipeline.h): this worker's shard
// of them by the options' AutoShardPolicy, never held in memory whole.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/distribute/strategy.h"
#include "runtime/input/example.h"
#include "runtime/input/input_context.h"
#include "runtime/input/input_pipeline.h"
#include "runtime/input/input_position.h"
#include "runtime/input/input_replication_mode.h"
#include "runtime/input/record_reader.h"

namespace distrt {

struct DistributeDatasetOptions {
  InputReplicationMode replication = InputReplicationMode::kPerWorker;
  // Epochs before the pipeline ends (OUT_OF_RANGE); 0 repeats forever.
  int64_t epochs = 1;
  // A new pseudo-random order each epoch, a function of (seed, epoch).
  bool shuffle = false;
  uint64_t seed = 0;
};

// Steps of this worker's local replicas' batches over `examples`.
// INVALID_ARGUMENT when `global_batch_size` does not split evenly over the
// replicas in sync, saying which sizes would.
absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeDataset(
    const Strategy& strategy, std::vector<Example> examples,
    int64_t global_batch_size, const DistributeDatasetOptions& options = {});

// The same over what `dataset_fn` returns for the strategy's InputContext
// (this worker's pipeline id and count, the replicas in sync).
absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeDatasetsFromFunction(
    const Strategy& strategy,
    const std::function<
        absl::StatusOr<std::vector<Example>>(const InputContext&)>& dataset_fn,
    int64_t global_batch_size, const DistributeDatasetOptions& options = {});

// What both do, for a context of the caller's (e.g. a process evaluating
// alone, whose batch splits over its own replicas only).
absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeExamples(
    const InputContext& context, int num_local_replicas,
    std::vector<Example> examples, int64_t global_batch_size,
    const DistributeDatasetOptions& options = {});

struct DistributeFilesOptions {
  InputReplicationMode replication = InputReplicationMode::kPerWorker;
  // How the files are divided among the input workers (input_context.h).
  AutoShardPolicy auto_shard = AutoShardPolicy::kAuto;
  // The pipeline's options (epochs, shuffle and its buffer, seed,
  // interleave, parse threads, prefetch, bad input, log). Its
  // per_replica_batch_size and num_replicas are set here from the global
  // batch size and the strategy.
  InputPipeline::Options pipeline;
  // Continue from this position of an earlier pipeline over the same
  // files and options (see InputPipeline::Create); it need not outlive the
  // call. nullptr: from the start.
  const InputPosition* resume = nullptr;
};

// Steps of this worker's local replicas' batches, streamed from its shard
// of `files` (any order: they are sorted) in `format`. The shard chosen is
// logged once through options.pipeline.log ("FILE sharding: pipeline 1 of
// 4 reads 3 of 12 files"). INVALID_ARGUMENT when `global_batch_size` does
// not split evenly over the replicas in sync, when there are no files, or
// for FILE sharding with fewer files than input workers; the errors of
// InputPipeline::Create.
absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeFiles(
    const Strategy& strategy, std::vector<std::string> files,
    std::shared_ptr<const RecordFormat> format, int64_t global_batch_size,
    DistributeFilesOptions options = {});

// The same for a context of the caller's (as DistributeExamples).
absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeFileShard(
    const InputContext& context, int num_local_replicas,
    std::vector<std::string> files, std::shared_ptr<const RecordFormat> format,
    int64_t global_batch_size, DistributeFilesOptions options = {});

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_DISTRIBUTED_DATASET_H_
