#include "runtime/ps/hash_embedding_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;

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

int64_t HashEmbeddingTable::num_rows() const {
  absl::MutexLock lock(&mu_);
  return rows_.size();
}

int64_t HashEmbeddingTable::bytes() const {
  const int64_t per_row =
      spec_.dim * sizeof(float) * (1 + SlotNames(spec_.optimizer.kind).size());
  return num_rows() * per_row;
}

}  // namespace distrt
