#include "runtime/input/shuffle_buffer.h"

#include <algorithm>
#include <utility>

#include "runtime/util/splitmix64.h"

namespace distrt {

uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  // Rejecting the lowest 2^64 mod bound values leaves a range that is a
  // multiple of bound, so the modulo is unbiased.
  const uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound
  while (true) {
    const uint64_t r = rng();
    if (r >= reject_below) return r % bound;
  }
}

ShuffleBuffer::ShuffleBuffer(int64_t capacity)
    : capacity_(std::max<int64_t>(capacity, 1)) {
  // Reserve up to a modest size: a capacity of "every example" may be far
  // more than the examples there are.
  examples_.reserve(static_cast<size_t>(std::min<int64_t>(capacity_, 4096)));
}

void ShuffleBuffer::StartEpoch(uint64_t seed, int64_t epoch) {
  // As the in-memory permutation always was: seeds 0, 1, 2 and epochs 0,
  // 1, 2 give unrelated sequences.
  rng_.seed(SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(epoch))));
}

void ShuffleBuffer::Add(Example example) {
  examples_.push_back(std::move(example));
}

Example ShuffleBuffer::Take() {
  // The drawn element leaves; the last one fills its place (the next input
  // goes to the end), which keeps the draw uniform over what is held.
  const size_t i = UniformBelow(rng_, examples_.size());
  Example out = std::move(examples_[i]);
  if (i + 1 != examples_.size()) examples_[i] = std::move(examples_.back());
  examples_.pop_back();
  return out;
}

}  // namespace distrt
