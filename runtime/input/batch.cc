#include "runtime/input/batch.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

void IndexDistinct(absl::Span<const int64_t> ids,
                   std::vector<int64_t>& distinct_ids,
                   std::vector<int32_t>& distinct_index);

// Group g of every example, in CSR form (the examples were validated).
void FillGroup(absl::Span<const Example> examples, size_t g,
               Batch::Group& group) {
  size_t num_ids = 0;
  bool any_weights = false;
  for (const Example& example : examples) {
    num_ids += example.groups[g].ids.size();
    any_weights = any_weights || !example.groups[g].weights.empty();
  }
  group.offsets.reserve(examples.size() + 1);
  group.ids.reserve(num_ids);
  // Weights only when some example has them: an example without any then
  // weighs each of its ids 1, as GroupIds' empty weights mean.
  if (any_weights) group.weights.reserve(num_ids);
  group.offsets.push_back(0);
  for (const Example& example : examples) {
    const GroupIds& ids = example.groups[g];
    group.ids.insert(group.ids.end(), ids.ids.begin(), ids.ids.end());
    if (any_weights) {
      if (ids.weights.empty()) {
        group.weights.insert(group.weights.end(), ids.ids.size(), 1.0f);
      } else {
        group.weights.insert(group.weights.end(), ids.weights.begin(),
                             ids.weights.end());
      }
    }
    group.offsets.push_back(static_cast<int64_t>(group.ids.size()));
  }
  IndexDistinct(group.ids, group.distinct_ids, group.distinct_index);
}

}  // namespace

absl::StatusOr<Batch> MakeBatch(absl::Span<const Example> examples) {
  Batch batch;
  batch.size = static_cast<int64_t>(examples.size());
  batch.num_dense =
      examples.empty() ? 0 : static_cast<int64_t>(examples[0].dense.size());

  // Validate before allocating, so that the sizes below are exact.
  size_t num_sparse = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& example = examples[i];
    if (static_cast<int64_t>(example.dense.size()) != batch.num_dense) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, " has ", example.dense.size(),
                       " dense features, example 0 has ", batch.num_dense));
    }
    // An Example invariant; a violation would misalign the CSR arrays.
    if (example.ids.size() != example.values.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", i, " has ", example.ids.size(),
                       " sparse ids but ", example.values.size(), " values"));
    }
    num_sparse += example.ids.size();
    if (example.groups.size() != examples[0].groups.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example ", i, " has ", example.groups.size(),
          " embedding groups, example 0 has ", examples[0].groups.size()));
    }
    for (size_t g = 0; g < example.groups.size(); ++g) {
      const GroupIds& group = example.groups[g];
      if (!group.weights.empty() && group.weights.size() != group.ids.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "example ", i, " has ", group.ids.size(), " ids but ",
            group.weights.size(), " weights in embedding group ", g));
      }
    }
  }

  batch.labels.reserve(examples.size());
  batch.dense.reserve(examples.size() * batch.num_dense);
  batch.offsets.reserve(examples.size() + 1);
  batch.ids.reserve(num_sparse);
  batch.values.reserve(num_sparse);
  batch.offsets.push_back(0);
  for (const Example& example : examples) {
    batch.labels.push_back(example.label);
    batch.dense.insert(batch.dense.end(), example.dense.begin(),
                       example.dense.end());
    batch.ids.insert(batch.ids.end(), example.ids.begin(), example.ids.end());
    batch.values.insert(batch.values.end(), example.values.begin(),
                        example.values.end());
    batch.offsets.push_back(static_cast<int64_t>(batch.ids.size()));
  }
  IndexDistinctIds(batch);
  const size_t num_groups = examples.empty() ? 0 : examples[0].groups.size();
  batch.groups.resize(num_groups);
  for (size_t g = 0; g < num_groups; ++g) {
    FillGroup(examples, g, batch.groups[g]);
  }
  return batch;
}

namespace {

// The entries 0..ids.size()-1 ordered by id (stably), for ids whose range
// max - min spans at most 33 bits (feature ids of a model's vocabulary):
// a least-significant-digit radix sort, 11 bits per pass, linear where a
// comparison sort of a step's ids was the input thread's largest cost.
// nullopt for a wider range.
std::optional<std::vector<int32_t>> EntriesByIdRadix(
    absl::Span<const int64_t> ids) {
  constexpr int kDigitBits = 11;
  constexpr int kMaxPasses = 3;
  const auto [min, max] = std::minmax_element(ids.begin(), ids.end());
  const uint64_t range =
      static_cast<uint64_t>(*max) - static_cast<uint64_t>(*min);
  int passes = 0;
  while (passes < kMaxPasses + 1 && (range >> (passes * kDigitBits)) != 0) {
    ++passes;
  }
  if (passes > kMaxPasses) return std::nullopt;
  const size_t n = ids.size();
  std::vector<uint64_t> keys(n);
  for (size_t k = 0; k < n; ++k) {
    keys[k] = static_cast<uint64_t>(ids[k]) - static_cast<uint64_t>(*min);
  }
  std::vector<int32_t> order(n), next(n);
  for (size_t k = 0; k < n; ++k) order[k] = static_cast<int32_t>(k);
  std::vector<int32_t> start(size_t{1} << kDigitBits);
  for (int pass = 0; pass < passes; ++pass) {
    const int shift = pass * kDigitBits;
    const uint64_t mask = (uint64_t{1} << kDigitBits) - 1;
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < n; ++k) ++start[(keys[k] >> shift) & mask];
    int32_t sum = 0;
    for (int32_t& s : start) {
      const int32_t count = s;
      s = sum;
      sum += count;
    }
    for (const int32_t entry : order) {
      next[start[(keys[entry] >> shift) & mask]++] = entry;
    }
    order.swap(next);
  }
  return order;
}

void IndexDistinct(absl::Span<const int64_t> ids,
                   std::vector<int64_t>& distinct_ids,
                   std::vector<int32_t>& distinct_index) {
  distinct_ids.clear();
  distinct_index.clear();
  const size_t n = ids.size();
  if (n == 0 || n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return;
  }
  // Below a few hundred ids, the radix passes' 2048 counters cost more than
  // comparing.
  constexpr size_t kRadixFrom = 256;
  std::optional<std::vector<int32_t>> order;
  if (n >= kRadixFrom) order = EntriesByIdRadix(ids);
  if (!order.has_value()) {
    // Few ids, or ids spread over more than 2^33 (hashed ids): a
    // comparison sort.
    order.emplace(n);
    for (size_t k = 0; k < n; ++k) (*order)[k] = static_cast<int32_t>(k);
    std::sort(order->begin(), order->end(),
              [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
  }
  // Entries in id order give both: the distinct ids in order and where
  // each entry's id landed, without a search per entry.
  distinct_index.resize(n);
  for (const int32_t entry : *order) {
    const int64_t id = ids[entry];
    if (distinct_ids.empty() || distinct_ids.back() != id) {
      distinct_ids.push_back(id);
    }
    distinct_index[entry] = static_cast<int32_t>(distinct_ids.size() - 1);
  }
}

}  // namespace

void IndexDistinctIds(Batch& batch) {
  IndexDistinct(batch.ids, batch.distinct_ids, batch.distinct_index);
}

}  // namespace distrt
