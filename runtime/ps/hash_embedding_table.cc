#include "runtime/ps/hash_embedding_table.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/huge_pages.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxRowsPerBlock = int64_t{1} << 24;
// Big enough that the block lists and a block's allocation cost nothing per
// row; small enough that the block allocated ahead of the rows is no matter.
constexpr int64_t kDefaultBlockBytes = int64_t{4} << 20;

// How far ahead Pull and Push ask for the index's slots and the rows' memory.
constexpr size_t kIdsAhead = 8;
constexpr size_t kRowsAhead = 4;

// Rows an eviction sweep visits (or evicts) per pull or push: at least
// kSweepMin, so that a table of up to kExactRows rows (with those the call
// added) is swept whole by each call, evictions included; and kSweepPerRow
// per row the call touched, so the sweep keeps pace with the rows a stream
// creates.
// Visiting a row reads one int64: next to a row's update, little.
constexpr int64_t kSweepMin = 8192;
constexpr int64_t kSweepPerRow = 8;
constexpr int64_t kExactRows = kSweepMin / 2;
// Rows whose last update a sweep samples to find max_rows' cut-off step in
// a table of more than kExactRows rows (see StartSweep).
constexpr int64_t kCutOffSample = kExactRows;

uint64_t SeedOf(absl::string_view name) { return absl::HashOf(name); }

// Asks for the cache lines of the start of `row` (`dim` floats): of a wide
// row, the hardware's prefetcher fetches the rest once it is being read.
template <int kForWrite>
void PrefetchRow(const float* row, int64_t dim) {
  constexpr int64_t kCacheLine = 64;
  constexpr int64_t kMaxBytes = 512;
  const char* bytes = reinterpret_cast<const char*>(row);
  const int64_t n = dim * static_cast<int64_t>(sizeof(float));
  for (int64_t b = 0; b < n && b < kMaxBytes; b += kCacheLine) {
    __builtin_prefetch(bytes + b, kForWrite);
  }
}
void PrefetchForWrite(const float* row, int64_t dim) {
  PrefetchRow<1>(row, dim);
}
void PrefetchForRead(const float* row, int64_t dim) {
  PrefetchRow<0>(row, dim);
}

// A HashEmbeddingTable::Arena.
using Block = std::unique_ptr<float[], FreeRandomAccess>;
using Blocks = std::vector<Block>;

// A block of `floats` uninitialised floats, on huge pages from 2 MiB up:
// rows are read and updated at random.
Block NewBlock(int64_t floats) {
  void* memory = AllocateForRandomAccess(floats * sizeof(float));
  if (memory == nullptr) throw std::bad_alloc();  // as new float[] would
  return Block(static_cast<float*>(memory));
}

std::vector<float> SlotInitialValues(const OptimizerConfig& config) {
  const int num_slots = SlotNames(config.kind).size();
  std::vector<float> values;
  for (int s = 0; s < num_slots; ++s) {
    values.push_back(SlotInitialValue(config, s));
  }
  return values;
}

// The first `num_rows` rows of `blocks`, one after another.
std::vector<float> RowsOf(const Blocks& blocks, int64_t rows_per_block,
                          int64_t dim, int64_t num_rows) {
  std::vector<float> out;
  out.reserve(num_rows * dim);
  for (int64_t b = 0; b * rows_per_block < num_rows; ++b) {
    const int64_t rows =
        std::min(rows_per_block, num_rows - b * rows_per_block);
    out.insert(out.end(), blocks[b].get(), blocks[b].get() + rows * dim);
  }
  return out;
}

// Blocks holding `rows` (dim floats each, one after another), the last one
// filled only as far as the rows go. `rows` is taken by value so that a
// caller that moves it in has it freed as soon as it is copied.
Blocks ToBlocks(std::vector<float> rows, int64_t rows_per_block, int64_t dim) {
  const int64_t block_floats = rows_per_block * dim;
  const int64_t total = rows.size();
  Blocks blocks;
  blocks.reserve((total + block_floats - 1) / block_floats);
  for (int64_t first = 0; first < total; first += block_floats) {
    blocks.push_back(NewBlock(block_floats));
    std::copy(rows.begin() + first,
              rows.begin() + std::min(total, first + block_floats),
              blocks.back().get());
  }
  return blocks;
}

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

