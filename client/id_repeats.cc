#include "client/id_repeats.h"

#include <algorithm>
#include <functional>

namespace distrt {

IdRepeats FindRepeats(absl::Span<const int64_t> ids) {
  constexpr uint32_t kEmpty = UINT32_MAX;
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
  std::vector<uint32_t> table(mask + 1, kEmpty);
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = ids[i];
    size_t slot = static_cast<size_t>(
        (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull) >> (64 - bits));
    while (table[slot] != kEmpty && ids[table[slot]] != id) {
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
