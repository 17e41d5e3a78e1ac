#include "bench/zipf_ids.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/id_repeats.h"
#include "runtime/util/status_macros.h"
#include "tools/gen_data/zipf.h"

namespace distrt::bench {

absl::StatusOr<ZipfIds> ZipfIds::Create(int64_t vocabulary, double exponent,
                                        uint64_t seed) {
  ASSIGN_OR_RETURN(ZipfSampler sampler,
                   ZipfSampler::Create(vocabulary, exponent));
  return ZipfIds(std::move(sampler), seed);
}

void ZipfIds::Fill(absl::Span<int64_t> ids) {
  // 53 random bits: every double in [0, 1) that a uniform can give.
  auto uniform = [this] { return (random_() >> 11) * 0x1.0p-53; };
  for (int64_t& id : ids) id = IdOfRank(sampler_.Sample(uniform));
}

int64_t ZipfIds::IdOfRank(int64_t rank) {
  // SplitMix64's finalizer done modulo 2^63: a right xor-shift of a value
  // below 2^63 stays below it and is undone by shifting again, and a
  // product with an odd constant modulo 2^63 is undone by its inverse, so
  // each step, and the whole, is a bijection on [0, 2^63).
  constexpr uint64_t kMask = (uint64_t{1} << 63) - 1;
  uint64_t z = static_cast<uint64_t>(rank) & kMask;
  z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL) & kMask;
  z = ((z ^ (z >> 27)) * 0x94d049bb133111ebULL) & kMask;
  return static_cast<int64_t>(z ^ (z >> 31));
}

std::vector<int64_t> DistinctIds(absl::Span<const int64_t> ids) {
  const IdRepeats repeats = FindRepeats(ids);
  if (!repeats.any()) return std::vector<int64_t>(ids.begin(), ids.end());
  std::vector<int64_t> distinct;
  distinct.reserve(repeats.first.size());
  for (size_t position : repeats.first) distinct.push_back(ids[position]);
  return distinct;
}

}  // namespace distrt::bench
