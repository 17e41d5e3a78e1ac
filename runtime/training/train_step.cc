#include "runtime/training/train_step.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/tensor/host_floats.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

using Tensors = std::shared_ptr<const std::vector<Tensor>>;

// Puts read[k] into values[index[k]].dense, in host memory, where the
// model takes values from (a mirrored variable's copy on a GPU comes back
// from there).
absl::Status StoreDenseValues(const std::vector<Tensor>& read,
                              absl::Span<const int> index,
                              std::vector<VariableSlice>& values) {
  for (size_t k = 0; k < index.size(); ++k) {
    std::vector<float>& dense = values[index[k]].dense;
    dense.resize(read[k].num_elements());
    RETURN_IF_ERROR(read[k].allocator()->CopyToHost(
        read[k].raw_data(), dense.data(), read[k].bytes()));
  }
  return absl::OkStatus();
}

// The whole values of the float32 variables `variables[i]` for the model's
// variables `indices[i]` as this replica computes with them, into
// values[indices[i]].dense, and the replica's `rows`: all read at once (on
// parameter servers, the small variables of each ps task in one request,
// and the rows' requests sent with them). Replicas sharing one copy
// (central storage, parameter servers) read a whole variable once, on
// replica 0, and share it: one read per step, not one per replica. Every
// replica makes the same collectives (none, or one MergeCall), whatever
// fails. Without `share_reads` (read-ahead, off the replica's thread) each
// replica reads every variable itself, and there is no collective.
absl::Status ReadValues(ReplicaContext& context,
                        absl::Span<const DistributedVariable* const> variables,
                        absl::Span<const int> indices,
                        absl::Span<const ReplicaContext::RowsToRead> rows,
                        bool share_reads, std::vector<VariableSlice>& values) {
  const int n = context.num_local_replicas();
  std::vector<const DistributedVariable*> own, shared;
  std::vector<int> own_index, shared_index;
  for (size_t i = 0; i < variables.size(); ++i) {
    if (!share_reads || variables[i]->num_copies() == n || n == 1) {
      own.push_back(variables[i]);
      own_index.push_back(indices[i]);
    } else {
      shared.push_back(variables[i]);
      shared_index.push_back(indices[i]);
    }
  }
  auto store = [&values](const std::vector<Tensor>& read,
                         const std::vector<int>& index) {
    return StoreDenseValues(read, index, values);
  };
  // The same on every replica: whether to join the MergeCall.
  if (!shared.empty()) {
    absl::StatusOr<Tensors> read = context.MergeCall<int>(
        0, [&](Strategy&, PerReplica<int>&) -> absl::StatusOr<Tensors> {
          // Replica 0's copies (the only one of each), on its thread.
          ASSIGN_OR_RETURN(std::vector<Tensor> copies,
                           context.ReadMany(shared));
          return std::make_shared<const std::vector<Tensor>>(std::move(copies));
        });
    RETURN_IF_ERROR(read.status());
    RETURN_IF_ERROR(store(**read, shared_index));
  }
  if (!own.empty() || !rows.empty()) {
    ASSIGN_OR_RETURN(std::vector<Tensor> read, context.ReadMany(own, rows));
    RETURN_IF_ERROR(store(read, own_index));
  }
  return absl::OkStatus();
}

// One slice per model variable, with its sparse ids (moved from `ids`).
std::vector<VariableSlice> SlicesWithIds(
    std::vector<std::vector<int64_t>> ids) {
  std::vector<VariableSlice> values(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) values[i].ids = std::move(ids[i]);
  return values;
}

// What a step reads (ReadStepValues): whole dense variables (`dense`, each
// going to values[dense_index[k]]) and the rows of the ids of row-sparse
// ones (`rows`, into their slices). Hash embeddings' rows are sized, not
// read: the step pulls them itself.
struct StepReads {
  std::vector<const DistributedVariable*> dense;
  std::vector<int> dense_index;
  std::vector<ReplicaContext::RowsToRead> rows;
};