// Sorts the rows of `state` by id (`dim` floats a row).
void SortById(HashTableState& state, int64_t dim) {
  std::vector<size_t> order(state.ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&state](size_t a, size_t b) {
    return state.ids[a] < state.ids[b];
  });
  // One array at a time, so the extra memory is that of the largest.
  state.ids = Permuted(state.ids, order, 1);
  state.steps = Permuted(state.steps, order, 1);
  state.last_updated = Permuted(state.last_updated, order, 1);
  state.values = Permuted(state.values, order, dim);
  for (auto& slot : state.slots) slot = Permuted(slot, order, dim);
}

}  // namespace

std::vector<float> UnknownRowValues(const HashEmbeddingSpec& spec) {
  std::vector<float> row(spec.dim, 0.0f);
  if (spec.policy.admission.unknown == UnknownRow::kSharedRow) {
    // The initializer's draws from element index -1 on: the same on every
    // ps task. (They overlap the draws of ids -1 and 0, whose rows start at
    // id * dim: harmless, all are independent-looking random values.)
    constexpr int64_t kSharedRowIndex = -1;
    FillInitialValues(spec.initializer, kSharedRowIndex, absl::MakeSpan(row));
  }
  return row;
}

absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> HashEmbeddingTable::Create(
    const HashEmbeddingSpec& spec) {
  return Create(spec, Options());
}

absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> HashEmbeddingTable::Create(
    const HashEmbeddingSpec& spec, const Options& options) {
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
  if (absl::Status s = ValidateTablePolicy(spec.policy, spec.name); !s.ok()) {
    return s;
  }
  if (options.rows_per_block < 0 || options.rows_per_block > kMaxRowsPerBlock) {
    return invalid(absl::StrCat("rows_per_block ", options.rows_per_block,
                                " is not in 0..", kMaxRowsPerBlock));
  }
  const int64_t rows_per_block =
      options.rows_per_block > 0
          ? options.rows_per_block
          : std::max<int64_t>(
                1, kDefaultBlockBytes / (spec.dim * int64_t{sizeof(float)}));
  return std::unique_ptr<HashEmbeddingTable>(
      new HashEmbeddingTable(spec, rows_per_block));
}

HashEmbeddingTable::HashEmbeddingTable(HashEmbeddingSpec spec,
                                       int64_t rows_per_block)
    : spec_(std::move(spec)),
      rows_per_block_(rows_per_block),
      slot_initial_values_(SlotInitialValues(spec_.optimizer)),
      unknown_row_(UnknownRowValues(spec_)),
      rows_(EmptyRows()),
      random_(SeedOf(spec_.name)),
      sweep_random_(SeedOf(spec_.name) + 1) {
  if (spec_.policy.admission.kind == AdmissionKind::kMinCount) {
    sketch_ =
        std::make_unique<AdmissionSketch>(spec_.policy.admission.sketch_width);
  }
}

absl::Status HashEmbeddingTable::CheckSize(absl::string_view what, size_t ids,
                                           size_t values) const {
  if (values == ids * spec_.dim) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("hash embedding table \"", spec_.name, "\": ", what, " has ",
                   values, " values for ", ids, " ids, expected ",
                   ids * spec_.dim, " (dim ", spec_.dim, ")"));
}

HashEmbeddingTable::Rows HashEmbeddingTable::EmptyRows() const {
  Rows rows;
  rows.arenas.resize(1 + slot_initial_values_.size());
  return rows;
}

float* HashEmbeddingTable::RowIn(const Arena& arena, int64_t row) const {
  return arena[row / rows_per_block_].get() +
         (row % rows_per_block_) * spec_.dim;
}

int64_t HashEmbeddingTable::AppendRow(int64_t id) {
  const int64_t row = rows_.steps.size();
  if (row == static_cast<int64_t>(rows_.arenas[0].size()) * rows_per_block_) {
    // Left uninitialised: every row is written as it is created, and the
    // pages of rows not created yet stay untouched, so not resident.
    for (Arena& arena : rows_.arenas) {
      arena.push_back(NewBlock(rows_per_block_ * spec_.dim));
    }
  }
  rows_.ids.push_back(id);
  rows_.steps.push_back(0);
  rows_.last_updated.push_back(clock_);
  rows_.changed.push_back(true);
  rows_.held_at_mark.push_back(false);
  return row;
}

