#include "runtime/models/wide_deep_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/models/dense_gradient_output.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/embedding_bag.h"
#include "runtime/models/loss_arrays.h"
#include "runtime/models/model_inputs.h"
#include "runtime/models/sparse_batch_arrays.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Where the LIBSVM form's variables are; the deep layers' kernels and biases
// follow.
enum VariableIndex {
  kWideWeights = 0,
  kWideBias = 1,
  kEmbedding = 2,
  kFirstDeep = 3,
};

// HashEmbeddingTable's limit on a row.
constexpr int64_t kMaxEmbeddingDim = int64_t{1} << 20;

// The spec form's own variables' names; a group's must not start with it.
constexpr absl::string_view kPrefix = "wide_deep/";

std::string WideName(const std::string& group) {
  return absl::StrCat(group, "/wide");
}

std::vector<int64_t> DeepWidths(int64_t input_width,
                                const std::vector<int>& hidden_units) {
  std::vector<int64_t> widths = {input_width};
  widths.insert(widths.end(), hidden_units.begin(), hidden_units.end());
  widths.push_back(1);
  return widths;
}

// The layers after the first: none ({1}) without hidden units.
std::vector<int64_t> UpperWidths(const std::vector<int>& hidden_units) {
  if (hidden_units.empty()) return {1};
  std::vector<int64_t> widths(hidden_units.begin(), hidden_units.end());
  widths.push_back(1);
  return widths;
}

int64_t SpecDeepInputWidth(const FeatureSpec& spec) {
  int64_t width = spec.num_dense();
  for (const EmbeddingGroup& group : spec.groups) width += group.dim;
  return width;
}

std::vector<std::string> LayerNames(const std::vector<int>& hidden_units) {
  std::vector<std::string> names;
  for (size_t i = 0; i < hidden_units.size(); ++i) {
    names.push_back(absl::StrCat("dense_", i));
  }
  names.push_back("logit");
  return names;
}

// TF's embedding_column default: truncated normal, stddev 1/sqrt(dim).
InitializerSpec EmbeddingColumnInitializer(int64_t dim) {
  InitializerSpec initializer;
  initializer.kind = InitializerSpec::Kind::kTruncatedNormal;
  initializer.mean = 0.0f;
  initializer.stddev = static_cast<float>(1.0 / std::sqrt(dim));
  return initializer;
}

// --- A batch's embedding groups (Batch::Group), as the spec form reads them.

std::string GroupLabel(const std::string& name) {
  return absl::StrCat("embedding group \"", name, "\"");
}

// The example whose ids include entry `k` of a group: the last example whose
// offset is <= k (offsets are non-decreasing).
int64_t ExampleOfEntry(const Batch::Group& group, int64_t k) {
  const auto it =
      std::upper_bound(group.offsets.begin(), group.offsets.end(), k);
  return (it - group.offsets.begin()) - 1;
}

// CSR arrays consistent with a batch of n examples (an empty batch may have
// no offsets), weights absent or one per id, and ids within [0, buckets)
// when buckets > 0.
absl::Status CheckGroup(int64_t n, const Batch::Group& group,
                        const std::string& name, int64_t buckets) {
  const int64_t num_ids = static_cast<int64_t>(group.ids.size());
  if (!group.weights.empty() && group.weights.size() != group.ids.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(GroupLabel(name), ": batch has ", num_ids, " ids but ",
                     group.weights.size(), " weights"));
  }
  if (n == 0 && group.offsets.empty() && num_ids == 0) {
    return absl::OkStatus();
  }
  if (static_cast<int64_t>(group.offsets.size()) != n + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(GroupLabel(name), ": batch of ", n, " examples has ",
                     group.offsets.size(), " offsets, not ", n + 1));
  }
  if (group.offsets.front() != 0 || group.offsets.back() != num_ids) {
    return absl::InvalidArgumentError(absl::StrCat(
        GroupLabel(name), ": offsets run from ", group.offsets.front(), " to ",
        group.offsets.back(), ", not from 0 to the ", num_ids, " ids"));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (group.offsets[i + 1] < group.offsets[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example ", i, ": ", GroupLabel(name), ": offsets decrease from ",
          group.offsets[i], " to ", group.offsets[i + 1]));
    }
  }
  if (buckets > 0) {
    for (int64_t k = 0; k < num_ids; ++k) {
      const int64_t id = group.ids[k];
      if (id < 0 || id >= buckets) {
        return absl::InvalidArgumentError(
            absl::StrCat("example ", ExampleOfEntry(group, k), ": ",
                         GroupLabel(name), ": id ", id, " is outside its ",
                         buckets, " buckets [0, ", buckets, ")"));
      }
    }
  }
  return absl::OkStatus();
}