StepReads PlanStepReads(const Model& model, const ModelVariables& variables,
                        std::vector<VariableSlice>& values) {
  StepReads reads;
  for (int i = 0; i < variables.size(); ++i) {
    const ModelVariable& v = model.variables()[i];
    if (v.kind == ModelVariable::Kind::kDense) {
      reads.dense.push_back(variables.variable(i));
      reads.dense_index.push_back(i);
      continue;
    }
    VariableSlice& slice = values[i];
    slice.rows.resize(slice.ids.size() * v.row_width());
    if (v.kind == ModelVariable::Kind::kRowSparse) {
      reads.rows.push_back(
          {variables.variable(i), slice.ids, absl::MakeSpan(slice.rows)});
    }
  }
  return reads;
}

// Reads what a step computes with into `values` (one slice per model
// variable, with its ids), in one read (ReadValues).
absl::Status ReadStepValues(ReplicaContext& context, const Model& model,
                            const ModelVariables& variables, bool share_reads,
                            std::vector<VariableSlice>& values) {
  StepReads reads = PlanStepReads(model, variables, values);
  return ReadValues(context, reads.dense, reads.dense_index, reads.rows,
                    share_reads, values);
}

// The model's sparse ids of `batch`, one list per variable.
absl::Status BatchIds(const Model& model, const Batch& batch,
                      std::vector<std::vector<int64_t>>& ids) {
  RETURN_IF_ERROR(model.SparseIds(batch, &ids));
  if (ids.size() != model.variables().size()) {
    return absl::InternalError(absl::StrCat(
        "model ", model.name(), " gave sparse ids for ", ids.size(),
        " variables, it has ", model.variables().size()));
  }
  return absl::OkStatus();
}

// Reads the values the replica's batch needs (or takes what `read_ahead`,
// when not null, read for it during the step before), computes on the
// replica's device, and returns what the model gave (dense gradients in
// `dense_gradients` when given).
absl::Status ComputeReplica(ReplicaContext& context, const Model& model,
                            const ModelVariables& variables, const Batch& batch,
                            bool with_gradients,
                            const DenseGradientBuffer* dense_gradients,
                            ReadAhead* read_ahead, ModelStepResult* result) {
  std::vector<std::vector<int64_t>> ids;
  // Every replica must reach the collectives below, so a bad batch is
  // reported only after the reads (which may be collectives too).
  const absl::Status batch_ok = BatchIds(model, batch, ids);
  if (!batch_ok.ok()) ids.assign(model.variables().size(), {});

  std::optional<std::vector<VariableSlice>> read_before;
  if (read_ahead != nullptr) {
    read_before = read_ahead->Take(context.local_replica_id(), ids);
  }
  std::vector<VariableSlice> values;
  if (read_before.has_value()) {
    values = *std::move(read_before);
  } else {
    values = SlicesWithIds(std::move(ids));
    // With read-ahead no replica shares a read: whether one took its
    // values from the read-ahead must not change the collectives.
    RETURN_IF_ERROR(ReadStepValues(context, model, variables,
                                   /*share_reads=*/read_ahead == nullptr,
                                   values));
  }
  for (int i = 0; i < variables.size(); ++i) {
    if (model.variables()[i].kind != ModelVariable::Kind::kHashEmbedding) {
      continue;
    }
    VariableSlice& slice = values[i];
    RETURN_IF_ERROR(
        variables.hash_table(i)->Pull(slice.ids, absl::MakeSpan(slice.rows)));
  }
  RETURN_IF_ERROR(batch_ok);
  return model.ComputeOn(*context.device(), batch, values, with_gradients,
                         dense_gradients, result);
}

