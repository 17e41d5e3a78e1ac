#include "runtime/ps/variable_store.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/util/huge_pages.h"
#include "runtime/util/status_macros.h"

namespace distrt {

struct VariableStore::Variable {
  Variable(VariableSpec s, RowRange r)
      : spec(std::move(s)), rows(r), width(RowWidth(spec)) {}

  const VariableSpec spec;
  const RowRange rows;
  const int64_t width;
  int64_t bytes = 0;  // constant after Create

  mutable absl::Mutex mu;
  std::vector<float> values ABSL_GUARDED_BY(mu);
  std::vector<int64_t> ints ABSL_GUARDED_BY(mu);
  std::vector<std::vector<float>> slots ABSL_GUARDED_BY(mu);
  int64_t step ABSL_GUARDED_BY(mu) = 0;

  // Offset of whole-variable row `row` in values.
  int64_t Offset(int64_t row) const { return (row - rows.begin) * width; }
};

absl::Status CheckRowsHeld(const VariableSpec& spec, RowRange held,
                           RowRange rows) {
  if (rows.begin < held.begin || rows.end > held.end || rows.begin > rows.end) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable \"", spec.name, "\": rows ", RowRangeString(rows),
        " are not within the rows held here ", RowRangeString(held)));
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckLength(const VariableSpec& spec, absl::string_view what,
                         size_t expected, size_t given) {
  if (expected == given) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "variable \"", spec.name, "\": ", what, " has ", given,
      " values, expected ", expected, " (row width ", RowWidth(spec), ")"));
}

absl::Status CheckDType(const VariableSpec& spec, DType wanted) {
  if (spec.dtype == wanted) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("variable \"", spec.name, "\" is ", DTypeName(spec.dtype),
                   ", not ", DTypeName(wanted)));
}

absl::Status CheckIds(const VariableSpec& spec, RowRange held,
                      absl::Span<const int64_t> ids) {
  // The common case, every id held, without a branch per id (a step's
  // pull and push check every id they carry); the first id outside is
  // looked for only to name it.
  int64_t lowest = std::numeric_limits<int64_t>::max();
  int64_t highest = std::numeric_limits<int64_t>::min();
  for (int64_t id : ids) {
    lowest = std::min(lowest, id);
    highest = std::max(highest, id);
  }
  if (ids.empty() || (lowest >= held.begin && highest < held.end)) {
    return absl::OkStatus();
  }
  for (int64_t id : ids) {
    if (id < held.begin || id >= held.end) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable \"", spec.name, "\": row id ", id,
          " is not within the rows held here ", RowRangeString(held)));
    }
  }
  return absl::OkStatus();
}

std::vector<absl::Span<float>> SlotSpans(std::vector<std::vector<float>>& slots,
                                         int64_t offset, int64_t length) {
  std::vector<absl::Span<float>> spans;
  for (auto& slot : slots) {
    spans.push_back(absl::MakeSpan(slot).subspan(offset, length));
  }
  return spans;
}

}  // namespace

