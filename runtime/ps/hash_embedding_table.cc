#include "runtime/ps/hash_embedding_table.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;

// `v` rearranged so that element i is the old row order[i] (`width` elements
// per row).
template <typename T>
std::vector<T> Permuted(const std::vector<T>& v,
                        const std::vector<size_t>& order, int64_t width) {
  std::vector<T> out;
  out.reserve(v.size());
  for (size_t row : order) {
    out.insert(out.end(), v.begin() + row * width,
               v.begin() + (row + 1) * width);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> HashEmbeddingTable::Create(
    const HashEmbeddingSpec& spec) {
  auto invalid = [&spec](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("hash embedding table \"", spec.name, "\": ", why));
  };
  if (spec.name.empty()) return invalid("the name is empty");
  if (spec.dim < 1 || spec.dim > kMaxDim) {
    return invalid(absl::StrCat("dim ", spec.dim, " is not in 1..", kMaxDim));
  }
  if (absl::Status s = ValidateInitializer(spec.initializer); !s.ok()) {
    return invalid(s.message());
  }
  if (absl::Status s = ValidateOptimizerConfig(spec.optimizer); !s.ok()) {
    return invalid(s.message());
  }
  return std::unique_ptr<HashEmbeddingTable>(new HashEmbeddingTable(spec));
}

absl::Status HashEmbeddingTable::CheckSize(absl::string_view what, size_t ids,
                                           size_t values) const {
  if (values == ids * spec_.dim) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("hash embedding table \"", spec_.name, "\": ", what, " has ",
                   values, " values for ", ids, " ids, expected ",
                   ids * spec_.dim, " (dim ", spec_.dim, ")"));
}

HashEmbeddingTable::Row& HashEmbeddingTable::FindOrCreate(int64_t id) {
  auto [it, inserted] = rows_.try_emplace(id);
  Row& row = it->second;
  if (inserted) {
    row.values.resize(spec_.dim);
    // The element index only feeds a hash: wrapping is harmless.
    const int64_t first_index = static_cast<int64_t>(
        static_cast<uint64_t>(id) * static_cast<uint64_t>(spec_.dim));
    FillInitialValues(spec_.initializer, first_index,
                      absl::MakeSpan(row.values));
    const int num_slots = SlotNames(spec_.optimizer.kind).size();
    for (int s = 0; s < num_slots; ++s) {
      row.slots.emplace_back(spec_.dim, SlotInitialValue(spec_.optimizer, s));
    }
  }
  return row;
}

absl::Status HashEmbeddingTable::Pull(absl::Span<const int64_t> ids,
                                      absl::Span<float> out) {
  if (absl::Status s = CheckSize("the pull buffer", ids.size(), out.size());
      !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const Row& row = FindOrCreate(ids[i]);
    std::copy(row.values.begin(), row.values.end(),
              out.begin() + i * spec_.dim);
  }
  return absl::OkStatus();
}

absl::Status HashEmbeddingTable::Push(absl::Span<const int64_t> ids,
                                      absl::Span<const float> grads) {
  if (absl::Status s = CheckSize("the gradient", ids.size(), grads.size());
      !s.ok()) {
    return s;
  }
  const int64_t dim = spec_.dim;
  absl::flat_hash_map<int64_t, std::vector<float>> summed;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<float>& sum = summed[ids[i]];
    if (sum.empty()) sum.assign(dim, 0.0f);
    for (int64_t k = 0; k < dim; ++k) sum[k] += grads[i * dim + k];
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [id, grad] : summed) {
    Row& row = FindOrCreate(id);
    ++row.step;
    std::vector<absl::Span<float>> slots;
    for (auto& slot : row.slots) slots.push_back(absl::MakeSpan(slot));
    ApplyOptimizer(spec_.optimizer, row.step, grad, absl::MakeSpan(row.values),
                   slots);
  }
  return absl::OkStatus();
}

