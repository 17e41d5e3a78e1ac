#ifndef DISTRT_RUNTIME_DISTRIBUTE_CONCURRENT_UPDATES_H_
#define DISTRT_RUNTIME_DISTRIBUTE_CONCURRENT_UPDATES_H_

// A scenario for tests of variables on parameter servers (testonly): two
// workers update one variable at the same time, one by AssignAdd /
// AssignSub, the other by gradients through the servers' optimizer. Any
// read-modify-write between them would lose updates; applied atomically on
// the servers, none is lost and the result is exact.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/distribute/strategy.h"

namespace distrt {

// Creates "shared" ({10, 2}, zeros, SGD at 0.01, split over 2 ps tasks) on
// both strategies, then on two threads at once: `adder` makes `adds`
// AssignAdd calls of 3 and as many AssignSub calls of 1, alternating;
// `pusher` applies `pushes` gradients of 100 (each -1 under SGD at 0.01).
// Returns the variable's elements read afterwards: every one is exactly
// 2 * adds - pushes when no update was lost (all values are small
// integers, exact in float).
absl::StatusOr<std::vector<float>> AddWhilePushing(Strategy& adder,
                                                   Strategy& pusher, int adds,
                                                   int pushes);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_CONCURRENT_UPDATES_H_
