#include "client/id_repeats.h"

#include <algorithm>
#include <functional>

namespace distrt {
namespace {

constexpr uint32_t kEmpty = UINT32_MAX;

// Tables up to this many slots (4 MiB, 1M slots: calls of up to 512k ids)
// stay with the thread for its next call. In a program that links PsClient
// without our malloc tuning (runtime/util/malloc_tuning.h), a fresh table of
// 128 KiB or more comes from mmap and is zeroed page by page by the kernel
// first, which took as long as the lookups themselves (10k random ids:
// 52 -> 33 us, 100k: 1200 -> 570 us here). With the tuning the two are
// within a few percent. Larger tables are rare and are given back.
constexpr size_t kKeptSlots = size_t{1} << 20;

// A table of `slots` empty slots: the calling thread's kept one, or a fresh
// one held by `fresh`.
uint32_t* EmptyTable(size_t slots, std::vector<uint32_t>& fresh) {
  thread_local std::vector<uint32_t> kept;
  std::vector<uint32_t>& table = slots <= kKeptSlots ? kept : fresh;
  table.assign(slots, kEmpty);
  return table.data();
}

}  // namespace

IdRepeats FindRepeats(absl::Span<const int64_t> ids) {
  IdRepeats repeats;
  const size_t n = ids.size();
  if (n < 2 || n >= kEmpty) return repeats;
  // Increasing ids (a model's sorted distinct ids, the common case) are
  // distinct: one pass without the table.
  if (std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) ==
      ids.end()) {
    return repeats;
  }
  int bits = 1;
  while ((size_t{1} << bits) < 2 * n) ++bits;
  const size_t mask = (size_t{1} << bits) - 1;
  std::vector<uint32_t> fresh;
  uint32_t* table = EmptyTable(mask + 1, fresh);
  const auto home_slot = [bits](int64_t id) {
    return static_cast<size_t>(
        (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull) >> (64 - bits));
  };
  // Random ids land on random slots: once the table outgrows the L1 cache,
  // each lookup is a cache miss unless asked for ahead (100k ids: 700 ->
  // 600 us here). Smaller tables only pay for the extra hashing (1k ids:
  // 1.4 -> 2.6 us), so they are not prefetched.
  const size_t ahead = mask + 1 > (size_t{1} << 14) ? 16 : n;
  const int64_t* id_at = ids.data();
  for (size_t i = 0; i < n; ++i) {
    if (i + ahead < n) __builtin_prefetch(table + home_slot(id_at[i + ahead]));
    const int64_t id = id_at[i];
    size_t slot = home_slot(id);
    while (table[slot] != kEmpty && id_at[table[slot]] != id) {
      slot = (slot + 1) & mask;
    }
    if (table[slot] == kEmpty) {  // a new id
      table[slot] = static_cast<uint32_t>(i);
      if (repeats.any()) {
        repeats.distinct_of[i] = repeats.first.size();
        repeats.first.push_back(i);
      }
      continue;
    }
    if (!repeats.any()) {  // the first repeat: every id before it is new
      repeats.distinct_of.resize(n);
      repeats.first.reserve(n);
      for (size_t j = 0; j < i; ++j) {
        repeats.distinct_of[j] = static_cast<uint32_t>(j);
        repeats.first.push_back(j);
      }
    }
    repeats.distinct_of[i] = repeats.distinct_of[table[slot]];
  }
  return repeats;
}

}  // namespace distrt
