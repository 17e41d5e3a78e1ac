#ifndef DISTRT_RUNTIME_UTIL_MUTEX_CHECKS_H_
#define DISTRT_RUNTIME_UTIL_MUTEX_CHECKS_H_

// Process-wide absl::Mutex settings for the binaries that serve or train
// (ps_server, worker, bench). Call once at the start of main().
//
// Why: Debian's Abseil is built without NDEBUG, so every absl::Mutex
// acquisition records the lock order in a global graph to detect
// deadlocks (GraphCycles). A profile of the logreg job shows that graph's
// bookkeeping in both processes, on every request and every step. The
// binaries turn it off unless DISTRT_MUTEX_DEADLOCK_DETECTION=1 is set in
// the environment, which `bazel test` sets (.bazelrc) for the binaries the
// tests start; unit tests never call this and keep it.
//
// Returns whether the detection stays on.
namespace distrt {

bool ConfigureMutexDeadlockDetection();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_MUTEX_CHECKS_H_