// For each id of the group (in CSR order), the index in slice.ids of that
// id (group.distinct_index's where that is it, checked per entry).
// INVALID_ARGUMENT naming the variable, the id and the example when the
// slice lacks it. `slice` passed CheckValues.
absl::StatusOr<std::vector<int32_t>> GroupSliceRows(
    const Batch::Group& group, const ModelVariable& variable,
    const VariableSlice& slice) {
  if (slice.ids.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch uses ", slice.ids.size(), " rows of ",
                     variable.name(), "; at most 2^31 - 1 are supported"));
  }
  std::vector<int32_t> rows(group.ids.size());
  const bool indexed = group.distinct_index.size() == group.ids.size();
  const int64_t num_slice_ids = static_cast<int64_t>(slice.ids.size());
  for (size_t k = 0; k < group.ids.size(); ++k) {
    if (indexed) {
      const int64_t j = group.distinct_index[k];
      if (j >= 0 && j < num_slice_ids && slice.ids[j] == group.ids[k]) {
        rows[k] = static_cast<int32_t>(j);
        continue;
      }
    }
    const auto it =
        std::lower_bound(slice.ids.begin(), slice.ids.end(), group.ids[k]);
    if (it == slice.ids.end() || *it != group.ids[k]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable \"", variable.name(), "\": no values for id ", group.ids[k],
          " of example ", ExampleOfEntry(group, static_cast<int64_t>(k))));
    }
    rows[k] = static_cast<int32_t>(it - slice.ids.begin());
  }
  return rows;
}

// Each id's factor in its example's pooled embedding, so that the pooled
// embedding is the factor-weighted sum of the rows (SparseGatherSum), and
// its gradient the same factors times d pooled (SparseScatterAdd): TF's
// safe_embedding_lookup_sparse. sum: the weight. mean: weight / the sum of
// the example's weights; sqrtn: weight / sqrt(the sum of their squares);
// both after leaving out (factor 0) the ids of weight <= 0, as TF prunes
// them, so an example left with none pools to zeros, as one with no ids.
std::vector<float> PoolingFactors(const Batch::Group& group, int64_t n,
                                  Combiner combiner) {
  std::vector<float> factors(group.ids.size());
  const auto weight = [&](int64_t k) {
    return group.weights.empty() ? 1.0f : group.weights[k];
  };
  for (int64_t i = 0; i < n; ++i) {
    const int64_t begin = group.offsets[i];
    const int64_t end = group.offsets[i + 1];
    if (combiner == Combiner::kSum) {
      for (int64_t k = begin; k < end; ++k) factors[k] = weight(k);
      continue;
    }
    double total = 0;
    for (int64_t k = begin; k < end; ++k) {
      const double w = weight(k);
      if (w > 0) total += combiner == Combiner::kMean ? w : w * w;
    }
    const double scale = combiner == Combiner::kMean ? total : std::sqrt(total);
    for (int64_t k = begin; k < end; ++k) {
      const float w = weight(k);
      factors[k] = w > 0 ? static_cast<float>(w / scale) : 0.0f;
    }
  }
  return factors;
}

}  // namespace

WideDeepModel::WideDeepModel(int64_t num_features, int64_t embedding_dim,
                             const std::vector<int>& hidden_units,
                             const ModelVariableOptions& options)
    : from_spec_(false),
      num_features_(num_features),
      embedding_dim_(embedding_dim),
      deep_(DeepWidths(embedding_dim, hidden_units)),
      upper_layers_(UpperWidths(hidden_units)) {
  variables_.push_back(RowSparseVariable("wide_deep/wide/weights",
                                         {num_features, 1}, ZerosInitializer(),
                                         options));
  variables_.push_back(
      DenseVariable("wide_deep/wide/bias", {1}, ZerosInitializer(), options));
  variables_.push_back(
      HashEmbeddingVariable("wide_deep/embedding", embedding_dim,
                            UniformInitializer(-0.05f, 0.05f), options));
  for (ModelVariable& variable :
       deep_.Variables("wide_deep", LayerNames(hidden_units), options)) {
    variables_.push_back(std::move(variable));
  }
  SeedInitializers(options.seed, &variables_);
}

