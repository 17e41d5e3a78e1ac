// ThreadSanitizer suppressions compiled into every binary that uses threads,
// so that `--config=tsan` needs no TSAN_OPTIONS file.
//
// They cover Debian's gRPC and Gloo libraries, which are not built with
// -fsanitize=thread: TSan cannot see their synchronisation, so their internal
// accesses look racy. `race_top:` matches only the innermost frame of an
// access, so a race in our own code (an RPC handler running on a gRPC
// thread, say) is still reported; `race:` would match any frame of either
// stack and hide it.
//
// - gRPC: accesses made inside the library.
// - Abseil: with Debian's build (a bare `bazel test --config=tsan`) the same
//   holds; with the TSan build that tools/tsan_test.sh loads, what remains
//   is its per-thread semaphore, whose memory it recycles in a way TSan
//   takes for a race.
// - Gloo: its TCP transport destroys a buffer (pthread_cond_destroy) whose
//   completion its own thread has just signalled. The top frame is then
//   TSan's interceptor, so the pattern names Gloo's buffer class.
//
// TSan looks this function up by name; in other builds nothing calls it.

extern "C" const char* __tsan_default_suppressions() {
  return "race_top:libgrpc.so\n"
         "race_top:libgrpc++.so\n"
         "race_top:libgpr.so\n"
         "race_top:grpc_core::\n"
         "race_top:grpc_event_engine::\n"
         "race_top:libabsl_\n"
         "race_top:absl::debian3::synchronization_internal::\n"
         "race:gloo::transport::tcp::UnboundBuffer::\n";
}
