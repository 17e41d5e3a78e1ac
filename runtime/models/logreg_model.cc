#include "runtime/models/logreg_model.h"

#include "runtime/models/dense_gradient_output.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/model_inputs.h"
#include "runtime/models/sparse_batch_arrays.h"

namespace distrt {
namespace {

enum VariableIndex { kWeights = 0, kBias = 1 };

}  // namespace

LogRegModel::LogRegModel(int64_t num_features, const VariableOptions& options)
    : num_features_(num_features) {
  variables_.push_back(RowSparseVariable("logreg/weights", {num_features, 1},
                                         ZerosInitializer(), options));
  variables_.push_back(
      DenseVariable("logreg/bias", {1}, ZerosInitializer(), options));
  SeedInitializers(options.seed, &variables_);
}

absl::Status LogRegModel::SparseIds(
    const Batch& batch, std::vector<std::vector<int64_t>>* ids) const {
  if (absl::Status s = CheckSparseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  ids->assign(variables_.size(), {});
  (*ids)[kWeights] = DistinctFeatureIds(batch);
  return absl::OkStatus();
}

absl::Status LogRegModel::ComputeOn(Device& device, const Batch& batch,
                                    absl::Span<const VariableSlice> values,
                                    bool with_gradients,
                                    const DenseGradientBuffer* dense_gradients,
                                    ModelStepResult* result) const {
  if (absl::Status s = CheckLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckBinaryLabels(batch); !s.ok()) return s;
  if (absl::Status s = CheckSparseFeatures(batch, num_features_); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckValues(variables_, values); !s.ok()) return s;
  DeviceArrays arrays(device);
  DeviceMath& math = arrays.math();
  absl::StatusOr<const int32_t*> rows =
      UploadSliceRows(arrays, batch, variables_[kWeights], values[kWeights]);
  if (!rows.ok()) return rows.status();
  absl::StatusOr<SparseBatchArrays> sparse =
      SparseBatchArrays::Upload(arrays, batch);
  if (!sparse.ok()) return sparse.status();
  absl::StatusOr<const float*> weights = arrays.Upload(values[kWeights].rows);
  if (!weights.ok()) return weights.status();
  absl::StatusOr<const float*> bias = arrays.Upload(values[kBias].dense);
  if (!bias.ok()) return bias.status();

  const int64_t n = batch.size;
  // logit_i = bias + sum over i's features of value * weight.
  absl::StatusOr<float*> logits = arrays.Zeros(n);
  if (!logits.ok()) return logits.status();
  if (absl::Status s = math.SparseGatherSum(n, 1, sparse->offsets, *rows,
                                            sparse->values, *weights, *logits);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = math.AddBias(n, 1, *bias, *logits); !s.ok()) return s;
  absl::StatusOr<float*> probabilities = arrays.Floats(n);
  if (!probabilities.ok()) return probabilities.status();
  absl::StatusOr<float*> losses = arrays.Floats(n);
  if (!losses.ok()) return losses.status();
  // d loss / d logit of the binary cross-entropy.
  float* d_logits = nullptr;
  if (with_gradients) {
    absl::StatusOr<float*> d = arrays.Floats(n);
    if (!d.ok()) return d.status();
    d_logits = *d;
  }
  if (absl::Status s = math.SigmoidCrossEntropy(
          n, *logits, sparse->labels, *probabilities, *losses, d_logits);
      !s.ok()) {
    return s;
  }

  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(variables_.size());
    VariableSlice& d_weights = result->gradients[kWeights];
    d_weights = ZeroGradient(values[kWeights]);
    absl::StatusOr<float*> d_table = arrays.Zeros(d_weights.rows.size());
    if (!d_table.ok()) return d_table.status();
    if (absl::Status s = math.SparseScatterAdd(
            n, 1, sparse->offsets, *rows, sparse->values, d_logits, *d_table);
        !s.ok()) {
      return s;
    }
    DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
    absl::StatusOr<float*> d_bias = gradients.For(kBias, 1);
    if (!d_bias.ok()) return d_bias.status();
    if (absl::Status s = math.ColumnSums(n, 1, d_logits, *d_bias); !s.ok()) {
      return s;
    }
    if (absl::Status s = gradients.Finish(); !s.ok()) return s;
    if (absl::Status s =
            arrays.Download(*d_table, absl::MakeSpan(d_weights.rows));
        !s.ok()) {
      return s;
    }
  }
  result->predictions.resize(n);
  if (absl::Status s =
          arrays.Download(*probabilities, absl::MakeSpan(result->predictions));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<double> loss_sum = arrays.SumOnHost(*losses, n);
  if (!loss_sum.ok()) return loss_sum.status();
  result->loss_sum = *loss_sum;
  return absl::OkStatus();
}

}  // namespace distrt