WideDeepModel::WideDeepModel(const FeatureSpec& spec,
                             const std::vector<int>& hidden_units,
                             const ModelVariableOptions& options)
    : from_spec_(true),
      num_features_(0),
      embedding_dim_(0),
      num_dense_(spec.num_dense()),
      first_layer_width_(hidden_units.empty() ? 1 : hidden_units.front()),
      deep_(DeepWidths(SpecDeepInputWidth(spec), hidden_units)),
      upper_layers_(UpperWidths(hidden_units)) {
  int64_t deep_input_offset = num_dense_;
  for (const EmbeddingGroup& spec_group : spec.groups) {
    Group group;
    group.name = spec_group.name;
    group.dim = spec_group.dim;
    group.combiner = spec_group.combiner;
    const CategoricalFeature& key = spec.GroupKey(spec_group);
    group.buckets = key.kind == CategoricalKind::kHashed ? 0 : key.buckets;
    group.deep_input_offset = deep_input_offset;
    deep_input_offset += group.dim;
    // Both tables take the group's policy: they are looked up with the same
    // ids, so they admit and evict alike (a wide table that admitted every
    // id would grow as if there were no policy).
    group.embedding_variable = static_cast<int>(variables_.size());
    variables_.push_back(HashEmbeddingVariable(
        group.name, group.dim, EmbeddingColumnInitializer(group.dim), options));
    variables_.back().hash_spec.policy = spec_group.policy;
    group.wide_variable = static_cast<int>(variables_.size());
    variables_.push_back(HashEmbeddingVariable(WideName(group.name), 1,
                                               ZerosInitializer(), options));
    variables_.back().hash_spec.policy = spec_group.policy;
    groups_.push_back(std::move(group));
  }
  if (num_dense_ > 0) {
    wide_dense_variable_ = static_cast<int>(variables_.size());
    variables_.push_back(DenseVariable("wide_deep/wide/dense", {num_dense_, 1},
                                       ZerosInitializer(), options));
  }
  wide_bias_variable_ = static_cast<int>(variables_.size());
  variables_.push_back(
      DenseVariable("wide_deep/wide/bias", {1}, ZerosInitializer(), options));
  first_deep_variable_ = static_cast<int>(variables_.size());
  for (ModelVariable& variable :
       deep_.Variables("wide_deep", LayerNames(hidden_units), options)) {
    variables_.push_back(std::move(variable));
  }
  SeedInitializers(options.seed, &variables_);
}

absl::Status WideDeepModel::CheckSpec(const FeatureSpec& spec) {
  constexpr absl::string_view kSource = "model config: feature_spec";
  RETURN_IF_ERROR(CheckFeatureSpec(spec, kSource));
  if (spec.numeric.empty() && spec.groups.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kSource,
        ": numeric and embedding_groups are both empty; wide_deep needs at "
        "least one numeric feature or embedding group"));
  }
  // The variable names the groups give, and which group gives each.
  absl::flat_hash_map<std::string, size_t> owner;
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const EmbeddingGroup& group = spec.groups[g];
    const std::string at = absl::StrCat(kSource, ": embedding_groups[", g,
                                        "] (\"", group.name, "\"): ");
    if (group.dim > kMaxEmbeddingDim) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, "dim must be at most 2^20, not ", group.dim));
    }
    if (absl::StartsWith(group.name, kPrefix)) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, "name must not start with \"", kPrefix,
                       "\", the prefix of the model's own variables"));
    }
    for (const std::string& name : {group.name, WideName(group.name)}) {
      if (auto [it, inserted] = owner.emplace(name, g); !inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            at, "its variable \"", name,
            "\" has the name of a variable of embedding_groups[", it->second,
            "] (a group's table is named as the group, its wide weights "
            "\"<group>/wide\")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status WideDeepModel::CheckSpecFeatures(const Batch& batch) const {
  RETURN_IF_ERROR(CheckDenseFeatures(batch, num_dense_));
  // An empty batch knows no groups (MakeBatch has no example to count them).
  if (batch.size == 0 && batch.groups.empty()) return absl::OkStatus();
  if (batch.groups.size() != groups_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch has ", batch.groups.size(),
        " embedding groups, the model's feature spec has ", groups_.size()));
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    RETURN_IF_ERROR(CheckGroup(batch.size, batch.groups[g], groups_[g].name,
                               groups_[g].buckets));
  }
  return absl::OkStatus();
}

