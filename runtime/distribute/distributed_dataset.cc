#include "runtime/distribute/distributed_dataset.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeExamples(
    const InputContext& context, int num_local_replicas,
    std::vector<Example> examples, int64_t global_batch_size,
    const DistributeDatasetOptions& options) {
  ASSIGN_OR_RETURN(int64_t per_replica,
                   context.GetPerReplicaBatchSize(global_batch_size));
  InputPipeline::Options pipeline;
  pipeline.per_replica_batch_size = per_replica;
  pipeline.num_replicas = num_local_replicas;
  pipeline.shuffle = options.shuffle;
  pipeline.seed = options.seed;
  pipeline.num_epochs = options.epochs;
  return InputPipeline::Create(std::move(examples), pipeline);
}

absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeDataset(
    const Strategy& strategy, std::vector<Example> examples,
    int64_t global_batch_size, const DistributeDatasetOptions& options) {
  return DistributeExamples(strategy.input_context(),
                            strategy.num_local_replicas(), std::move(examples),
                            global_batch_size, options);
}

absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeDatasetsFromFunction(
    const Strategy& strategy,
    const std::function<
        absl::StatusOr<std::vector<Example>>(const InputContext&)>& dataset_fn,
    int64_t global_batch_size, const DistributeDatasetOptions& options) {
  const InputContext context = strategy.input_context();
  ASSIGN_OR_RETURN(std::vector<Example> examples, dataset_fn(context));
  return DistributeExamples(context, strategy.num_local_replicas(),
                            std::move(examples), global_batch_size, options);
}

absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeFileShard(
    const InputContext& context, int num_local_replicas,
    std::vector<std::string> files, std::shared_ptr<const RecordFormat> format,
    int64_t global_batch_size, DistributeFilesOptions options) {
  ASSIGN_OR_RETURN(int64_t per_replica,
                   context.GetPerReplicaBatchSize(global_batch_size));
  ASSIGN_OR_RETURN(InputShard shard,
                   ShardInput(std::move(files), context, options.auto_shard));
  if (options.pipeline.log) options.pipeline.log(DescribeShard(shard));
  options.pipeline.per_replica_batch_size = per_replica;
  options.pipeline.num_replicas = num_local_replicas;
  return InputPipeline::Create(std::move(shard), std::move(format),
                               std::move(options.pipeline), options.resume);
}

absl::StatusOr<std::unique_ptr<InputPipeline>> DistributeFiles(
    const Strategy& strategy, std::vector<std::string> files,
    std::shared_ptr<const RecordFormat> format, int64_t global_batch_size,
    DistributeFilesOptions options) {
  return DistributeFileShard(
      strategy.input_context(), strategy.num_local_replicas(), std::move(files),
      std::move(format), global_batch_size, std::move(options));
}

}  // namespace distrt
