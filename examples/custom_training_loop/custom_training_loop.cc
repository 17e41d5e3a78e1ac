// A training loop of its own on the library (docs/library.md): it resolves
// the cluster from TF_CONFIG, makes the strategy the cluster asks for
// (parameter servers, multi-worker mirrored, or mirrored alone), and fits
// y = 3 x0 - 2 x1 + 0.5 with its own model (line_model.h, a Model of the
// public interface): each replica computes its gradient on its share of the
// batch, the replicas all-reduce it, and the strategy applies it where
// the variables live. With --checkpoint_dir the chief restores the latest
// checkpoint first (the other workers then start from its values) and
// checkpoints at the end, as TF's CheckpointManager; it writes the weights
// it ends with to --out.
//
//   TF_CONFIG=... custom_training_loop --steps=200 --out=/tmp/weights.txt \
//       --checkpoint_dir=/tmp/ckpt
//
// It uses the public headers only: distribute/ (the strategy factory, the
// set-up of the variables, the checkpoints, the chief's handshake with ps
// tasks), the strategies' Strategy / ReplicaContext, the context functions
// and runtime/device.

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "examples/custom_training_loop/line_model.h"
#include "job/job_variables.h"
#include "job/make_strategy.h"
#include "job/ps_coordination.h"
#include "runtime/cluster/cluster_resolver.h"
#include "runtime/cluster/tf_config_cluster_resolver.h"
#include "runtime/distribute/distribution_context.h"
#include "runtime/distribute/strategy.h"
#include "runtime/input/batch.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/training/model_state.h"
#include "runtime/training/model_variables.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/status_macros.h"

ABSL_FLAG(int, steps, 200, "Training steps.");
ABSL_FLAG(int, global_batch_size, 64, "Examples per step, over all replicas.");
ABSL_FLAG(int, replicas, 2, "CPU replicas in this process.");
ABSL_FLAG(std::string, out, "", "Where the chief writes the final weights.");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "The chief restores the latest checkpoint here and saves one at "
          "the end; none if empty.");