absl::Status WideDeepModel::SparseIds(
    const Batch& batch, std::vector<std::vector<int64_t>>* ids) const {
  if (!from_spec_) {
    RETURN_IF_ERROR(CheckSparseFeatures(batch, num_features_));
    ids->assign(variables_.size(), {});
    (*ids)[kWideWeights] = DistinctFeatureIds(batch);
    (*ids)[kEmbedding] = (*ids)[kWideWeights];
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckSpecFeatures(batch));
  ids->assign(variables_.size(), {});
  if (batch.groups.empty()) return absl::OkStatus();  // an empty batch
  for (size_t g = 0; g < groups_.size(); ++g) {
    (*ids)[groups_[g].embedding_variable] = DistinctGroupIds(batch.groups[g]);
    (*ids)[groups_[g].wide_variable] = (*ids)[groups_[g].embedding_variable];
  }
  return absl::OkStatus();
}

absl::Status WideDeepModel::ComputeOn(
    Device& device, const Batch& batch, absl::Span<const VariableSlice> values,
    bool with_gradients, const DenseGradientBuffer* dense_gradients,
    ModelStepResult* result) const {
  return from_spec_ ? ComputeSpecOn(device, batch, values, with_gradients,
                                    dense_gradients, result)
                    : ComputeIdsOn(device, batch, values, with_gradients,
                                   dense_gradients, result);
}

absl::Status WideDeepModel::ComputeIdsOn(
    Device& device, const Batch& batch, absl::Span<const VariableSlice> values,
    bool with_gradients, const DenseGradientBuffer* dense_gradients,
    ModelStepResult* result) const {
  RETURN_IF_ERROR(CheckLabels(batch));
  RETURN_IF_ERROR(CheckBinaryLabels(batch));
  RETURN_IF_ERROR(CheckSparseFeatures(batch, num_features_));
  RETURN_IF_ERROR(CheckValues(variables_, values));
  DeviceArrays arrays(device);
  DeviceMath& math = arrays.math();
  ASSIGN_OR_RETURN(const int32_t* wide_rows,
                   UploadSliceRows(arrays, batch, variables_[kWideWeights],
                                   values[kWideWeights]));
  ASSIGN_OR_RETURN(const int32_t* embedding_rows,
                   UploadSliceRows(arrays, batch, variables_[kEmbedding],
                                   values[kEmbedding]));
  ASSIGN_OR_RETURN(SparseBatchArrays sparse,
                   SparseBatchArrays::Upload(arrays, batch));
  ASSIGN_OR_RETURN(const float* wide_weights,
                   arrays.Upload(values[kWideWeights].rows));
  ASSIGN_OR_RETURN(const float* wide_bias,
                   arrays.Upload(values[kWideBias].dense));
  ASSIGN_OR_RETURN(const float* embedding,
                   arrays.Upload(values[kEmbedding].rows));
  const absl::Span<const VariableSlice> deep_values =
      values.subspan(kFirstDeep);
  ASSIGN_OR_RETURN(std::vector<const float*> deep_params,
                   deep_.UploadParams(arrays, deep_values));

  const int64_t n = batch.size;
  const int64_t dim = embedding_dim_;
  // Forward: the wide logits, and each example's features pooled into one
  // embedding (the value-weighted sum of their rows) for the deep part.
  ASSIGN_OR_RETURN(float* logits,
                   SparseLinearLogits(arrays, sparse, n, wide_rows,
                                      wide_weights, wide_bias));
  ASSIGN_OR_RETURN(float* pooled, arrays.Zeros(n * dim));
  RETURN_IF_ERROR(math.SparseGatherSum(n, dim, sparse.offsets, embedding_rows,
                                       sparse.values, embedding, pooled));
  std::vector<const float*> activations;
  RETURN_IF_ERROR(deep_.Forward(arrays, deep_params, n, pooled, &activations));
  RETURN_IF_ERROR(math.Axpy(n, 1.0f, activations.back(), logits));
  // d loss / d logit of the binary cross-entropy.
  ASSIGN_OR_RETURN(LossArrays loss,
                   LossArrays::OfSigmoidCrossEntropy(
                       arrays, n, logits, sparse.labels, with_gradients));

  result->gradients.clear();
  if (with_gradients) {
    result->gradients.resize(variables_.size());
    VariableSlice& d_wide = result->gradients[kWideWeights];
    VariableSlice& d_embedding = result->gradients[kEmbedding];
    d_wide = ZeroGradient(values[kWideWeights]);
    d_embedding = ZeroGradient(values[kEmbedding]);
    DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
    ASSIGN_OR_RETURN(float* d_wide_bias, gradients.For(kWideBias, 1));
    RETURN_IF_ERROR(math.ColumnSums(n, 1, loss.d_logits, d_wide_bias));
    float* d_pooled = nullptr;
    RETURN_IF_ERROR(deep_.Backward(arrays, deep_params, n, activations,
                                   loss.d_logits, gradients, kFirstDeep,
                                   &d_pooled));
    RETURN_IF_ERROR(gradients.Finish());
    RETURN_IF_ERROR(SparseRowsGradient(arrays, sparse, n, 1, wide_rows,
                                       loss.d_logits,
                                       absl::MakeSpan(d_wide.rows)));
    RETURN_IF_ERROR(SparseRowsGradient(arrays, sparse, n, dim, embedding_rows,
                                       d_pooled,
                                       absl::MakeSpan(d_embedding.rows)));
  }
  return loss.Finish(arrays, n, 1, result);
}

