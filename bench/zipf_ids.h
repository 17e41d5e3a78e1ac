#ifndef DISTRT_BENCH_ZIPF_IDS_H_
#define DISTRT_BENCH_ZIPF_IDS_H_

// ZipfIds: batches of embedding ids as a click log gives them: ranks drawn
// Zipf(exponent) over a vocabulary (tools/gen_data/zipf.h's sampler, O(1)
// per draw whatever the vocabulary), each rank mapped to an id by a
// bijection on [0, 2^63), so that the hot ids are not the small numbers
// (which would put them in the same blocks of a table and the same shard)
// and no two ranks share an id. From a fixed seed: the same batches in
// every run. Not thread-safe.
//
// Also DistinctIds, the worker's dedup (client/id_repeats.h, which PsClient
// runs on every sparse pull and push): what a batch sends to the ps tasks.

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tools/gen_data/zipf.h"

namespace distrt::bench {

class ZipfIds {
 public:
  // INVALID_ARGUMENT (ZipfSampler's) for a vocabulary outside
  // 1..ZipfSampler::kMaxN or an exponent outside (0, kMaxExponent].
  static absl::StatusOr<ZipfIds> Create(int64_t vocabulary, double exponent,
                                        uint64_t seed);

  // Fills `ids` with draws, repeats and all.
  void Fill(absl::Span<int64_t> ids);

  // The id of rank `rank` (1 is the most frequent): a bijection on
  // [0, 2^63), so ids are non-negative and distinct ranks get distinct ids.
  static int64_t IdOfRank(int64_t rank);

 private:
  ZipfIds(ZipfSampler sampler, uint64_t seed)
      : sampler_(sampler), random_(seed) {}

  ZipfSampler sampler_;
  std::mt19937_64 random_;
};

// The distinct ids of `ids` in order of first appearance, found as PsClient
// finds them (FindRepeats).
std::vector<int64_t> DistinctIds(absl::Span<const int64_t> ids);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_ZIPF_IDS_H_