// Starts reading, on `read_ahead`'s thread for this replica, what the
// replica's next step (of `next`) will compute with. A batch whose ids the
// model refuses starts nothing: its step reads, and reports the error.
void StartReadAhead(const ReplicaContext& context, const Model& model,
                    const ModelVariables& variables, const Batch& next,
                    ReadAhead& read_ahead) {
  std::vector<std::vector<int64_t>> ids;
  if (!BatchIds(model, next, ids).ok()) return;
  // The context is copied: the read outlives this step's Strategy::Run. It
  // reads through the strategy, which outlives the ReadAhead.
  read_ahead.Start(context.local_replica_id(), SlicesWithIds(std::move(ids)),
                   [context = ReplicaContext(context), &model,
                    &variables](std::vector<VariableSlice>& values) mutable {
                     return ReadStepValues(context, model, variables,
                                           /*share_reads=*/false, values);
                   });
}

// This step's updates (of gradients already aggregated) and the next
// step's reads (of `next`'s ids) at once (ReplicaContext::
// ApplyGradientsThenRead: on parameter servers, one round trip instead of
// two), the reads handed to `read_ahead` for the next step.
// A batch whose ids the model refuses is not read: its step reads, and
// reports the error.
absl::Status ApplyGradientsThenReadAhead(
    ReplicaContext& context, const Model& model,
    const ModelVariables& variables, const Batch& next,
    absl::Span<DistributedVariable* const> dense,
    absl::Span<const absl::Span<const float>> means,
    absl::Span<const ReplicaContext::SparseUpdate> sparse,
    ReplicaContext::AddUpdate* add, ReadAhead& read_ahead) {
  std::vector<std::vector<int64_t>> ids;
  if (!BatchIds(model, next, ids).ok()) {
    return context.ApplyGradients(dense, means, sparse, add,
                                  GradientAggregation::kAlreadyAggregated);
  }
  std::vector<VariableSlice> values = SlicesWithIds(std::move(ids));
  const StepReads reads = PlanStepReads(model, variables, values);
  ASSIGN_OR_RETURN(std::vector<Tensor> read,
                   context.ApplyGradientsThenRead(
                       dense, means, sparse, add, reads.dense, reads.rows,
                       GradientAggregation::kAlreadyAggregated));
  RETURN_IF_ERROR(StoreDenseValues(read, reads.dense_index, values));
  read_ahead.Put(context.local_replica_id(), std::move(values));
  return absl::OkStatus();
}

// What TrainStep's replica function takes: the step's model and
// variables, and this replica's batch (and the next step's, with
// read-ahead).
struct ReplicaStepInputs {
  const Model& model;
  const ModelVariables& variables;
  const Batch& batch;
  ReadAhead* read_ahead;    // null without read-ahead
  const Batch* next_batch;  // null when no step follows
  int64_t global_step;      // as the caller knows it; -1: unknown
};

// What it gives back for StepResult.
struct ReplicaStepOutputs {
  std::vector<float> predictions;  // this replica's
  int64_t examples = 0;            // over all replicas
  double loss_sum = 0;             // over all replicas
  std::optional<int64_t> global_step;
};

// One buffer on the replica's device for the step's one all-reduce: every
// dense gradient (the model writes them there, at gradients.offsets), then
// the loss and the example count (at `totals`). On GPUs it is reduced
// there (NCCL), and only the reduction comes to the host, once.
struct PackedStep {
  Tensor packed;
  DenseGradientBuffer gradients;
  int64_t totals = 0;  // where the loss sum is (the dense gradients' size)
};

absl::StatusOr<PackedStep> PackStep(absl::Span<const ModelVariable> specs,
                                    Device& device) {
  PackedStep step;
  step.gradients.offsets.assign(specs.size(), 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].kind != ModelVariable::Kind::kDense) continue;
    step.gradients.offsets[i] = step.totals;
    step.totals += NumRows(specs[i].spec) * RowWidth(specs[i].spec);
  }
  ASSIGN_OR_RETURN(
      step.packed,
      Tensor::Create(DType::kFloat32, {step.totals + 2}, device.allocator()));
  step.gradients.base = static_cast<float*>(step.packed.raw_data());
  return step;
}