// What ComputeSpecOn's forward steps leave for the later ones. Its host
// arrays are read by the device (on a CPU, in place): ComputeSpecOn
// declares it before its DeviceArrays so that they outlive every use.
struct WideDeepModel::SpecForward {
  // A group's host arrays that the batch does not hold.
  struct HostGroup {
    std::vector<float> pooling_factors;
    std::vector<float> unit_weights;  // when the batch gives no weights
  };
  // A group's arrays on the device.
  struct DeviceGroup {
    const int64_t* offsets = nullptr;
    const int32_t* embedding_rows = nullptr;
    const int32_t* wide_rows = nullptr;
    const float* pooling_factors = nullptr;
    const float* wide_weights = nullptr;
    const float* table = nullptr;
    const float* wide = nullptr;
    float* pooled = nullptr;  // n by dim
  };

  SpecForward(int64_t n, size_t num_groups)
      : n(n), host(num_groups), groups(num_groups) {
    no_ids.offsets.assign(1, 0);
  }

  const int64_t n;  // the batch's examples
  // An empty batch may come without groups: each then has no ids.
  Batch::Group no_ids;
  std::vector<HostGroup> host;
  std::vector<DeviceGroup> groups;
  // The dense features, n by num_dense_; null without numeric features.
  const float* dense = nullptr;
  // The first deep layer's kernel [input, h1], and its output (n by h1,
  // ReLU'd when upper layers follow).
  const float* kernel = nullptr;
  float* first = nullptr;
  // The upper layers' parameters and activations (empty without hidden
  // units).
  std::vector<const float*> upper_params;
  std::vector<const float*> upper_activations;
};

absl::Status WideDeepModel::ComputeSpecOn(
    Device& device, const Batch& batch, absl::Span<const VariableSlice> values,
    bool with_gradients, const DenseGradientBuffer* dense_gradients,
    ModelStepResult* result) const {
  RETURN_IF_ERROR(CheckLabels(batch));
  RETURN_IF_ERROR(CheckBinaryLabels(batch));
  RETURN_IF_ERROR(CheckSpecFeatures(batch));
  RETURN_IF_ERROR(CheckValues(variables_, values));
  const int64_t n = batch.size;
  // Declared before `arrays`: its host arrays must outlive every device use.
  SpecForward forward(n, groups_.size());
  DeviceArrays arrays(device);
  ASSIGN_OR_RETURN(const float* labels, arrays.Upload(batch.labels));
  ASSIGN_OR_RETURN(float* logits, arrays.Zeros(n));
  RETURN_IF_ERROR(ForwardGroups(arrays, batch, values, &forward, logits));
  RETURN_IF_ERROR(ForwardWide(arrays, batch, values, &forward, logits));
  RETURN_IF_ERROR(ForwardDeep(arrays, values, &forward, logits));
  ASSIGN_OR_RETURN(LossArrays loss,
                   LossArrays::OfSigmoidCrossEntropy(arrays, n, logits, labels,
                                                     with_gradients));
  result->gradients.clear();
  if (with_gradients) {
    RETURN_IF_ERROR(BackwardSpec(arrays, values, forward, loss.d_logits,
                                 dense_gradients, result));
  }
  return loss.Finish(arrays, n, 1, result);
}

