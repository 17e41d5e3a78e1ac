#include "runtime/gpu/gpu_probe.h"

#include "gtest/gtest.h"

namespace distrt::gpu {
namespace {

// Holds on every machine: either GPUs are listed, or there is a reason.
TEST(GpuProbeTest, ReportsGpusOrWhyThereAreNone) {
  GpuProbeResult result = ProbeGpus();
  if (result.gpus.empty()) {
    EXPECT_FALSE(result.unavailable_reason.empty());
  } else {
    EXPECT_TRUE(result.unavailable_reason.empty());
    for (const GpuInfo& gpu : result.gpus) {
      EXPECT_FALSE(gpu.name.empty());
      EXPECT_GT(gpu.memory_bytes, 0);
    }
  }
}

}  // namespace
}  // namespace distrt::gpu