// INTERNAL unless the model gave one gradient per variable.
absl::Status CheckGradientCount(const Model& model,
                                const ModelStepResult& result) {
  if (result.gradients.size() == model.variables().size()) {
    return absl::OkStatus();
  }
  return absl::InternalError(
      absl::StrCat("model ", model.name(), " gave ", result.gradients.size(),
                   " gradients for ", model.variables().size(), " variables"));
}

// Adds this replica's loss and example count to `step` and sums it over
// every replica: the step's one download (none on CPUs), where the mean
// gradients are then made (they never go back to the device). The totals
// go to `out`.
absl::StatusOr<HostFloats> AllReduceStep(ReplicaContext& context,
                                         double loss_sum, int64_t examples,
                                         PackedStep& step,
                                         ReplicaStepOutputs& out) {
  const float totals[2] = {static_cast<float>(loss_sum),
                           static_cast<float>(examples)};
  RETURN_IF_ERROR(step.packed.allocator()->CopyFromHost(
      totals, step.gradients.base + step.totals, sizeof(totals)));
  RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, step.packed));
  ASSIGN_OR_RETURN(HostFloats reduced, HostFloats::Edit(step.packed));
  const absl::Span<const float> values = reduced.values();
  out.loss_sum = values[step.totals];
  out.examples = static_cast<int64_t>(values[step.totals + 1]);
  return reduced;
}

// A step's gradients as ApplyGradients takes them, the same on every
// replica: the dense mean gradients (pointing into the reduced buffer) and
// the row-sparse ones; `gathered` holds every sparse kind's gathered
// gradient by model variable (null for dense ones), hash embeddings' too.
struct StepGradients {
  std::vector<DistributedVariable*> dense;
  std::vector<absl::Span<const float>> means;
  std::vector<ReplicaContext::SparseUpdate> sparse;
  std::vector<std::shared_ptr<const SparseGradient>> gathered;
};

// Scales the reduced dense gradients in `reduced` (laid out as `buffer`)
// by `scale` (one over the step's examples) and gathers the sparse ones of
// `grads` (moved from), scaled, over the replicas (the same collectives on
// every replica).
absl::StatusOr<StepGradients> MeanGradients(
    ReplicaContext& context, const Model& model,
    const ModelVariables& variables, const DenseGradientBuffer& buffer,
    absl::Span<float> reduced, float scale, std::vector<VariableSlice>& grads) {
  const std::vector<ModelVariable>& specs = model.variables();
  StepGradients step;
  step.gathered.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const ModelVariable& v = specs[i];
    if (v.kind == ModelVariable::Kind::kDense) {
      absl::Span<float> mean = reduced.subspan(
          buffer.offsets[i], NumRows(v.spec) * RowWidth(v.spec));
      for (float& g : mean) g *= scale;
      step.dense.push_back(variables.variable(i));
      step.means.push_back(mean);
      continue;
    }
    SparseGradient mine;
    mine.ids = std::move(grads[i].ids);
    mine.rows = std::move(grads[i].rows);
    for (float& g : mine.rows) g *= scale;
    ASSIGN_OR_RETURN(step.gathered[i], context.AllGather(std::move(mine)));
    if (v.kind == ModelVariable::Kind::kRowSparse) {
      step.sparse.push_back({variables.variable(i), step.gathered[i].get()});
    }
  }
  return step;
}

bool HasHashTables(const Model& model) {
  for (const ModelVariable& v : model.variables()) {
    if (v.kind == ModelVariable::Kind::kHashEmbedding) return true;
  }
  return false;
}