// The wide part of the groups, added to the logits, and their pooled
// embeddings (forward->groups[g].pooled), the deep part's input blocks.
absl::Status WideDeepModel::ForwardGroups(
    DeviceArrays& arrays, const Batch& batch,
    absl::Span<const VariableSlice> values, SpecForward* forward,
    float* logits) const {
  DeviceMath& math = arrays.math();
  const int64_t n = forward->n;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group& group = groups_[g];
    const Batch::Group& in =
        batch.groups.empty() ? forward->no_ids : batch.groups[g];
    RETURN_IF_ERROR(UploadGroup(arrays, in, g, values, forward));
    SpecForward::DeviceGroup& on = forward->groups[g];
    RETURN_IF_ERROR(math.SparseGatherSum(n, 1, on.offsets, on.wide_rows,
                                         on.wide_weights, on.wide, logits));
    ASSIGN_OR_RETURN(on.pooled, arrays.Zeros(n * group.dim));
    RETURN_IF_ERROR(math.SparseGatherSum(n, group.dim, on.offsets,
                                         on.embedding_rows, on.pooling_factors,
                                         on.table, on.pooled));
  }
  return absl::OkStatus();
}

// Group g's arrays on the device (forward->groups[g], all but `pooled`):
// the batch's CSR arrays `in`, each id's row in the slices of the group's
// table and wide weights, its pooling factors, the weights of its wide part
// (1 where the batch gives none: forward->host[g] keeps what the batch does
// not hold) and the two slices' rows.
absl::Status WideDeepModel::UploadGroup(DeviceArrays& arrays,
                                        const Batch::Group& in, size_t g,
                                        absl::Span<const VariableSlice> values,
                                        SpecForward* forward) const {
  const Group& group = groups_[g];
  const VariableSlice& table = values[group.embedding_variable];
  const VariableSlice& wide = values[group.wide_variable];
  SpecForward::HostGroup& host = forward->host[g];
  SpecForward::DeviceGroup& on = forward->groups[g];
  ASSIGN_OR_RETURN(
      std::vector<int32_t> embedding_rows,
      GroupSliceRows(in, variables_[group.embedding_variable], table));
  ASSIGN_OR_RETURN(std::vector<int32_t> wide_rows,
                   GroupSliceRows(in, variables_[group.wide_variable], wide));
  host.pooling_factors = PoolingFactors(in, forward->n, group.combiner);
  const std::vector<float>* wide_weights = &in.weights;
  if (in.weights.empty()) {
    host.unit_weights.assign(in.ids.size(), 1.0f);
    wide_weights = &host.unit_weights;
  }
  ASSIGN_OR_RETURN(on.offsets, arrays.Upload(in.offsets));
  ASSIGN_OR_RETURN(on.embedding_rows,
                   arrays.UploadOwned(std::move(embedding_rows)));
  ASSIGN_OR_RETURN(on.wide_rows, arrays.UploadOwned(std::move(wide_rows)));
  ASSIGN_OR_RETURN(on.pooling_factors, arrays.Upload(host.pooling_factors));
  ASSIGN_OR_RETURN(on.wide_weights, arrays.Upload(*wide_weights));
  ASSIGN_OR_RETURN(on.table, arrays.Upload(table.rows));
  ASSIGN_OR_RETURN(on.wide, arrays.Upload(wide.rows));
  return absl::OkStatus();
}

// The wide part of the dense features (uploading them, for the deep part
// too, into forward->dense) and the bias, added to the logits.
absl::Status WideDeepModel::ForwardWide(DeviceArrays& arrays,
                                        const Batch& batch,
                                        absl::Span<const VariableSlice> values,
                                        SpecForward* forward,
                                        float* logits) const {
  DeviceMath& math = arrays.math();
  const int64_t n = forward->n;
  if (wide_dense_variable_ >= 0) {
    ASSIGN_OR_RETURN(forward->dense, arrays.Upload(batch.dense));
    ASSIGN_OR_RETURN(const float* wide_dense,
                     arrays.Upload(values[wide_dense_variable_].dense));
    RETURN_IF_ERROR(math.Gemm(false, false, n, 1, num_dense_, 1.0f,
                              forward->dense, wide_dense, 1.0f, logits));
  }
  ASSIGN_OR_RETURN(const float* wide_bias,
                   arrays.Upload(values[wide_bias_variable_].dense));
  return math.AddBias(n, 1, wide_bias, logits);
}

