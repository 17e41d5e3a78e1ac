#include "runtime/ps/admission_sketch.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "gtest/gtest.h"

namespace distrt {
namespace {

TEST(AdmissionSketchTest, CountsExactlyWithoutCollisions) {
  AdmissionSketch sketch(1 << 12);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sketch.Add(42), i + 1);
  EXPECT_EQ(sketch.Estimate(42), 5);
  EXPECT_EQ(sketch.Estimate(43), 0);
  EXPECT_EQ(sketch.bytes(), 4 * (1 << 12) * 4);
}

// The false-admission rate on a known stream: `heavy` ids seen min_count
// times each, interleaved with `light` ids seen once. The rate is the share
// of light ids whose single sighting is already estimated at min_count.
double FalseAdmissionRate(int64_t width, int64_t heavy, int64_t light,
                          int min_count) {
  AdmissionSketch sketch(width);
  // Heavy ids are even, light ones odd: disjoint.
  for (int round = 0; round < min_count; ++round) {
    for (int64_t i = 0; i < heavy; ++i) sketch.Add(2 * i);
  }
  int64_t admitted = 0;
  for (int64_t i = 0; i < light; ++i) {
    if (sketch.Add(2 * i + 1) >= min_count) ++admitted;
  }
  return static_cast<double>(admitted) / light;
}

TEST(AdmissionSketchTest, FalseAdmissionRateOnAKnownStream) {
  // Width 2^16 with 16,384 heavy ids (a quarter of the width) and 65,536
  // light ones: the figure docs/embedding_tables.md quotes per id-to-width
  // ratio.
  const double quarter = FalseAdmissionRate(1 << 16, 1 << 14, 1 << 16, 3);
  const double equal = FalseAdmissionRate(1 << 16, 1 << 16, 1 << 16, 3);
  std::printf(
      "false admission, min_count 3: heavy ids = width/4: %.5f, "
      "= width: %.5f\n",
      quarter, equal);
  EXPECT_LT(quarter, 0.01);
  EXPECT_LT(equal, 0.5);
  EXPECT_LT(quarter, equal);  // grows with the ids per counter
}

TEST(AdmissionSketchTest, NeverUnderestimates) {
  AdmissionSketch sketch(1 << 4);  // tiny: every counter shared
  std::vector<int64_t> truth(200, 0);
  for (int round = 0; round < 5; ++round) {
    for (int64_t id = 0; id < 200; id += 1 + round) {
      ++truth[id];
      EXPECT_GE(sketch.Add(id), truth[id]);
    }
  }
  for (int64_t id = 0; id < 200; ++id)
    EXPECT_GE(sketch.Estimate(id), truth[id]);
}

}  // namespace
}  // namespace distrt
