#ifndef DISTRT_RUNTIME_UTIL_SPLITMIX64_H_
#define DISTRT_RUNTIME_UTIL_SPLITMIX64_H_

// SplitMix64 (Steele, Lea & Flood 2014; finalizer constants from Stafford's
// "Mix13"): a bijection on 64 bits in which every input bit affects every
// output bit. Initial values, shuffles, synthetic data and hash-table
// sharding derive their randomness from it because it needs no state and
// gives the same values on every platform, so every worker agrees.
//
// Values derived from these functions are stored in checkpoints and decide
// which ps task holds which rows: never change them.

#include <cstdint>

namespace distrt {

// The finalizer alone (mixes a value, maps 0 to 0).
inline uint64_t SplitMix64Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One SplitMix64 output for state `x`: the golden-ratio increment, then the
// finalizer, so nearby inputs (seeds 0, 1, 2) give unrelated values.
inline uint64_t SplitMix64(uint64_t x) {
  return SplitMix64Finalize(x + 0x9e3779b97f4a7c15ULL);
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_SPLITMIX64_H_
