#ifndef DISTRT_RUNTIME_PS_ADMISSION_SKETCH_H_
#define DISTRT_RUNTIME_PS_ADMISSION_SKETCH_H_

// AdmissionSketch: how many times each id has been seen, estimated in fixed
// memory — a count-min sketch (Cormode and Muthukrishnan, 2005) of 4 rows of
// `width` 32-bit counters with conservative update, what a table's
// min_count admission counts with (TablePolicy).
//
// An estimate is never below the true count; it is above when each of the
// id's 4 counters has been raised by other ids. So the false-admission rate
// (ids seen fewer than min_count times that get a row) grows with the
// distinct ids per counter: admission_sketch_test measures it on known
// streams and docs/embedding_tables.md gives the figures, to size `width`.
//
// Not thread-safe: the table calls it under its lock.

#include <cstdint>
#include <memory>

#include "runtime/util/huge_pages.h"

namespace distrt {

class AdmissionSketch {
 public:
  static constexpr int kDepth = 4;

  // `width`: a power of two >= 16 (TablePolicy's validation checks it).
  explicit AdmissionSketch(int64_t width);

  // Counts one sighting of `id` and returns its estimated count, this one
  // included.
  int64_t Add(int64_t id);
  // The estimated count, without counting.
  int64_t Estimate(int64_t id) const;

  int64_t bytes() const {
    return kDepth * width_ * static_cast<int64_t>(sizeof(uint32_t));
  }

 private:
  // The counter of `id` in row `row`.
  uint32_t& Counter(int row, int64_t id);
  uint32_t Counter(int row, int64_t id) const;
  int64_t Slot(int row, int64_t id) const;

  const int64_t width_;
  // kDepth rows of width_, on huge pages where they are large: each id
  // reads 4 counters at random.
  std::unique_ptr<uint32_t[], FreeRandomAccess> counters_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_ADMISSION_SKETCH_H_