HashTableState HashEmbeddingTable::Export() const {
  const int64_t dim = spec_.dim;
  const size_t num_slots = SlotNames(spec_.optimizer.kind).size();
  HashTableState state;
  state.slots.resize(num_slots);
  {
    // Copy in the map's order under the lock and sort afterwards, so that
    // pushes wait for a copy, not for a sort.
    absl::MutexLock lock(&mu_);
    state.ids.reserve(rows_.size());
    state.steps.reserve(rows_.size());
    state.values.reserve(rows_.size() * dim);
    for (auto& slot : state.slots) slot.reserve(rows_.size() * dim);
    for (const auto& [id, row] : rows_) {
      state.ids.push_back(id);
      state.steps.push_back(row.step);
      state.values.insert(state.values.end(), row.values.begin(),
                          row.values.end());
      for (size_t s = 0; s < num_slots; ++s) {
        state.slots[s].insert(state.slots[s].end(), row.slots[s].begin(),
                              row.slots[s].end());
      }
    }
  }
  std::vector<size_t> order(state.ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&state](size_t a, size_t b) {
    return state.ids[a] < state.ids[b];
  });
  // One array at a time, so the extra memory is that of the largest.
  state.ids = Permuted(state.ids, order, 1);
  state.steps = Permuted(state.steps, order, 1);
  state.values = Permuted(state.values, order, dim);
  for (auto& slot : state.slots) slot = Permuted(slot, order, dim);
  return state;
}

absl::Status HashEmbeddingTable::Replace(HashTableState state) {
  const size_t n = state.ids.size();
  const int64_t dim = spec_.dim;
  auto invalid = [this](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("hash embedding table \"", spec_.name, "\": ", why));
  };
  if (absl::Status s = CheckSize("the replacement", n, state.values.size());
      !s.ok()) {
    return s;
  }
  const std::vector<std::string> slot_names = SlotNames(spec_.optimizer.kind);
  if (state.slots.size() != slot_names.size()) {
    return invalid(absl::StrCat("the replacement has ", state.slots.size(),
                                " optimizer slots, expected ",
                                slot_names.size(), " (",
                                OptimizerName(spec_.optimizer.kind), ")"));
  }
  for (size_t s = 0; s < slot_names.size(); ++s) {
    if (absl::Status status = CheckSize(
            absl::StrCat("the replacement's slot \"", slot_names[s], "\""), n,
            state.slots[s].size());
        !status.ok()) {
      return status;
    }
  }
  if (state.steps.size() != n) {
    return invalid(absl::StrCat("the replacement has ", state.steps.size(),
                                " steps for ", n, " ids"));
  }
  // Build the new rows outside the lock; only the swap happens under it.
  absl::flat_hash_map<int64_t, Row> rows;
  rows.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (state.steps[i] < 0) {
      return invalid(absl::StrCat("the replacement's row ", state.ids[i],
                                  " has a negative step ", state.steps[i]));
    }
    auto [it, inserted] = rows.try_emplace(state.ids[i]);
    if (!inserted) {
      return invalid(absl::StrCat("the replacement has row ", state.ids[i],
                                  " more than once"));
    }
    Row& row = it->second;
    const auto first = state.values.begin() + i * dim;
    row.values.assign(first, first + dim);
    for (const auto& slot : state.slots) {
      row.slots.emplace_back(slot.begin() + i * dim,
                             slot.begin() + (i + 1) * dim);
    }
    row.step = state.steps[i];
  }
  absl::MutexLock lock(&mu_);
  rows_.swap(rows);
  // The old rows, now in `rows`, are freed after the lock is released.
  return absl::OkStatus();
}

int64_t HashEmbeddingTable::num_rows() const {
  absl::MutexLock lock(&mu_);
  return rows_.size();
}

int64_t HashEmbeddingTable::bytes_per_row() const {
  return spec_.dim * int64_t{sizeof(float)} *
         (1 + static_cast<int64_t>(SlotNames(spec_.optimizer.kind).size()));
}

int64_t HashEmbeddingTable::bytes() const {
  return num_rows() * bytes_per_row();
}

}  // namespace distrt
