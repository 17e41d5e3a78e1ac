#include "runtime/models/model_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

// The example whose features include sparse entry `k`: offsets are
// non-decreasing, so the last example whose offset is <= k.
int64_t ExampleOfEntry(const Batch& batch, int64_t k) {
  const auto it =
      std::upper_bound(batch.offsets.begin(), batch.offsets.end(), k);
  return (it - batch.offsets.begin()) - 1;
}

}  // namespace

absl::Status CheckLabels(const Batch& batch) {
  if (batch.size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size ", batch.size, " is negative"));
  }
  if (static_cast<int64_t>(batch.labels.size()) != batch.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch of ", batch.size, " examples has ",
                     batch.labels.size(), " labels"));
  }
  return absl::OkStatus();
}

absl::Status CheckFiniteLabels(const Batch& batch) {
  for (int64_t i = 0; i < batch.size; ++i) {
    if (!std::isfinite(batch.labels[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example ", i, ": label ", batch.labels[i], " is not finite"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBinaryLabels(const Batch& batch) {
  for (int64_t i = 0; i < batch.size; ++i) {
    const float label = batch.labels[i];
    if (label != 0.0f && label != 1.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, ": label ", label, " is not 0 or 1"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckClassLabels(const Batch& batch, int num_classes) {
  for (int64_t i = 0; i < batch.size; ++i) {
    const float label = batch.labels[i];
    if (!(label >= 0.0f && label < static_cast<float>(num_classes)) ||
        label != std::floor(label)) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, ": label ", label,
                       " is not a class id in [0, ", num_classes, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDenseFeatures(const Batch& batch, int64_t num_features) {
  if (batch.size > 0 && batch.num_dense != num_features) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch has ", batch.num_dense,
        " dense features per example, the model expects ", num_features));
  }
  if (batch.num_dense < 0 || static_cast<int64_t>(batch.dense.size()) !=
                                 batch.size * batch.num_dense) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch of ", batch.size, " examples with ", batch.num_dense,
        " dense features each has ", batch.dense.size(), " dense values"));
  }
  return absl::OkStatus();
}

absl::Status CheckSparseFeatures(const Batch& batch, int64_t num_features) {
  const int64_t num_ids = static_cast<int64_t>(batch.ids.size());
  if (batch.values.size() != batch.ids.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch has ", num_ids, " sparse feature ids but ",
                     batch.values.size(), " values"));
  }
  if (batch.size == 0 && batch.offsets.empty() && num_ids == 0) {
    return absl::OkStatus();
  }
  if (static_cast<int64_t>(batch.offsets.size()) != batch.size + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch of ", batch.size, " examples has ", batch.offsets.size(),
        " sparse offsets, not ", batch.size + 1));
  }
  if (batch.offsets.front() != 0 || batch.offsets.back() != num_ids) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch's sparse offsets run from ", batch.offsets.front(), " to ",
        batch.offsets.back(), ", not from 0 to the ", num_ids, " ids"));
  }
  for (int64_t i = 0; i < batch.size; ++i) {
    if (batch.offsets[i + 1] < batch.offsets[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, ": sparse offsets decrease from ",
                       batch.offsets[i], " to ", batch.offsets[i + 1]));
    }
  }
  for (int64_t k = 0; k < num_ids; ++k) {
    const int64_t id = batch.ids[k];
    if (id < 0 || id >= num_features) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", ExampleOfEntry(batch, k), ": feature id ",
                       id, " is outside the model's ", num_features,
                       " features [0, ", num_features, ")"));
    }
  }
  return absl::OkStatus();
}