absl::StatusOr<VariableInfo> VariableStore::Create(const VariableSpec& spec,
                                                   RowRange rows) {
  RETURN_IF_ERROR(ValidateVariableSpec(spec));
  RETURN_IF_ERROR(CheckRowsHeld(spec, {0, NumRows(spec)}, rows));
  const int64_t elements = rows.size() * RowWidth(spec);
  const int num_slots =
      spec.dtype == DType::kFloat32 ? SlotNames(spec.optimizer.kind).size() : 0;
  const int64_t bytes = elements * DTypeSize(spec.dtype) * (1 + num_slots);

  absl::MutexLock lock(&mu_);
  if (auto it = variables_.find(spec.name); it != variables_.end()) {
    const Variable& existing = *it->second;
    std::string diff = DescribeSpecDifference(existing.spec, spec);
    if (!(existing.rows == rows)) {
      absl::StrAppend(&diff, diff.empty() ? "" : ", ", "rows ",
                      RowRangeString(existing.rows), " vs ",
                      RowRangeString(rows));
    }
    if (!diff.empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("variable \"", spec.name,
                       "\" already exists with a different spec: ", diff));
    }
    return InfoOf(existing);
  }
  if (bytes > options_.max_bytes - total_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "variable \"", spec.name, "\": ", bytes, " bytes would exceed this ",
        "parameter server's limit (", total_bytes_, " of ", options_.max_bytes,
        " bytes in use)"));
  }
  auto variable = std::make_shared<Variable>(spec, rows);
  variable->bytes = bytes;
  {
    absl::MutexLock variable_lock(&variable->mu);
    if (spec.dtype == DType::kInt64) {
      variable->ints.assign(elements, 0);
    } else {
      // Rows are read and updated at random: each array on huge pages,
      // asked for before its first write.
      variable->values.reserve(elements);
      AdviseHugePages(variable->values.data(), elements * sizeof(float));
      variable->values.resize(elements);
      FillInitialValues(spec.initializer, rows.begin * RowWidth(spec),
                        absl::MakeSpan(variable->values));
      variable->slots.resize(num_slots);
      for (int s = 0; s < num_slots; ++s) {
        std::vector<float>& slot = variable->slots[s];
        slot.reserve(elements);
        AdviseHugePages(slot.data(), elements * sizeof(float));
        slot.assign(elements, SlotInitialValue(spec.optimizer, s));
      }
    }
  }
  variables_[spec.name] = variable;
  total_bytes_ += bytes;
  return VariableInfo{spec, rows, bytes, 0};
}

absl::StatusOr<std::shared_ptr<VariableStore::Variable>> VariableStore::Find(
    absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = variables_.find(name);
  if (it == variables_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "variable \"", name, "\" is not on this parameter server"));
  }
  return it->second;
}

VariableInfo VariableStore::InfoOf(const Variable& v) {
  absl::MutexLock lock(&v.mu);
  return VariableInfo{v.spec, v.rows, v.bytes, v.step};
}

absl::StatusOr<std::shared_ptr<VariableStore::Variable>>
VariableStore::FindChecked(absl::string_view name, DType dtype,
                           const Access& access, absl::string_view what,
                           size_t values) const {
  absl::StatusOr<std::shared_ptr<Variable>> found = Find(name);
  RETURN_IF_ERROR(found.status());
  const Variable& v = **found;
  RETURN_IF_ERROR(CheckDType(v.spec, dtype));
  const RowRange* rows = std::get_if<RowRange>(&access);
  absl::Status s = rows != nullptr
                       ? CheckRowsHeld(v.spec, v.rows, *rows)
                       : CheckIds(v.spec, v.rows,
                                  std::get<absl::Span<const int64_t>>(access));
  RETURN_IF_ERROR(s);
  const int64_t num_rows =
      rows != nullptr ? rows->size()
                      : std::get<absl::Span<const int64_t>>(access).size();
  if (s = CheckLength(v.spec, what, num_rows * v.width, values); !s.ok()) {
    return s;
  }
  return found;
}

absl::StatusOr<VariableInfo> VariableStore::Lookup(
    absl::string_view name) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Variable> v, Find(name));
  return InfoOf(*v);
}

std::vector<VariableInfo> VariableStore::List() const {
  std::vector<std::shared_ptr<Variable>> all;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& entry : variables_) all.push_back(entry.second);
  }
  std::vector<VariableInfo> infos;
  for (const auto& v : all) infos.push_back(InfoOf(*v));
  std::sort(infos.begin(), infos.end(),
            [](const VariableInfo& a, const VariableInfo& b) {
              return a.spec.name < b.spec.name;
            });
  return infos;
}

int64_t VariableStore::TotalBytes() const {
  absl::MutexLock lock(&mu_);
  return total_bytes_;
}

absl::StatusOr<VariableState> VariableStore::Snapshot(
    absl::string_view name) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Variable> found, Find(name));
  const Variable& v = *found;
  absl::MutexLock lock(&v.mu);
  return VariableState{v.step, v.values, v.ints, v.slots};
}