// The deep part's first layer (before its ReLU), on concat(dense, pooled_1,
// ...) without building it: the kernel's rows for each block are contiguous
// (row-major [input, h1]), so the layer is a sum of one product per block.
absl::Status WideDeepModel::ForwardFirstLayer(
    DeviceArrays& arrays, absl::Span<const VariableSlice> values,
    SpecForward* forward) const {
  DeviceMath& math = arrays.math();
  const int64_t n = forward->n;
  const int64_t h1 = first_layer_width_;
  const absl::Span<const VariableSlice> deep_values =
      values.subspan(first_deep_variable_);
  ASSIGN_OR_RETURN(forward->kernel, arrays.Upload(deep_values[0].dense));
  ASSIGN_OR_RETURN(const float* bias, arrays.Upload(deep_values[1].dense));
  ASSIGN_OR_RETURN(forward->first, arrays.Zeros(n * h1));
  if (forward->dense != nullptr) {
    RETURN_IF_ERROR(math.Gemm(false, false, n, h1, num_dense_, 1.0f,
                              forward->dense, forward->kernel, 1.0f,
                              forward->first));
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group& group = groups_[g];
    RETURN_IF_ERROR(math.Gemm(
        false, false, n, h1, group.dim, 1.0f, forward->groups[g].pooled,
        forward->kernel + group.deep_input_offset * h1, 1.0f, forward->first));
  }
  return math.AddBias(n, h1, bias, forward->first);
}

// The deep part: the first layer, then (when there are hidden units) its
// ReLU and the layers after it; its logits are added to `logits`.
absl::Status WideDeepModel::ForwardDeep(DeviceArrays& arrays,
                                        absl::Span<const VariableSlice> values,
                                        SpecForward* forward,
                                        float* logits) const {
  DeviceMath& math = arrays.math();
  const int64_t n = forward->n;
  RETURN_IF_ERROR(ForwardFirstLayer(arrays, values, forward));
  const float* deep_logits = forward->first;
  if (upper_layers_.num_layers() > 0) {
    RETURN_IF_ERROR(math.Relu(n * first_layer_width_, forward->first));
    ASSIGN_OR_RETURN(forward->upper_params,
                     upper_layers_.UploadParams(
                         arrays, values.subspan(first_deep_variable_ + 2)));
    RETURN_IF_ERROR(upper_layers_.Forward(arrays, forward->upper_params, n,
                                          forward->first,
                                          &forward->upper_activations));
    deep_logits = forward->upper_activations.back();
  }
  return math.Axpy(n, 1.0f, deep_logits, logits);
}

// Every variable's gradient into result->gradients (the dense ones through
// `dense_gradients` when given), from d loss / d logits: the wide bias and
// dense weights, the deep layers, then the groups' tables and wide weights.
absl::Status WideDeepModel::BackwardSpec(
    DeviceArrays& arrays, absl::Span<const VariableSlice> values,
    const SpecForward& forward, const float* d_logits,
    const DenseGradientBuffer* dense_gradients, ModelStepResult* result) const {
  DeviceMath& math = arrays.math();
  const int64_t n = forward.n;
  result->gradients.resize(variables_.size());
  for (const Group& group : groups_) {
    result->gradients[group.embedding_variable] =
        ZeroGradient(values[group.embedding_variable]);
    result->gradients[group.wide_variable] =
        ZeroGradient(values[group.wide_variable]);
  }
  DenseGradientOutput gradients(arrays, dense_gradients, &result->gradients);
  ASSIGN_OR_RETURN(float* d_wide_bias, gradients.For(wide_bias_variable_, 1));
  RETURN_IF_ERROR(math.ColumnSums(n, 1, d_logits, d_wide_bias));
  if (forward.dense != nullptr) {
    ASSIGN_OR_RETURN(float* d_wide_dense,
                     gradients.For(wide_dense_variable_, num_dense_));
    RETURN_IF_ERROR(math.Gemm(true, false, num_dense_, 1, n, 1.0f,
                              forward.dense, d_logits, 0.0f, d_wide_dense));
  }
  const float* delta = nullptr;
  float* d_kernel = nullptr;
  RETURN_IF_ERROR(
      BackwardDeep(arrays, forward, d_logits, gradients, &delta, &d_kernel));
  RETURN_IF_ERROR(
      BackwardGroups(arrays, forward, d_logits, delta, d_kernel, result));
  return gradients.Finish();
}

