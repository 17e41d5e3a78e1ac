#include "runtime/models/embedding_bag.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

// Whether group.distinct_ids and group.distinct_index still describe
// group.ids: increasing ids, each id's index pointing at it, and every
// distinct id used. Linear, where sorting is not.
bool DistinctIdsMatch(const Batch::Group& group) {
  const std::vector<int64_t>& distinct = group.distinct_ids;
  if (group.distinct_index.size() != group.ids.size() ||
      distinct.size() > group.ids.size()) {
    return false;
  }
  for (size_t j = 1; j < distinct.size(); ++j) {
    if (distinct[j] <= distinct[j - 1]) return false;
  }
  std::vector<uint8_t> used(distinct.size(), 0);
  size_t num_used = 0;
  for (size_t k = 0; k < group.ids.size(); ++k) {
    const int32_t j = group.distinct_index[k];
    if (j < 0 || static_cast<size_t>(j) >= distinct.size() ||
        distinct[j] != group.ids[k]) {
      return false;
    }
    num_used += used[j] ^ 1;
    used[j] = 1;
  }
  return num_used == distinct.size();
}

// The combiner's divisor for an example whose kept weights sum to `sum`
// and whose squares sum to `sum_of_squares`; 0 when nothing was kept.
double Divisor(Combiner combiner, double sum, double sum_of_squares) {
  switch (combiner) {
    case Combiner::kSum:
      return sum > 0 ? 1.0 : 0.0;
    case Combiner::kMean:
      return sum;
    case Combiner::kSqrtn:
      return std::sqrt(sum_of_squares);
  }
  return 0.0;
}

}  // namespace

absl::Status CheckEmbeddingGroup(const Batch::Group& group, int64_t batch_size,
                                 int64_t buckets, absl::string_view name) {
  const int64_t num_ids = static_cast<int64_t>(group.ids.size());
  if (batch_size < 0 ||
      static_cast<int64_t>(group.offsets.size()) != batch_size + 1 ||
      group.offsets.front() != 0 || group.offsets.back() != num_ids) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding group \"", name, "\": ", group.offsets.size(),
        " offsets for a batch of ", batch_size, " examples and ", num_ids,
        " ids (expected ", batch_size + 1, ", from 0 to ", num_ids, ")"));
  }
  if (!group.weights.empty() &&
      static_cast<int64_t>(group.weights.size()) != num_ids) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding group \"", name, "\": ", group.weights.size(),
                     " weights for ", num_ids, " ids"));
  }
  for (int64_t b = 0; b < batch_size; ++b) {
    if (group.offsets[b + 1] < group.offsets[b]) {
      return absl::InvalidArgumentError(absl::StrCat("embedding group \"", name,
                                                     "\": example ", b,
                                                     "'s offsets decrease"));
    }
    for (int64_t k = group.offsets[b]; k < group.offsets[b + 1]; ++k) {
      const int64_t id = group.ids[k];
      if (buckets >= 1 && (id < 0 || id >= buckets)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "embedding group \"", name, "\": example ", b, " has id ", id,
            ", outside the group's [0, ", buckets, ")"));
      }
      if (!group.weights.empty() && !std::isfinite(group.weights[k])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "embedding group \"", name, "\": example ", b, ": id ", id,
            " has weight ", group.weights[k], ", which is not finite"));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<int64_t> DistinctGroupIds(const Batch::Group& group) {
  if (DistinctIdsMatch(group)) return group.distinct_ids;
  std::vector<int64_t> ids = group.ids;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

absl::StatusOr<EmbeddingBags> EmbeddingBags::Make(
    const Batch::Group& group, int64_t batch_size, Combiner combiner,
    const VariableSlice& table, int64_t dim, absl::string_view name) {
  EmbeddingBags bags;
  bags.batch_size_ = batch_size;
  bags.dim_ = dim;
  bags.offsets_ = group.offsets;
  bags.rows_.assign(group.ids.size(), -1);
  bags.factors_.assign(group.ids.size(), 0.0f);
  // Where the batch's own index of distinct ids is the table's, no search.
  const bool indexed =
      group.distinct_ids == table.ids && DistinctIdsMatch(group);
  for (int64_t b = 0; b < batch_size; ++b) {
    double sum = 0, sum_of_squares = 0;
    for (int64_t k = group.offsets[b]; k < group.offsets[b + 1]; ++k) {
      const double weight = group.weights.empty() ? 1.0 : group.weights[k];
      if (!(weight > 0)) continue;  // pruned, as TF does
      const int64_t id = group.ids[k];
      int64_t row;
      if (indexed) {
        row = group.distinct_index[k];
      } else {
        auto it = std::lower_bound(table.ids.begin(), table.ids.end(), id);
        if (it == table.ids.end() || *it != id) {
          return absl::InvalidArgumentError(
              absl::StrCat("embedding table \"", name, "\" has no row for id ",
                           id, " (example ", b, ")"));
        }
        row = it - table.ids.begin();
      }
      bags.rows_[k] = row;
      bags.factors_[k] = static_cast<float>(weight);
      sum += weight;
      sum_of_squares += weight * weight;
    }
    const double divisor = Divisor(combiner, sum, sum_of_squares);
    if (divisor <= 0) continue;  // no ids kept: zeros
    for (int64_t k = group.offsets[b]; k < group.offsets[b + 1]; ++k) {
      bags.factors_[k] = static_cast<float>(bags.factors_[k] / divisor);
    }
  }
  return bags;
}

std::vector<float> EmbeddingBags::Pool(const VariableSlice& table) const {
  std::vector<float> pooled(batch_size_ * dim_, 0.0f);
  for (int64_t b = 0; b < batch_size_; ++b) {
    float* out = pooled.data() + b * dim_;
    for (int64_t k = offsets_[b]; k < offsets_[b + 1]; ++k) {
      if (rows_[k] < 0) continue;
      const float* row = table.rows.data() + rows_[k] * dim_;
      const float factor = factors_[k];
      for (int64_t d = 0; d < dim_; ++d) out[d] += factor * row[d];
    }
  }
  return pooled;
}

VariableSlice EmbeddingBags::Scatter(
    const VariableSlice& table,
    const std::vector<float>& pooled_gradients) const {
  VariableSlice gradient;
  gradient.ids = table.ids;
  gradient.rows.assign(table.rows.size(), 0.0f);
  for (int64_t b = 0; b < batch_size_; ++b) {
    const float* in = pooled_gradients.data() + b * dim_;
    for (int64_t k = offsets_[b]; k < offsets_[b + 1]; ++k) {
      if (rows_[k] < 0) continue;
      float* row = gradient.rows.data() + rows_[k] * dim_;
      const float factor = factors_[k];
      for (int64_t d = 0; d < dim_; ++d) row[d] += factor * in[d];
    }
  }
  return gradient;
}

}  // namespace distrt