absl::Status VariableStore::Replace(absl::string_view name,
                                    VariableState state) {
  ASSIGN_OR_RETURN(std::shared_ptr<Variable> found, Find(name));
  Variable& v = *found;
  const int64_t elements = v.rows.size() * v.width;
  const bool is_float = v.spec.dtype == DType::kFloat32;
  if (state.step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable \"", v.spec.name, "\": step ", state.step, " is negative"));
  }
  absl::Status s =
      CheckLength(v.spec, "the replacement", elements,
                  is_float ? state.values.size() : state.ints.size());
  RETURN_IF_ERROR(s);
  s = CheckLength(v.spec,
                  is_float ? "the replacement's int64 part"
                           : "the replacement's float32 part",
                  0, is_float ? state.ints.size() : state.values.size());
  RETURN_IF_ERROR(s);
  const std::vector<std::string> slot_names =
      is_float ? SlotNames(v.spec.optimizer.kind) : std::vector<std::string>();
  if (state.slots.size() != slot_names.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", v.spec.name, "\": the replacement has ",
                     state.slots.size(), " optimizer slots, expected ",
                     slot_names.size(), " (",
                     is_float ? OptimizerName(v.spec.optimizer.kind)
                              : absl::string_view("int64 variables have none"),
                     ")"));
  }
  for (size_t i = 0; i < slot_names.size(); ++i) {
    s = CheckLength(
        v.spec, absl::StrCat("the replacement's slot \"", slot_names[i], "\""),
        elements, state.slots[i].size());
    RETURN_IF_ERROR(s);
  }
  absl::MutexLock lock(&v.mu);
  v.step = state.step;
  v.values.swap(state.values);
  v.ints.swap(state.ints);
  v.slots.swap(state.slots);
  // The old contents, now in `state`, are freed after the lock is released.
  return absl::OkStatus();
}

absl::Status VariableStore::PullRows(absl::string_view name, RowRange rows,
                                     absl::Span<float> out) const {
  ASSIGN_OR_RETURN(
      std::shared_ptr<Variable> found,
      FindChecked(name, DType::kFloat32, rows, "the pull buffer", out.size()));
  const Variable& v = *found;
  absl::MutexLock lock(&v.mu);
  std::copy_n(v.values.begin() + v.Offset(rows.begin), out.size(), out.begin());
  return absl::OkStatus();
}

absl::Status VariableStore::PushRows(absl::string_view name, RowRange rows,
                                     absl::Span<const float> grad) {
  // One piece: the same staged apply as a received gradient's.
  const absl::Span<const char> bytes(reinterpret_cast<const char*>(grad.data()),
                                     grad.size() * sizeof(float));
  return PushRows(name, rows, absl::MakeConstSpan(&bytes, 1));
}

absl::Status VariableStore::PushRows(
    absl::string_view name, RowRange rows,
    absl::Span<const absl::Span<const char>> grad_bytes) {
  size_t bytes = 0;
  for (absl::Span<const char> piece : grad_bytes) bytes += piece.size();
  if (bytes % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the gradient of variable \"", name, "\" has ", bytes,
                     " bytes, not a whole number of float32 elements"));
  }
  const size_t elements = bytes / sizeof(float);
  ASSIGN_OR_RETURN(
      std::shared_ptr<Variable> found,
      FindChecked(name, DType::kFloat32, rows, "the gradient", elements));
  Variable& v = *found;
  // 16 KiB: the staged gradient, its values and slots stay in L1/L2 while
  // the optimizer runs over them.
  constexpr size_t kStageElements = 4096;
  alignas(64) float stage[kStageElements];
  absl::MutexLock lock(&v.mu);
  ++v.step;
  const int64_t offset = v.Offset(rows.begin);
  const std::vector<absl::Span<float>> slots =
      SlotSpans(v.slots, offset, elements);
  std::vector<absl::Span<float>> stage_slots(slots.size());
  auto piece = grad_bytes.begin();
  size_t piece_at = 0;  // bytes of *piece already read
  for (size_t done = 0; done < elements;) {
    const size_t n = std::min(kStageElements, elements - done);
    char* to = reinterpret_cast<char*>(stage);
    for (size_t want = n * sizeof(float); want > 0;) {
      if (piece_at == piece->size()) {
        ++piece;
        piece_at = 0;
        continue;
      }
      const size_t take = std::min(want, piece->size() - piece_at);
      std::memcpy(to, piece->data() + piece_at, take);
      to += take;
      piece_at += take;
      want -= take;
    }
    for (size_t i = 0; i < slots.size(); ++i) {
      stage_slots[i] = slots[i].subspan(done, n);
    }
    ApplyOptimizer(v.spec.optimizer, v.step, absl::MakeConstSpan(stage, n),
                   absl::MakeSpan(v.values).subspan(offset + done, n),
                   stage_slots);
    done += n;
  }
  return absl::OkStatus();
}

