#include "runtime/ps/admission_sketch.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include "runtime/util/splitmix64.h"

namespace distrt {
namespace {

// One independent-looking hash per row: the id xor a seed, mixed. (Not
// SplitMix64(id) itself, which decides the id's ps task: the ids one task
// counts would share its bits.)
// The seeds are SHA-512's first initial values, unrelated to SplitMix64's
// golden-ratio increment.
constexpr uint64_t kRowSeeds[AdmissionSketch::kDepth] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL};

}  // namespace

AdmissionSketch::AdmissionSketch(int64_t width) : width_(width) {
  const size_t bytes = kDepth * width * sizeof(uint32_t);
  void* memory = AllocateForRandomAccess(bytes);
  if (memory == nullptr) throw std::bad_alloc();  // as a vector would
  std::memset(memory, 0, bytes);
  counters_.reset(static_cast<uint32_t*>(memory));
}

int64_t AdmissionSketch::Slot(int row, int64_t id) const {
  const uint64_t h =
      SplitMix64Finalize(static_cast<uint64_t>(id) ^ kRowSeeds[row]);
  return row * width_ + static_cast<int64_t>(h & (width_ - 1));
}

uint32_t& AdmissionSketch::Counter(int row, int64_t id) {
  return counters_[Slot(row, id)];
}

uint32_t AdmissionSketch::Counter(int row, int64_t id) const {
  return counters_[Slot(row, id)];
}

int64_t AdmissionSketch::Estimate(int64_t id) const {
  uint32_t least = std::numeric_limits<uint32_t>::max();
  for (int row = 0; row < kDepth; ++row) {
    least = std::min(least, Counter(row, id));
  }
  return least;
}

int64_t AdmissionSketch::Add(int64_t id) {
  // Conservative update: only the counters at the minimum grow, which keeps
  // each counter at the largest count among its ids rather than their sum.
  uint32_t* counters[kDepth];
  uint32_t least = std::numeric_limits<uint32_t>::max();
  for (int row = 0; row < kDepth; ++row) {
    counters[row] = &Counter(row, id);
    least = std::min(least, *counters[row]);
  }
  if (least == std::numeric_limits<uint32_t>::max()) return least;  // full
  const uint32_t next = least + 1;
  for (uint32_t* counter : counters) *counter = std::max(*counter, next);
  return next;
}

}  // namespace distrt