int64_t HashEmbeddingTable::CreateRow(int64_t id) {
  const int64_t row = AppendRow(id);
  rows_.index[id] = row;
  ++counters_.admitted;
  // The element index only feeds a hash: wrapping is harmless.
  const int64_t first_index = static_cast<int64_t>(
      static_cast<uint64_t>(id) * static_cast<uint64_t>(spec_.dim));
  FillInitialValues(spec_.initializer, first_index,
                    absl::MakeSpan(RowIn(rows_.arenas[0], row), spec_.dim));
  for (size_t s = 0; s < slot_initial_values_.size(); ++s) {
    std::fill_n(RowIn(rows_.arenas[1 + s], row), spec_.dim,
                slot_initial_values_[s]);
  }
  return row;
}

bool HashEmbeddingTable::BelowCeiling() const {
  // max_rows is kept by eviction after the fact; the ceiling bounds what a
  // burst of new ids can add before the sweep catches up.
  const int64_t max_rows = spec_.policy.eviction.max_rows;
  if (max_rows == 0) return true;
  const int64_t slack = std::max<int64_t>(kExactRows, max_rows / 16);
  if (max_rows > std::numeric_limits<int64_t>::max() - slack) return true;
  return rows_.steps.size() < max_rows + slack;
}

bool HashEmbeddingTable::AdmitOnPull(int64_t id) {
  const AdmissionPolicy& admission = spec_.policy.admission;
  switch (admission.kind) {
    case AdmissionKind::kAlways:
      return true;
    case AdmissionKind::kMinCount:
      return sketch_->Add(id) >= admission.min_count;
    case AdmissionKind::kProbability:
      return std::uniform_real_distribution<double>(0.0, 1.0)(random_) <
             admission.probability;
  }
  return true;
}

int64_t HashEmbeddingTable::FindOrAdmit(int64_t id, bool admit) {
  if (auto it = rows_.index.find(id); it != rows_.index.end()) {
    return it->second;
  }
  if (!admit || !BelowCeiling()) return -1;
  return CreateRow(id);
}

void HashEmbeddingTable::FindRows(absl::Span<const int64_t> ids, bool on_pull,
                                  std::vector<int64_t>& rows) {
  const bool admits_all = spec_.policy.admits_all();
  const int64_t* id = ids.data();  // not Span::operator[]: bound-checked
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + kIdsAhead < ids.size()) rows_.index.prefetch(id[i + kIdsAhead]);
    if (admits_all) {
      rows[i] = FindOrAdmit(id[i], true);
    } else if (auto it = rows_.index.find(id[i]); it != rows_.index.end()) {
      rows[i] = it->second;
    } else {
      // Pulls count and admit; a push to an id without a row is dropped.
      rows[i] = on_pull ? FindOrAdmit(id[i], AdmitOnPull(id[i])) : -1;
    }
    if (rows[i] < 0) {
      ++(on_pull ? counters_.unknown_lookups : counters_.dropped_pushes);
    }
  }
}

void HashEmbeddingTable::Touch(int64_t row) {
  rows_.changed[row] = true;
  rows_.last_updated[row] = clock_;
}

void HashEmbeddingTable::EvictRow(int64_t row) {
  const int64_t last = rows_.steps.size() - 1;
  rows_.index.erase(rows_.ids[row]);
  // Only rows the save mark saw: a row created since and gone again is in
  // no save, and the list stays bounded by the rows held at the mark (and
  // empty in a table never saved).
  if (rows_.held_at_mark[row]) removed_since_mark_.push_back(rows_.ids[row]);
  if (row != last) {
    for (Arena& arena : rows_.arenas) {
      std::copy_n(RowIn(arena, last), spec_.dim, RowIn(arena, row));
    }
    rows_.ids[row] = rows_.ids[last];
    rows_.steps[row] = rows_.steps[last];
    rows_.last_updated[row] = rows_.last_updated[last];
    rows_.changed[row] = rows_.changed[last];
    rows_.held_at_mark[row] = rows_.held_at_mark[last];
    rows_.index[rows_.ids[row]] = row;
  }
  rows_.changed.pop_back();
  rows_.held_at_mark.pop_back();
  rows_.ids.pop_back();
  rows_.steps.pop_back();
  rows_.last_updated.pop_back();
}