absl::Status VariableStore::PullInt64(absl::string_view name, RowRange rows,
                                      absl::Span<int64_t> out) const {
  ASSIGN_OR_RETURN(
      std::shared_ptr<Variable> found,
      FindChecked(name, DType::kInt64, rows, "the pull buffer", out.size()));
  const Variable& v = *found;
  absl::MutexLock lock(&v.mu);
  std::copy_n(v.ints.begin() + v.Offset(rows.begin), out.size(), out.begin());
  return absl::OkStatus();
}

absl::Status VariableStore::AddInt64(absl::string_view name, RowRange rows,
                                     absl::Span<const int64_t> delta,
                                     absl::Span<int64_t> after) {
  if (!after.empty() && after.size() != delta.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", name, "\": room for ", after.size(),
                     " values after the add of ", delta.size()));
  }
  ASSIGN_OR_RETURN(
      std::shared_ptr<Variable> found,
      FindChecked(name, DType::kInt64, rows, "the increment", delta.size()));
  Variable& v = *found;
  absl::MutexLock lock(&v.mu);
  const int64_t offset = v.Offset(rows.begin);
  // Checked before anything is added, so that an increment that would
  // overflow (a counter pushed a huge delta) changes nothing.
  for (size_t i = 0; i < delta.size(); ++i) {
    int64_t sum;
    if (__builtin_add_overflow(v.ints[offset + i], delta[i], &sum)) {
      return absl::OutOfRangeError(absl::StrCat(
          "variable \"", name, "\" element ", rows.begin + i, ": ",
          v.ints[offset + i], " + ", delta[i], " overflows int64"));
    }
  }
  ++v.step;
  for (size_t i = 0; i < delta.size(); ++i) v.ints[offset + i] += delta[i];
  std::copy_n(v.ints.begin() + offset, after.size(), after.begin());
  return absl::OkStatus();
}

absl::Status VariableStore::AssignRows(absl::string_view name, RowRange rows,
                                       absl::Span<const float> values) {
  ASSIGN_OR_RETURN(std::shared_ptr<Variable> found,
                   FindChecked(name, DType::kFloat32, rows,
                               "the assigned value", values.size()));
  Variable& v = *found;
  absl::MutexLock lock(&v.mu);
  std::copy(values.begin(), values.end(),
            v.values.begin() + v.Offset(rows.begin));
  return absl::OkStatus();
}

absl::Status VariableStore::AddRows(absl::string_view name, RowRange rows,
                                    absl::Span<const float> delta) {
  ASSIGN_OR_RETURN(std::shared_ptr<Variable> found,
                   FindChecked(name, DType::kFloat32, rows, "the added value",
                               delta.size()));
  Variable& v = *found;
  absl::MutexLock lock(&v.mu);
  float* values = v.values.data() + v.Offset(rows.begin);
  const float* add = delta.data();  // not Span::operator[]: see PullSparse
  for (size_t i = 0; i < delta.size(); ++i) values[i] += add[i];
  return absl::OkStatus();
}