// Applies `grads` (already aggregated) with `add` (the global step's
// increment, when not null), and with read-ahead starts the reads of the
// next step's batch beside them. Where the updates go on in the
// background, only once they have started: that call first waits for the
// step before's, so the reads lack at most this step's (started before,
// they could lack the step before's too).
//
// With one replica and the updates in the foreground, the reads go with
// the updates instead (one round trip on parameter servers; the reads then
// see the updates, where they go in one bundle to each ps task). Several
// replicas read on their read-ahead threads: reading after the update on
// the replica's own thread would wait for every replica's.
absl::Status ApplyStepGradients(ReplicaContext& context,
                                const ReplicaStepInputs& in,
                                const StepGradients& grads,
                                ReplicaContext::AddUpdate* add) {
  const bool read_next = in.read_ahead != nullptr && in.next_batch != nullptr;
  const bool updates_in_background = context.strategy().updates_in_background();
  if (read_next && !updates_in_background &&
      context.num_local_replicas() == 1) {
    return ApplyGradientsThenReadAhead(context, in.model, in.variables,
                                       *in.next_batch, grads.dense, grads.means,
                                       grads.sparse, add, *in.read_ahead);
  }
  if (read_next && !updates_in_background) {
    StartReadAhead(context, in.model, in.variables, *in.next_batch,
                   *in.read_ahead);
  }
  RETURN_IF_ERROR(
      context.ApplyGradients(grads.dense, grads.means, grads.sparse, add,
                             GradientAggregation::kAlreadyAggregated));
  if (read_next && updates_in_background) {
    StartReadAhead(context, in.model, in.variables, *in.next_batch,
                   *in.read_ahead);
  }
  return absl::OkStatus();
}

// Pushes the hash embeddings' gathered gradients, with the global step
// the step began at (by which the tables age their rows). Hash tables have
// one copy: replica 0 pushes, the others wait so that nobody reads the
// table before the push is in.
absl::Status PushHashTables(ReplicaContext& context,
                            const ReplicaStepInputs& in,
                            const StepGradients& grads) {
  const std::vector<ModelVariable>& specs = in.model.variables();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].kind != ModelVariable::Kind::kHashEmbedding) continue;
    if (context.local_replica_id() == 0) {
      const SparseGradient& grad = *grads.gathered[i];
      RETURN_IF_ERROR(in.variables.hash_table(i)->PushAtStep(
          grad.ids, grad.rows, in.global_step));
    }
    RETURN_IF_ERROR(context.Barrier());
  }
  return absl::OkStatus();
}