// The deep layers' gradients but the groups' blocks of the first kernel
// (BackwardGroups writes those): the upper layers', the first bias's, and
// the dense features' block of the first kernel. Sets *delta to d loss / d
// the first layer's output before its ReLU, and *d_kernel to the first
// kernel's gradient.
absl::Status WideDeepModel::BackwardDeep(DeviceArrays& arrays,
                                         const SpecForward& forward,
                                         const float* d_logits,
                                         DenseGradientOutput& gradients,
                                         const float** delta,
                                         float** d_kernel) const {
  DeviceMath& math = arrays.math();
  const int64_t n = forward.n;
  const int64_t h1 = first_layer_width_;
  *delta = d_logits;
  if (upper_layers_.num_layers() > 0) {
    float* d_first = nullptr;
    RETURN_IF_ERROR(upper_layers_.Backward(
        arrays, forward.upper_params, n, forward.upper_activations, d_logits,
        gradients, first_deep_variable_ + 2, &d_first));
    RETURN_IF_ERROR(math.ReluGrad(n * h1, forward.first, d_first));
    *delta = d_first;
  }
  const int64_t input_width = variables_[first_deep_variable_].spec.shape[0];
  ASSIGN_OR_RETURN(*d_kernel,
                   gradients.For(first_deep_variable_, input_width * h1));
  ASSIGN_OR_RETURN(float* d_bias, gradients.For(first_deep_variable_ + 1, h1));
  RETURN_IF_ERROR(math.ColumnSums(n, h1, *delta, d_bias));
  if (forward.dense != nullptr) {
    RETURN_IF_ERROR(math.Gemm(true, false, num_dense_, h1, n, 1.0f,
                              forward.dense, *delta, 0.0f, *d_kernel));
  }
  return absl::OkStatus();
}

// Per group, from `delta` (d loss / d the first layer's output before its
// ReLU): its block of the first kernel's gradient `d_kernel`, then d loss /
// d its pooled embedding scattered into its table's rows, and d_logits
// into its wide weights' rows, each downloaded into result->gradients.
absl::Status WideDeepModel::BackwardGroups(DeviceArrays& arrays,
                                           const SpecForward& forward,
                                           const float* d_logits,
                                           const float* delta, float* d_kernel,
                                           ModelStepResult* result) const {
  DeviceMath& math = arrays.math();
  const int64_t n = forward.n;
  const int64_t h1 = first_layer_width_;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group& group = groups_[g];
    const SpecForward::DeviceGroup& on = forward.groups[g];
    const int64_t block = group.deep_input_offset * h1;
    RETURN_IF_ERROR(math.Gemm(true, false, group.dim, h1, n, 1.0f, on.pooled,
                              delta, 0.0f, d_kernel + block));
    ASSIGN_OR_RETURN(float* d_pooled, arrays.Floats(n * group.dim));
    RETURN_IF_ERROR(math.Gemm(false, true, n, group.dim, h1, 1.0f, delta,
                              forward.kernel + block, 0.0f, d_pooled));
    VariableSlice& d_table = result->gradients[group.embedding_variable];
    ASSIGN_OR_RETURN(float* table_rows, arrays.Zeros(d_table.rows.size()));
    RETURN_IF_ERROR(math.SparseScatterAdd(n, group.dim, on.offsets,
                                          on.embedding_rows, on.pooling_factors,
                                          d_pooled, table_rows));
    RETURN_IF_ERROR(arrays.Download(table_rows, absl::MakeSpan(d_table.rows)));
    VariableSlice& d_wide = result->gradients[group.wide_variable];
    ASSIGN_OR_RETURN(float* wide_rows, arrays.Zeros(d_wide.rows.size()));
    RETURN_IF_ERROR(math.SparseScatterAdd(
        n, 1, on.offsets, on.wide_rows, on.wide_weights, d_logits, wide_rows));
    RETURN_IF_ERROR(arrays.Download(wide_rows, absl::MakeSpan(d_wide.rows)));
  }
  return absl::OkStatus();
}

}  // namespace distrt