absl::Status VariableStore::AssignInt64(absl::string_view name, RowRange rows,
                                        absl::Span<const int64_t> values) {
  ASSIGN_OR_RETURN(std::shared_ptr<Variable> found,
                   FindChecked(name, DType::kInt64, rows, "the assigned value",
                               values.size()));
  Variable& v = *found;
  absl::MutexLock lock(&v.mu);
  std::copy(values.begin(), values.end(),
            v.ints.begin() + v.Offset(rows.begin));
  return absl::OkStatus();
}

absl::Status VariableStore::PullSparse(absl::string_view name,
                                       absl::Span<const int64_t> ids,
                                       absl::Span<float> out) const {
  ASSIGN_OR_RETURN(
      std::shared_ptr<Variable> found,
      FindChecked(name, DType::kFloat32, ids, "the pull buffer", out.size()));
  const Variable& v = *found;
  absl::MutexLock lock(&v.mu);
  // Scattered rows of a large variable are cache misses: the row a few ids
  // later is prefetched while this one is copied (as ApplyOptimizerToRows
  // does), and rows of one value are copied without a call to memmove.
  // Raw pointers, not Span::operator[], which Debian's hardened Abseil
  // bound-checks on every call (a logreg pull is one float per id).
  // 1-wide rows' copies are one load each: twice as far ahead.
  const size_t prefetch_ahead = v.width == 1 ? 16 : 8;
  const float* values = v.values.data();
  const int64_t* id = ids.data();
  float* to = out.data();
  const size_t n = ids.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + prefetch_ahead < n) {
      __builtin_prefetch(values + v.Offset(id[i + prefetch_ahead]));
    }
    const float* row = values + v.Offset(id[i]);
    if (v.width == 1) {
      to[i] = *row;
    } else {
      std::copy_n(row, v.width, to + i * v.width);
    }
  }
  return absl::OkStatus();
}

absl::Status VariableStore::PushSparse(absl::string_view name,
                                       absl::Span<const int64_t> ids,
                                       absl::Span<const float> grads,
                                       SparseIds ids_are) {
  ASSIGN_OR_RETURN(
      std::shared_ptr<Variable> found,
      FindChecked(name, DType::kFloat32, ids, "the gradient", grads.size()));
  Variable& v = *found;
  // Distinct ids (as PsClient sends them, or in increasing order): nothing
  // to sum, and the rows are updated straight from `grads`. Others (e.g.
  // several replicas' ids gathered by another sender) are summed per
  // distinct id first, outside the lock.
  const bool distinct = ids_are == SparseIds::kDistinct ||
                        std::adjacent_find(ids.begin(), ids.end(),
                                           std::greater_equal<>()) == ids.end();
  std::vector<int64_t> unique_ids;
  std::vector<float> summed;
  if (!distinct) {
    absl::flat_hash_map<int64_t, size_t> slot_of_id;
    slot_of_id.reserve(ids.size());
    unique_ids.reserve(ids.size());
    summed.reserve(ids.size() * v.width);
    for (size_t i = 0; i < ids.size(); ++i) {
      auto [it, inserted] = slot_of_id.emplace(ids[i], unique_ids.size());
      const float* grad = grads.data() + i * v.width;
      if (inserted) {
        unique_ids.push_back(ids[i]);
        summed.insert(summed.end(), grad, grad + v.width);
      } else {
        float* row = summed.data() + it->second * v.width;
        for (int64_t k = 0; k < v.width; ++k) row[k] += grad[k];
      }
    }
    ids = unique_ids;
    grads = summed;
  }
  std::vector<int64_t> offsets(ids.size());
  const int64_t* id = ids.data();
  for (size_t i = 0; i < offsets.size(); ++i) offsets[i] = v.Offset(id[i]);
  std::vector<float*> slots(v.slots.size());
  absl::MutexLock lock(&v.mu);
  ++v.step;
  for (size_t k = 0; k < slots.size(); ++k) slots[k] = v.slots[k].data();
  ApplyOptimizerToRows(v.spec.optimizer, v.step, v.width, grads, offsets,
                       v.values.data(), slots);
  return absl::OkStatus();
}

}  // namespace distrt
