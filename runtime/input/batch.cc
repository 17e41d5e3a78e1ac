#include "runtime/input/batch.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distrt {

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
  return batch;
}

void IndexDistinctIds(Batch& batch) {
  batch.distinct_ids.clear();
  batch.distinct_index.clear();
  const size_t n = batch.ids.size();
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) return;
  // One sort of (id, entry) pairs gives both: the distinct ids in order and
  // where each entry's id landed, without a search per entry.
  std::vector<std::pair<int64_t, int32_t>> entries(n);
  for (size_t k = 0; k < n; ++k) {
    entries[k] = {batch.ids[k], static_cast<int32_t>(k)};
  }
  std::sort(entries.begin(), entries.end());
  batch.distinct_index.resize(n);
  for (const auto& [id, entry] : entries) {
    if (batch.distinct_ids.empty() || batch.distinct_ids.back() != id) {
      batch.distinct_ids.push_back(id);
    }
    batch.distinct_index[entry] =
        static_cast<int32_t>(batch.distinct_ids.size() - 1);
  }
}

}  // namespace distrt
