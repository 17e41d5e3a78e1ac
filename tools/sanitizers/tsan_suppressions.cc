// ThreadSanitizer suppressions compiled into every binary that uses threads,
// so that `--config=tsan` needs no TSAN_OPTIONS file.
//
// They cover Debian's gRPC and Gloo libraries, which are not built with
// -fsanitize=thread: TSan cannot see their synchronisation, so their internal
// accesses look racy (e.g. Gloo's TCP transport destroying a buffer whose
// completion its own thread has just signalled). Races in our own code are
// still reported: a suppression applies only when one of these libraries is
// on the racing stack. Abseil is covered too for runs with Debian's build;
// tools/tsan_test.sh loads one built with TSan, which TSan sees through.
//
// TSan looks this function up by name; in other builds nothing calls it.

extern "C" const char* __tsan_default_suppressions() {
  return "race:libgrpc.so\n"
         "race:libgrpc++.so\n"
         "race:libgpr.so\n"
         "race:libabsl_\n"
         "race:absl::debian3::synchronization_internal::\n"
         "race:grpc_core::\n"
         "race:grpc_event_engine::\n"
         "race:libgloo.so\n";
}
