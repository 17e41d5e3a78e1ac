#ifndef DISTRT_TESTS_UTIL_SEPARABLE_LIBSVM_H_
#define DISTRT_TESTS_UTIL_SEPARABLE_LIBSVM_H_

// Binary LIBSVM data that a linear model can learn, for tests that train
// and evaluate on files small enough to write in the test itself.

#include <cstdint>
#include <string>

namespace distrt::testing {

// Writes `rows` lines of binary LIBSVM data to `path`: each of `features`
// features (ids 1..features, value 1) is present with probability
// 1/`one_in`, and the label says whether the present features' weights
// sum above 0, flipped in 5% of the rows (label noise: the true model's
// accuracy is about 95%). The weights come from a fixed seed (12345), so
// every `seed` draws rows of one ground truth: train and eval files
// written with different seeds agree. The same arguments give the same
// bytes. Records a test failure when the file cannot be written.
void WriteSeparableLibsvm(const std::string& path, int rows, uint64_t seed,
                          int features, int one_in);

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_SEPARABLE_LIBSVM_H_