namespace {

// Whether batch.distinct_ids and batch.distinct_index (IndexDistinctIds')
// still describe batch.ids: increasing ids, each entry's index pointing at
// its id, and every distinct id used. Linear, where sorting is not.
bool DistinctIdsMatch(const Batch& batch) {
  const std::vector<int64_t>& distinct = batch.distinct_ids;
  if (batch.distinct_index.size() != batch.ids.size() ||
      distinct.size() > batch.ids.size()) {
    return false;
  }
  for (size_t j = 1; j < distinct.size(); ++j) {
    if (distinct[j] <= distinct[j - 1]) return false;
  }
  // Bytes, not std::vector<bool>'s bits, and no branch on whether an id
  // was seen before: this runs on every step's batch.
  std::vector<uint8_t> used(distinct.size(), 0);
  size_t num_used = 0;
  for (size_t k = 0; k < batch.ids.size(); ++k) {
    const int32_t j = batch.distinct_index[k];
    if (j < 0 || static_cast<size_t>(j) >= distinct.size() ||
        distinct[j] != batch.ids[k]) {
      return false;
    }
    num_used += used[j] ^ 1;
    used[j] = 1;
  }
  return num_used == distinct.size();
}

}  // namespace

std::vector<int64_t> DistinctFeatureIds(const Batch& batch) {
  if (DistinctIdsMatch(batch)) return batch.distinct_ids;
  std::vector<int64_t> ids = batch.ids;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

absl::Status CheckValues(absl::Span<const ModelVariable> variables,
                         absl::Span<const VariableSlice> values) {
  if (values.size() != variables.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("got values of ", values.size(),
                     " variables, the model has ", variables.size()));
  }
  for (size_t v = 0; v < variables.size(); ++v) {
    const ModelVariable& variable = variables[v];
    const VariableSlice& slice = values[v];
    if (variable.kind == ModelVariable::Kind::kDense) {
      const int64_t elements = NumRows(variable.spec) * variable.row_width();
      if (static_cast<int64_t>(slice.dense.size()) != elements) {
        return absl::InvalidArgumentError(absl::StrCat(
            "variable \"", variable.name(), "\": got ", slice.dense.size(),
            " values, its shape has ", elements));
      }
      continue;
    }
    const int64_t width = variable.row_width();
    if (static_cast<int64_t>(slice.rows.size()) !=
        static_cast<int64_t>(slice.ids.size()) * width) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable \"", variable.name(), "\": got ",
                       slice.rows.size(), " row values for ", slice.ids.size(),
                       " ids of ", width, " values each"));
    }
    for (size_t k = 0; k < slice.ids.size(); ++k) {
      if (k > 0 && slice.ids[k] <= slice.ids[k - 1]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "variable \"", variable.name(), "\": ids are not sorted and ",
            "distinct (", slice.ids[k - 1], " before ", slice.ids[k], ")"));
      }
      if (variable.kind == ModelVariable::Kind::kRowSparse &&
          (slice.ids[k] < 0 || slice.ids[k] >= NumRows(variable.spec))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "variable \"", variable.name(), "\": id ", slice.ids[k],
            " is outside its ", NumRows(variable.spec), " rows"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> SliceRowsOfFeatures(
    const Batch& batch, const ModelVariable& variable,
    const VariableSlice& slice) {
  std::vector<int64_t> rows(batch.ids.size());
  // Where the slice's ids are the batch's distinct ids (a variable indexed
  // by feature id), each entry's index is known already; checked per entry,
  // so any other slice, or a batch edited since, takes the search.
  const bool indexed = batch.distinct_index.size() == batch.ids.size();
  const int64_t num_slice_ids = static_cast<int64_t>(slice.ids.size());
  for (size_t k = 0; k < batch.ids.size(); ++k) {
    if (indexed) {
      const int64_t j = batch.distinct_index[k];
      if (j >= 0 && j < num_slice_ids && slice.ids[j] == batch.ids[k]) {
        rows[k] = j;
        continue;
      }
    }
    const auto it =
        std::lower_bound(slice.ids.begin(), slice.ids.end(), batch.ids[k]);
    if (it == slice.ids.end() || *it != batch.ids[k]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable \"", variable.name(), "\": no values for id ", batch.ids[k],
          " of example ", ExampleOfEntry(batch, static_cast<int64_t>(k))));
    }
    rows[k] = it - slice.ids.begin();
  }
  return rows;
}

VariableSlice ZeroGradient(const VariableSlice& values) {
  VariableSlice gradient;
  gradient.dense.assign(values.dense.size(), 0.0f);
  gradient.ids = values.ids;
  gradient.rows.assign(values.rows.size(), 0.0f);
  return gradient;
}

}  // namespace distrt
