#ifndef DISTRT_RUNTIME_KERNELS_RANDOM_VECTOR_H_
#define DISTRT_RUNTIME_KERNELS_RANDOM_VECTOR_H_

// RandomVector: the kernel tests' inputs, `n` floats uniform in
// [-range, range) from `rng`, so that a test's seed fixes its data.

#include <cstdint>
#include <random>
#include <vector>

namespace distrt {

inline std::vector<float> RandomVector(int64_t n, std::mt19937& rng,
                                       float range = 1.0f) {
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_KERNELS_RANDOM_VECTOR_H_
