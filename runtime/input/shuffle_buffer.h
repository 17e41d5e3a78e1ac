#ifndef DISTRT_RUNTIME_INPUT_SHUFFLE_BUFFER_H_
#define DISTRT_RUNTIME_INPUT_SHUFFLE_BUFFER_H_

// ShuffleBuffer: the buffer of tf.data's shuffle(buffer_size, seed). The
// pipeline fills it to `capacity`; each output is an element drawn
// uniformly at random from the buffer, and the next input takes its place;
// at the end of an epoch the rest drains in random order. A buffer as
// large as the epoch gives a uniform permutation; a smaller one a local
// shuffle, each example leaving at most a few buffers away from where it
// came in.
//
// The draws depend only on (seed, epoch) and on what was added, never on
// the platform: the generator is mt19937_64 (fixed by the standard) seeded
// through SplitMix64, and the draw is an unbiased rejection method rather
// than std::uniform_int_distribution (whose algorithm differs between
// standard libraries).
//
// Not thread-safe.

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/input/example.h"

namespace distrt {

class ShuffleBuffer {
 public:
  // capacity >= 1 (1 does not shuffle).
  explicit ShuffleBuffer(int64_t capacity);

  // Reseeds for `epoch`, so that each epoch is shuffled anew and a resumed
  // pipeline draws as a fresh one would. The buffer must be empty.
  void StartEpoch(uint64_t seed, int64_t epoch);

  bool full() const {
    return static_cast<int64_t>(examples_.size()) >= capacity_;
  }
  bool empty() const { return examples_.empty(); }
  int64_t size() const { return static_cast<int64_t>(examples_.size()); }

  // Adds an example (the buffer must not be full).
  void Add(Example example);
  // Removes and returns a uniformly drawn example (the buffer must not be
  // empty).
  Example Take();

 private:
  const int64_t capacity_;
  std::mt19937_64 rng_;
  std::vector<Example> examples_;
};

// Uniform in [0, bound), bound >= 1, from `rng`'s outputs alone.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_SHUFFLE_BUFFER_H_
