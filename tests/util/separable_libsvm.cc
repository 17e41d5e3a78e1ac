#include "tests/util/separable_libsvm.h"

#include <fstream>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace distrt::testing {

void WriteSeparableLibsvm(const std::string& path, int rows, uint64_t seed,
                          int features, int one_in) {
  std::mt19937_64 weights_rng(12345);  // one ground truth for every seed
  std::vector<double> w(features);
  for (double& x : w) x = static_cast<double>(weights_rng() % 2001) / 1000 - 1;
  std::mt19937_64 rng(seed);
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) {
    std::vector<int> ids;
    double score = 0;
    for (int id = 0; id < features; ++id) {
      if (rng() % one_in == 0) {
        ids.push_back(id);
        score += w[id];
      }
    }
    int label = score > 0 ? 1 : 0;
    if (rng() % 20 == 0) label = 1 - label;
    out << label;
    for (int id : ids) out << " " << id + 1 << ":1";
    out << "\n";
  }
  out.close();
  if (!out) ADD_FAILURE() << "cannot write " << path;
}

}  // namespace distrt::testing