void HashEmbeddingTable::StartSweep() {
  sweep_.capacity_step = std::numeric_limits<int64_t>::min();
  sweep_.capacity_ties = 0;
  const int64_t max_rows = spec_.policy.eviction.max_rows;
  const int64_t rows = rows_.steps.size();
  const int64_t excess = rows - max_rows;
  if (max_rows == 0 || excess <= 0) return;
  // The last-update step below which the `excess` least recently updated
  // rows lie: exactly, from every row's, for a table that one call sweeps
  // whole; from a sample of kCutOffSample rows' for a larger one (a count
  // per step, kept up to date at every push, cost a hash-map update per
  // row pushed: a fifth of a Zipf step).
  std::vector<int64_t> steps;
  if (rows <= kExactRows) {
    steps.reserve(rows);
    for (int64_t row = 0; row < rows; ++row) {
      steps.push_back(rows_.last_updated[row]);
    }
    std::nth_element(steps.begin(), steps.begin() + (excess - 1), steps.end());
    sweep_.capacity_step = steps[excess - 1];
    const int64_t below = std::count_if(
        steps.begin(), steps.end(),
        [this](int64_t step) { return step < sweep_.capacity_step; });
    sweep_.capacity_ties = excess - below;
    return;
  }
  std::uniform_int_distribution<int64_t> any_row(0, rows - 1);
  steps.reserve(kCutOffSample);
  for (int64_t i = 0; i < kCutOffSample; ++i) {
    steps.push_back(rows_.last_updated[any_row(sweep_random_)]);
  }
  const int64_t k = std::min(kCutOffSample - 1, excess * kCutOffSample / rows);
  std::nth_element(steps.begin(), steps.begin() + k, steps.end());
  sweep_.capacity_step = steps[k];
  // Rows at the cut-off go while the table is over max_rows.
  sweep_.capacity_ties = excess;
}

bool HashEmbeddingTable::ShouldEvict(int64_t row) {
  const EvictionPolicy& eviction = spec_.policy.eviction;
  const int64_t updated = rows_.last_updated[row];
  if (eviction.ttl_steps.has_value() &&
      updated <= clock_ - *eviction.ttl_steps) {
    ++counters_.evicted_by_ttl;
    return true;
  }
  if (eviction.max_rows == 0 || rows_.steps.size() <= eviction.max_rows) {
    return false;
  }
  if (updated < sweep_.capacity_step ||
      (updated == sweep_.capacity_step && sweep_.capacity_ties > 0)) {
    if (updated == sweep_.capacity_step) --sweep_.capacity_ties;
    ++counters_.evicted_by_capacity;
    return true;
  }
  return false;
}

void HashEmbeddingTable::SweepSome(int64_t budget) {
  const EvictionPolicy& eviction = spec_.policy.eviction;
  const bool over_capacity =
      eviction.max_rows > 0 && rows_.steps.size() > eviction.max_rows;
  if (!over_capacity && !eviction.ttl_steps.has_value()) return;
  for (int64_t visited = 0; visited < budget; ++visited) {
    if (!sweep_.started) {
      StartSweep();
      sweep_.started = true;
    }
    if (sweep_.next >= rows_.steps.size()) {
      // Through: the next call starts a sweep with fresh cut-offs.
      sweep_ = Sweep();
      break;
    }
    if (ShouldEvict(sweep_.next)) {
      EvictRow(sweep_.next);  // the last row took its number: visit it next
    } else {
      ++sweep_.next;
    }
  }
  // A pass that ended on the budget's last visit is through too: its reset
  // must not wait for (and spend) the next call's first visit.
  if (sweep_.next >= rows_.steps.size()) sweep_ = Sweep();
  ReleaseSpareBlocks();
}

