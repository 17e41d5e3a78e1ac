#include "runtime/ps/hash_embedding_table.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace

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
      rows_(EmptyRows()) {}

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

float* HashEmbeddingTable::RowIn(Arena& arena, int64_t row) const {
  return arena[row / rows_per_block_].get() +
         (row % rows_per_block_) * spec_.dim;
}

int64_t HashEmbeddingTable::AppendRow() {
  const int64_t row = rows_.steps.size();
  if (row == static_cast<int64_t>(rows_.arenas[0].size()) * rows_per_block_) {
    // Left uninitialised: every row is written as it is created, and the
    // pages of rows not created yet stay untouched, so not resident.
    for (Arena& arena : rows_.arenas) {
      arena.push_back(NewBlock(rows_per_block_ * spec_.dim));
    }
  }
  rows_.steps.push_back(0);
  return row;
}

int64_t HashEmbeddingTable::FindOrCreate(int64_t id) {
  auto [it, inserted] = rows_.index.try_emplace(id, 0);
  if (!inserted) return it->second;
  const int64_t row = AppendRow();
  it->second = row;
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

absl::Status HashEmbeddingTable::Pull(absl::Span<const int64_t> ids,
                                      absl::Span<float> out) {
  RETURN_IF_ERROR(CheckSize("the pull buffer", ids.size(), out.size()));
  const int64_t dim = spec_.dim;
  // As Push: the row numbers first, then the copies, each asking for the
  // memory of what comes a few steps later (ids of a large table are cache
  // misses twice, in the index and in the arena).
  std::vector<int64_t> rows(ids.size());
  const int64_t* id = ids.data();  // not Span::operator[]: bound-checked
  float* to = out.data();
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + kIdsAhead < ids.size()) rows_.index.prefetch(id[i + kIdsAhead]);
    rows[i] = FindOrCreate(id[i]);
  }
  Arena& values = rows_.arenas[0];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + kRowsAhead < ids.size()) {
      PrefetchForRead(RowIn(values, rows[i + kRowsAhead]), dim);
    }
    const float* row = RowIn(values, rows[i]);
    std::copy_n(row, dim, to + i * dim);
  }
  return absl::OkStatus();
}

absl::Status HashEmbeddingTable::Push(absl::Span<const int64_t> ids,
                                      absl::Span<const float> grads,
                                      SparseIds ids_are) {
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
  for (size_t j = 0; j < distinct.size(); ++j) {
    if (j + kIdsAhead < distinct.size()) {
      rows_.index.prefetch(distinct[j + kIdsAhead]);
    }
    rows[j] = FindOrCreate(distinct[j]);
  }
  for (size_t j = 0; j < distinct.size(); ++j) {
    if (j + kRowsAhead < rows.size()) {
      for (Arena& arena : rows_.arenas) {
        PrefetchForWrite(RowIn(arena, rows[j + kRowsAhead]), dim);
      }
    }
    const int64_t row = rows[j];
    for (size_t s = 0; s < slots.size(); ++s) {
      slots[s] = absl::MakeSpan(RowIn(rows_.arenas[1 + s], row), dim);
    }
    ApplyOptimizer(spec_.optimizer, ++rows_.steps[row],
                   absl::MakeConstSpan(summed_rows + j * dim, dim),
                   absl::MakeSpan(RowIn(rows_.arenas[0], row), dim), slots);
  }
  return absl::OkStatus();
}

HashTableState HashEmbeddingTable::Export() const {
  const int64_t dim = spec_.dim;
  HashTableState state;
  state.slots.resize(slot_initial_values_.size());
  {
    // Copy in row order under the lock and sort afterwards, so that pushes
    // wait for a copy, not for a sort.
    absl::MutexLock lock(&mu_);
    const int64_t n = rows_.steps.size();
    state.ids.resize(n);
    for (const auto& [id, row] : rows_.index) state.ids[row] = id;
    state.steps = rows_.steps;
    state.values = RowsOf(rows_.arenas[0], rows_per_block_, dim, n);
    for (size_t s = 0; s < state.slots.size(); ++s) {
      state.slots[s] = RowsOf(rows_.arenas[1 + s], rows_per_block_, dim, n);
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
  rows.steps = std::move(state.steps);
  absl::MutexLock lock(&mu_);
  std::swap(rows_, rows);
  // The old rows, now in `rows`, are freed after the lock is released.
  return absl::OkStatus();
}

int64_t HashEmbeddingTable::num_rows() const {
  absl::MutexLock lock(&mu_);
  return rows_.steps.size();
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