// Replica function of TrainStep: computes, all-reduces, and applies the
// mean gradients with the global step's increment.
absl::Status TrainReplica(ReplicaContext& context, const ReplicaStepInputs& in,
                          ReplicaStepOutputs& out) {
  ASSIGN_OR_RETURN(PackedStep packed,
                   PackStep(in.model.variables(), *context.device()));
  ModelStepResult result;
  RETURN_IF_ERROR(ComputeReplica(context, in.model, in.variables, in.batch,
                                 /*with_gradients=*/true, &packed.gradients,
                                 in.read_ahead, &result));
  out.predictions = std::move(result.predictions);
  RETURN_IF_ERROR(CheckGradientCount(in.model, result));
  ASSIGN_OR_RETURN(
      HostFloats reduced,
      AllReduceStep(context, result.loss_sum, in.batch.size, packed, out));
  // Every replica sees the same total, so all skip together.
  if (out.examples == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(
      StepGradients grads,
      MeanGradients(context, in.model, in.variables, packed.gradients,
                    reduced.mutable_values(),
                    1.0f / static_cast<float>(out.examples), result.gradients));

  // The global step's increment goes with the gradients (on parameter
  // servers, in the same round of requests) and brings the new value back;
  // after the hash tables' pushes instead where the model has some, so
  // that a step is counted only once all of its updates are in (through
  // ApplyGradients still: ordered after this step's updates where they go
  // on in the background).
  ASSIGN_OR_RETURN(Tensor one, Tensor::Create(DType::kInt64, {}));
  one.flat<int64_t>()[0] = 1;
  Tensor after;
  ReplicaContext::AddUpdate step_add = {&in.variables.global_step(),
                                        std::move(one), &after};
  const bool has_hash_tables = HasHashTables(in.model);
  RETURN_IF_ERROR(ApplyStepGradients(context, in, grads,
                                     has_hash_tables ? nullptr : &step_add));
  if (has_hash_tables) {
    RETURN_IF_ERROR(PushHashTables(context, in, grads));
    RETURN_IF_ERROR(context.ApplyGradients({}, {}, {}, &step_add));
  }
  if (after.num_elements() == 1) out.global_step = after.flat<int64_t>()[0];
  return absl::OkStatus();
}

absl::Status CheckBatches(const Strategy& strategy,
                          absl::Span<const Batch> batches) {
  if (static_cast<int>(batches.size()) != strategy.num_local_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a step needs one batch per replica: got ", batches.size(),
        " batches for ", strategy.num_local_replicas(), " replicas"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StepResult> TrainStep(Strategy& strategy, const Model& model,
                                     const ModelVariables& variables,
                                     absl::Span<const Batch> batches,
                                     ReadAhead* read_ahead,
                                     absl::Span<const Batch> next_batches,
                                     int64_t global_step) {
  RETURN_IF_ERROR(CheckBatches(strategy, batches));
  if (read_ahead != nullptr) {
    RETURN_IF_ERROR(CheckReadAhead(strategy));
    if (read_ahead->num_replicas() != strategy.num_local_replicas()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "read-ahead for ", read_ahead->num_replicas(), " replicas under ",
          strategy.num_local_replicas(), " replicas"));
    }
    if (!next_batches.empty()) {
      RETURN_IF_ERROR(CheckBatches(strategy, next_batches));
    }
  }
  const int n = strategy.num_local_replicas();
  std::vector<ReplicaStepOutputs> outputs(n);
  RETURN_IF_ERROR(strategy.Run([&](ReplicaContext& context) {
    const int r = context.local_replica_id();
    const ReplicaStepInputs in = {
        model,
        variables,
        batches[r],
        read_ahead,
        next_batches.empty() ? nullptr : &next_batches[r],
        global_step};
    return TrainReplica(context, in, outputs[r]);
  }));
  StepResult step;
  step.examples = outputs[0].examples;
  step.loss_sum = outputs[0].loss_sum;
  step.global_step = outputs[0].global_step;
  step.predictions.reserve(n);
  for (ReplicaStepOutputs& out : outputs) {
    step.predictions.push_back(std::move(out.predictions));
  }
  return step;
}

absl::StatusOr<StepResult> TrainStep(Strategy& strategy, const Model& model,
                                     const ModelVariables& variables,
                                     absl::Span<const Batch> batches) {
  return TrainStep(strategy, model, variables, batches, /*read_ahead=*/nullptr,
                   /*next_batches=*/{});
}

absl::Status CheckReadAhead(const Strategy& strategy) {
  // By name: this library does not link the strategy's (ps client and all).
  if (strategy.name() == "ParameterServerStrategy") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "read-ahead overlaps a step's reads from the ps tasks with the push "
      "before it, so it needs ParameterServerStrategy; ",
      strategy.name(), " has no round trips to overlap"));
}

absl::StatusOr<StepResult> EvaluateStep(Strategy& strategy, const Model& model,
                                        const ModelVariables& variables,
                                        absl::Span<const Batch> batches) {
  RETURN_IF_ERROR(CheckBatches(strategy, batches));
  const int n = strategy.num_local_replicas();
  StepResult step;
  step.predictions.resize(n);
  std::vector<double> losses(n);
  absl::Status s = strategy.Run([&](ReplicaContext& context) {
    const int r = context.local_replica_id();
    ModelStepResult result;
    absl::Status s = ComputeReplica(context, model, variables, batches[r],
                                    /*with_gradients=*/false,
                                    /*dense_gradients=*/nullptr,
                                    /*read_ahead=*/nullptr, &result);
    RETURN_IF_ERROR(s);
    step.predictions[r] = std::move(result.predictions);
    losses[r] = result.loss_sum;
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  for (int r = 0; r < n; ++r) {
    step.examples += batches[r].size;
    step.loss_sum += losses[r];
  }
  return step;
}

}  // namespace distrt