namespace distrt::example {
namespace {

constexpr float kTrueW[2] = {3.0f, -2.0f};
constexpr float kTrueB = 0.5f;

// One replica's share of a step's batch, drawn from a stream that depends
// on the step and the replica's global id, so that no two replicas of any
// worker see the same examples.
Batch ReplicaBatch(int64_t size, int step, int replica) {
  std::mt19937 rng(static_cast<uint32_t>(step * 1000 + replica));
  std::uniform_real_distribution<float> uniform(-1, 1);
  Batch batch;
  batch.size = size;
  batch.num_dense = 2;
  batch.offsets.assign(size + 1, 0);
  for (int64_t i = 0; i < size; ++i) {
    const float x0 = uniform(rng), x1 = uniform(rng);
    batch.dense.push_back(x0);
    batch.dense.push_back(x1);
    batch.labels.push_back(kTrueW[0] * x0 + kTrueW[1] * x1 + kTrueB);
  }
  return batch;
}

absl::Status Train() {
  LocalDevicesOptions device_options;
  device_options.num_cpu_devices = absl::GetFlag(FLAGS_replicas);
  device_options.use_gpus = false;
  ASSIGN_OR_RETURN(LocalDevices devices, CreateLocalDevices(device_options));

  TFConfigClusterResolver resolver;
  MakeStrategyOptions options;
  options.log = [](absl::string_view line) {
    std::printf("%s\n", std::string(line).c_str());
  };
  ASSIGN_OR_RETURN(ResolvedStrategy resolved,
                   MakeStrategy(resolver, devices.pointers(), options));
  Strategy& strategy = *resolved.strategy;
  // with strategy.scope():
  ASSIGN_OR_RETURN(Strategy::Scope scope, strategy.scope());
  if (&GetStrategy() != &strategy || !InCrossReplicaContext()) {
    return absl::InternalError("the scope did not set the strategy");
  }

  // The model's variables, wherever the strategy keeps them. With ps tasks
  // the other workers find the ones the chief made (and restored) rather
  // than racing it; with --checkpoint_dir the chief restores the latest.
  const LineModel model(/*learning_rate=*/0.1f);
  JobVariablesOptions setup;
  setup.ps = resolved.ps_client.get();
  setup.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  setup.log = [](absl::string_view line) {
    std::printf("%s\n", std::string(line).c_str());
  };
  ASSIGN_OR_RETURN(std::unique_ptr<JobVariables> job,
                   SetUpJobVariables(strategy, model, setup));
  ModelVariables& variables = job->variables;
  DistributedVariable* w = variables.variable(0);
  DistributedVariable* b = variables.variable(1);
  std::optional<PsCoordination> coordination;
  if (resolved.ps_client != nullptr) {
    coordination.emplace(resolved.ps_client.get(), PsCoordination::Options());
  }
  // Multi-worker mirrored: every worker's mirrors start from the chief's.
  if (resolved.workers != nullptr) {
    RETURN_IF_ERROR(BroadcastModelState(resolved.workers->collective(),
                                        variables, /*root=*/0));
  }
  ASSIGN_OR_RETURN(Tensor one, Tensor::FromValues<int64_t>({1}, {}));
  const int global_batch = absl::GetFlag(FLAGS_global_batch_size);
  ASSIGN_OR_RETURN(
      int64_t per_replica,
      strategy.input_context().GetPerReplicaBatchSize(global_batch));
  std::printf("worker %d of %d: %d replicas in sync, %lld examples each\n",
              strategy.input_context().input_pipeline_id,
              strategy.input_context().num_input_pipelines,
              strategy.num_replicas_in_sync(),
              static_cast<long long>(per_replica));

  // Each local replica's global id (replica_id_in_sync_group), as the
  // replicas saw them.
  std::vector<int> replica_ids(strategy.num_local_replicas(), -1);
  float last_loss = 0;
  for (int step = 0; step < absl::GetFlag(FLAGS_steps); ++step) {
    ASSIGN_OR_RETURN(
        PerReplica<Tensor> losses,
        strategy.RunWithResults(
            [&](ReplicaContext& context) -> absl::StatusOr<Tensor> {
              if (GetReplicaContext() != &context) {
                return absl::InternalError("not in this replica's context");
              }
              ASSIGN_OR_RETURN(std::vector<Tensor> values,
                               context.ReadMany({w, b}));
              std::vector<VariableSlice> slices(2);
              for (int i = 0; i < 2; ++i) {
                const auto flat = values[i].flat<float>();
                slices[i].dense.assign(flat.begin(), flat.end());
              }
              const int replica = context.replica_id_in_sync_group();
              replica_ids[context.local_replica_id()] = replica;
              ModelStepResult result;
              RETURN_IF_ERROR(model.Compute(
                  ReplicaBatch(per_replica, step, replica), slices,
                  /*with_gradients=*/true, &result));
              const float loss = static_cast<float>(result.loss_sum);
              // The gradient of the global batch's mean loss: the model's
              // sums over the global batch size, then summed over replicas.
              std::vector<float> grads = result.gradients[0].dense;
              grads.push_back(result.gradients[1].dense[0]);
              for (float& g : grads) g /= static_cast<float>(global_batch);
              ASSIGN_OR_RETURN(Tensor grad, Tensor::FromFloats(grads, {3}));
              RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, grad));
              const auto g = grad.flat<float>();
              RETURN_IF_ERROR(context.ApplyGradients(
                  {w, b}, {g.subspan(0, 2), g.subspan(2, 1)}, {}, nullptr,
                  GradientAggregation::kAlreadyAggregated));
              // Every replica's example count, merged in cross-replica context.
              ASSIGN_OR_RETURN(int64_t examples,
                               context.MergeCall<int64_t>(
                                   per_replica,
                                   [](Strategy&, PerReplica<int64_t>& counts)
                                       -> absl::StatusOr<int64_t> {
                                     int64_t total = 0;
                                     for (int64_t c : counts.Unwrap())
                                       total += c;
                                     return total;
                                   }));
              if (examples != per_replica * context.num_local_replicas()) {
                return absl::InternalError("MergeCall lost a replica's count");
              }
              return Tensor::FromFloats({loss}, {1});
            }));
    // The mean loss over every replica in sync (a collective under
    // multi-worker mirrored: every worker reduces in step).
    ASSIGN_OR_RETURN(Tensor total, strategy.Reduce(ReduceOp::kSum, losses));
    last_loss =
        total.flat<float>()[0] /
        static_cast<float>(per_replica * strategy.num_replicas_in_sync());
    if (step % 50 == 0) std::printf("step %d: loss %.6f\n", step, last_loss);
    RETURN_IF_ERROR(strategy.AssignAdd(variables.global_step(), one));
  }

  // With ps tasks, the chief reads the weights and checkpoints them once
  // every other worker has made its last update.
  if (coordination.has_value()) {
    if (strategy.should_init()) {
      RETURN_IF_ERROR(coordination->WaitForWorkersDone(
          strategy.input_context().num_input_pipelines - 1));
    } else {
      RETURN_IF_ERROR(coordination->ReportWorkerDone());
    }
  }
  std::printf("replica ids in sync: %s\n",
              absl::StrJoin(replica_ids, " ").c_str());
  ASSIGN_OR_RETURN(Tensor wv, strategy.ReadVar(*w));
  ASSIGN_OR_RETURN(Tensor bv, strategy.ReadVar(*b));
  const std::string weights =
      absl::StrFormat("%.4f %.4f %.4f", wv.flat<float>()[0],
                      wv.flat<float>()[1], bv.flat<float>()[0]);
  std::printf("final: loss %.6f weights %s\n", last_loss, weights.c_str());
  if (job->checkpoints.has_value()) {
    ASSIGN_OR_RETURN(int64_t global_step, variables.ReadGlobalStep(strategy));
    RETURN_IF_ERROR(job->checkpoints->SaveFinal(global_step).status());
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  if (strategy.should_checkpoint() && !out.empty()) {
    const std::string text = weights + "\n";
    RETURN_IF_ERROR(WriteFileAtomically(out, {text}));
    std::printf("chief wrote %s\n", out.c_str());
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace distrt::example

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::Status status = distrt::example::Train();
  if (!status.ok()) {
    std::fprintf(stderr, "custom_training_loop: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