void HashEmbeddingTable::ReleaseSpareBlocks() {
  // One spare block is kept, so that a table at its max_rows does not
  // free and allocate a block at every eviction and admission.
  const int64_t rows = rows_.steps.size();
  const size_t needed = (rows + rows_per_block_ - 1) / rows_per_block_ + 1;
  for (Arena& arena : rows_.arenas) {
    while (arena.size() > needed) arena.pop_back();
  }
}

absl::Status HashEmbeddingTable::Pull(absl::Span<const int64_t> ids,
                                      absl::Span<float> out) {
  RETURN_IF_ERROR(CheckSize("the pull buffer", ids.size(), out.size()));
  const int64_t dim = spec_.dim;
  // As Push: the row numbers first, then the copies, each asking for the
  // memory of what comes a few steps later (ids of a large table are cache
  // misses twice, in the index and in the arena).
  std::vector<int64_t> rows(ids.size());
  float* to = out.data();
  absl::MutexLock lock(&mu_);
  FindRows(ids, /*on_pull=*/true, rows);
  Arena& values = rows_.arenas[0];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + kRowsAhead < ids.size() && rows[i + kRowsAhead] >= 0) {
      PrefetchForRead(RowIn(values, rows[i + kRowsAhead]), dim);
    }
    const float* row =
        rows[i] >= 0 ? RowIn(values, rows[i]) : unknown_row_.data();
    std::copy_n(row, dim, to + i * dim);
  }
  // After the copies: an eviction moves rows.
  SweepSome(std::max<int64_t>(kSweepMin, kSweepPerRow * ids.size()));
  return absl::OkStatus();
}

absl::Status HashEmbeddingTable::Push(absl::Span<const int64_t> ids,
                                      absl::Span<const float> grads,
                                      SparseIds ids_are, int64_t global_step) {
  RETURN_IF_ERROR(CheckSize("the gradient", ids.size(), grads.size()));
  const int64_t dim = spec_.dim;
  // The distinct ids in order of first appearance, and row j of
  // `summed_rows` the gradient of distinct[j]: `ids` and `grads` themselves
  // when the ids are distinct, which spares a copy. Found before taking the
  // lock, as is the summing, so that the lock is held for the updates only.
  absl::Span<const int64_t> distinct = ids;
  const float* summed_rows = grads.data();
  std::vector<int64_t> distinct_ids;
  std::vector<float> summed;
  if (ids_are == SparseIds::kMayRepeat) {
    // For each of `ids`, the position of its distinct id.
    std::vector<int64_t> distinct_of(ids.size());
    absl::flat_hash_map<int64_t, int64_t> position;
    position.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      auto [it, inserted] = position.try_emplace(ids[i], distinct_ids.size());
      if (inserted) distinct_ids.push_back(ids[i]);
      distinct_of[i] = it->second;
    }
    if (distinct_ids.size() < ids.size()) {
      summed.assign(distinct_ids.size() * dim, 0.0f);
      for (size_t i = 0; i < ids.size(); ++i) {
        float* sum = summed.data() + distinct_of[i] * dim;
        const float* grad = grads.data() + i * dim;
        for (int64_t k = 0; k < dim; ++k) sum[k] += grad[k];
      }
      summed_rows = summed.data();
    }
    distinct = distinct_ids;
  }
  // Under the lock, the row numbers first and then the updates, each asking
  // for the memory of what comes a few steps later: the rows lie scattered
  // over far more than the caches hold, and waiting for each in turn took
  // half the time of a push of 65536 ids of dim 64.
  std::vector<int64_t> rows(distinct.size());
  std::vector<absl::Span<float>> slots(slot_initial_values_.size());
  absl::MutexLock lock(&mu_);
  clock_ = global_step >= 0 ? std::max(clock_, global_step) : clock_ + 1;
  FindRows(distinct, /*on_pull=*/false, rows);
  for (size_t j = 0; j < distinct.size(); ++j) {
    const int64_t row = rows[j];
    if (row < 0) continue;  // not admitted: dropped (and counted)
    if (j + kRowsAhead < rows.size() && rows[j + kRowsAhead] >= 0) {
      const int64_t ahead = rows[j + kRowsAhead];
      for (Arena& arena : rows_.arenas) {
        PrefetchForWrite(RowIn(arena, ahead), dim);
      }
      // The row's step and last update are as far from the last row's.
      __builtin_prefetch(&rows_.steps[ahead], 1);
      __builtin_prefetch(&rows_.last_updated[ahead], 1);
    }
    for (size_t s = 0; s < slots.size(); ++s) {
      slots[s] = absl::MakeSpan(RowIn(rows_.arenas[1 + s], row), dim);
    }
    uint32_t& step = rows_.steps[row];
    if (step < std::numeric_limits<uint32_t>::max()) ++step;
    ApplyOptimizer(spec_.optimizer, step,
                   absl::MakeConstSpan(summed_rows + j * dim, dim),
                   absl::MakeSpan(RowIn(rows_.arenas[0], row), dim), slots);
    Touch(row);
  }
  SweepSome(std::max<int64_t>(kSweepMin, kSweepPerRow * distinct.size()));
  return absl::OkStatus();
}

HashTableState HashEmbeddingTable::CopyRows(bool changed_only) const {
  const int64_t dim = spec_.dim;
  const int64_t n = rows_.steps.size();
  HashTableState state;
  state.slots.resize(slot_initial_values_.size());
  state.clock = clock_;
  if (!changed_only) {
    rows_.ids.AppendTo(state.ids);
    rows_.steps.AppendTo(state.steps);
    rows_.last_updated.AppendTo(state.last_updated);
    state.values = RowsOf(rows_.arenas[0], rows_per_block_, dim, n);
    for (size_t s = 0; s < state.slots.size(); ++s) {
      state.slots[s] = RowsOf(rows_.arenas[1 + s], rows_per_block_, dim, n);
    }
    return state;
  }
  for (int64_t row = 0; row < n; ++row) {
    if (!rows_.changed[row]) continue;
    state.ids.push_back(rows_.ids[row]);
    state.steps.push_back(rows_.steps[row]);
    state.last_updated.push_back(rows_.last_updated[row]);
    const float* values = RowIn(rows_.arenas[0], row);
    state.values.insert(state.values.end(), values, values + dim);
    for (size_t s = 0; s < state.slots.size(); ++s) {
      const float* slot = RowIn(rows_.arenas[1 + s], row);
      state.slots[s].insert(state.slots[s].end(), slot, slot + dim);
    }
  }
  return state;
}

void HashEmbeddingTable::ClearChangedMarks() {
  std::fill(rows_.changed.begin(), rows_.changed.end(), false);
  std::fill(rows_.held_at_mark.begin(), rows_.held_at_mark.end(), true);
  removed_since_mark_.clear();
}

HashTableState HashEmbeddingTable::Export() const {
  HashTableState state;
  {
    // Copy in row order under the lock and sort afterwards, so that pushes
    // wait for a copy, not for a sort.
    absl::MutexLock lock(&mu_);
    state = CopyRows(/*changed_only=*/false);
  }
  SortById(state, spec_.dim);
  return state;
}

HashTableState HashEmbeddingTable::ExportAndMark() {
  HashTableState state;
  {
    absl::MutexLock lock(&mu_);
    state = CopyRows(/*changed_only=*/false);
    ClearChangedMarks();
  }
  SortById(state, spec_.dim);
  return state;
}

HashTableDelta HashEmbeddingTable::ExportChangesAndMark() {
  HashTableDelta delta;
  {
    absl::MutexLock lock(&mu_);
    delta.changed = CopyRows(/*changed_only=*/true);
    for (int64_t id : removed_since_mark_) {
      if (!rows_.index.contains(id)) delta.removed.push_back(id);
    }
    ClearChangedMarks();
  }
  SortById(delta.changed, spec_.dim);
  std::sort(delta.removed.begin(), delta.removed.end());
  delta.removed.erase(std::unique(delta.removed.begin(), delta.removed.end()),
                      delta.removed.end());
  return delta;
}

void HashEmbeddingTable::MarkSaved() {
  absl::MutexLock lock(&mu_);
  ClearChangedMarks();
}

absl::Status HashEmbeddingTable::Replace(HashTableState state) {
  const size_t n = state.ids.size();
  const int64_t dim = spec_.dim;
  auto invalid = [this](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("hash embedding table \"", spec_.name, "\": ", why));
  };
  RETURN_IF_ERROR(CheckSize("the replacement", n, state.values.size()));
  const std::vector<std::string> slot_names = SlotNames(spec_.optimizer.kind);
  if (state.slots.size() != slot_names.size()) {
    return invalid(absl::StrCat("the replacement has ", state.slots.size(),
                                " optimizer slots, expected ",
                                slot_names.size(), " (",
                                OptimizerName(spec_.optimizer.kind), ")"));
  }
  for (size_t s = 0; s < slot_names.size(); ++s) {
    RETURN_IF_ERROR(CheckSize(
        absl::StrCat("the replacement's slot \"", slot_names[s], "\""), n,
        state.slots[s].size()));
  }
  if (state.steps.size() != n) {
    return invalid(absl::StrCat("the replacement has ", state.steps.size(),
                                " steps for ", n, " ids"));
  }
  if (state.last_updated.empty()) state.last_updated.assign(n, state.clock);
  if (state.last_updated.size() != n) {
    return invalid(absl::StrCat("the replacement has ",
                                state.last_updated.size(),
                                " last-updated steps for ", n, " ids"));
  }
  // Build the new rows outside the lock; only the swap happens under it.
  // Row i of the state becomes row number i, in as many blocks as its rows
  // need, as AppendRow expects.
  Rows rows = EmptyRows();
  rows.index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (state.steps[i] < 0) {
      return invalid(absl::StrCat("the replacement's row ", state.ids[i],
                                  " has a negative step ", state.steps[i]));
    }
    if (!rows.index.try_emplace(state.ids[i], i).second) {
      return invalid(absl::StrCat("the replacement has row ", state.ids[i],
                                  " more than once"));
    }
  }
  // Each array of the state is freed once copied, so that no more than one
  // is held twice.
  rows.arenas[0] = ToBlocks(std::move(state.values), rows_per_block_, dim);
  for (size_t s = 0; s < state.slots.size(); ++s) {
    rows.arenas[1 + s] =
        ToBlocks(std::move(state.slots[s]), rows_per_block_, dim);
  }
  for (size_t i = 0; i < n; ++i) {
    rows.ids.push_back(state.ids[i]);
    rows.steps.push_back(static_cast<uint32_t>(std::min<int64_t>(
        state.steps[i], std::numeric_limits<uint32_t>::max())));
    rows.last_updated.push_back(state.last_updated[i]);
  }
  rows.changed.assign(n, true);
  rows.held_at_mark.assign(n, false);
  absl::MutexLock lock(&mu_);
  // A new row whose id the mark saw held is still one the mark saw.
  for (size_t i = 0; i < n; ++i) {
    auto old = rows_.index.find(rows.ids[i]);
    if (old != rows_.index.end() && rows_.held_at_mark[old->second]) {
      rows.held_at_mark[i] = true;
    }
  }
  std::swap(rows_, rows);
  // A table restored with more rows than its max_rows (or older ones than
  // its TTL) sheds them over the next pulls and pushes.
  sweep_ = Sweep();
  clock_ = state.clock;
  // The old rows, now in `rows`, that the new state drops are removed since
  // the save mark (a delta saved next must say so).
  for (int64_t row = 0; row < rows.ids.size(); ++row) {
    if (rows.held_at_mark[row] && !rows_.index.contains(rows.ids[row])) {
      removed_since_mark_.push_back(rows.ids[row]);
    }
  }
  // The old rows, now in `rows`, are freed after the lock is released.
  return absl::OkStatus();
}

int64_t HashEmbeddingTable::num_rows() const {
  absl::MutexLock lock(&mu_);
  return rows_.steps.size();
}

HashTableCounters HashEmbeddingTable::counters() const {
  absl::MutexLock lock(&mu_);
  HashTableCounters counters = counters_;
  counters.rows = rows_.steps.size();
  counters.clock = clock_;
  return counters;
}

int64_t HashEmbeddingTable::bytes_per_row() const {
  return spec_.dim * int64_t{sizeof(float)} *
         (1 + static_cast<int64_t>(slot_initial_values_.size()));
}

int64_t HashEmbeddingTable::bytes() const {
  // The rows held, as checkpoints and the ps's memory limit count them: the
  // up to one block per arena allocated ahead of the rows is left out.
  return num_rows() * bytes_per_row();
}

}  // namespace distrt
