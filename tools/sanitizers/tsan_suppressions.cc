// ThreadSanitizer suppressions compiled into every binary that uses threads,
// so that `--config=tsan` needs no TSAN_OPTIONS file.
//
// They cover Debian's gRPC and Gloo libraries, which are not built with
// -fsanitize=thread: TSan cannot see their synchronisation, so accesses
// ordered by it look racy. That includes our own accesses to what gRPC hands
// over (a received buffer freed by our handler, the inline ByteBuffer and
// ProtoBufferReader code of gRPC's headers), so the patterns are `race:`,
// which matches any frame of either stack: `race_top:` (innermost frame
// only) leaves dozens of such reports. The price: a race in our code whose
// stack passes through gRPC (a handler on a gRPC thread) is not reported
// either. Only a gRPC built with TSan would remove that blind spot.
//
// - gRPC's own uninstrumented helper libraries, which run only on its
//   threads: upb (its message code), c-ares (DNS) and address_sorting. Seen
//   once in CI: upb's memcpy of an error's status payload that another of
//   gRPC's completion-queue threads had set (grpc_core::StatusSetTime), in
//   launch_test's mutual-TLS job, with no libgrpc frame left on either stack.
// - Abseil: Debian's build hides absl::Mutex likewise; the TSan build that
//   tools/tsan_test.sh loads is seen through, but its per-thread semaphore
//   recycles memory in a way TSan takes for a race.
// - Gloo: when a rank leaves mid-collective, its TCP transport frees
//   buffers (its own scratch space, a buffer's condition variable) that its
//   reading thread still touches. Our buffers given to Gloo are then not
//   checked either.
// - OpenSSL (libcrypto, libssl), not built with TSan either: its atomics
//   and lock-free paths are invisible, so TLS handshakes on gRPC's threads
//   get reported with only OpenSSL frames on the stacks, which the gRPC
//   patterns above miss (seen once in CI: ASN1_STRING_cmp against
//   ASN1_STRING_set in launch_test's mutual-TLS job).
// - gRPC's own threads (timer, executor) may still be winding down when a
//   short-lived client such as distctl returns from main: gRPC shuts down
//   asynchronously and does not join them, which TSan reports as a thread
//   leak (`thread:` matches the creating stack).
// - LibTorch (libtorch_cpu, libc10, oneDNN's libdnnl, and libgomp, whose
//   OpenMP pool runs their parallel loops), from Debian and not built with
//   TSan: a tensor that c10 allocates on the replica's thread and oneDNN
//   fills on an OpenMP thread is ordered by libgomp's barriers, which TSan
//   cannot see (seen in CI: torchscript_training_test's CNN, memset in
//   libdnnl against posix_memalign in c10::alloc_cpu).
//
// TSan looks this function up by name; in other builds nothing calls it.

extern "C" const char* __tsan_default_suppressions() {
  return "race:libgrpc.so\n"
         "race:libgrpc++.so\n"
         "race:libgpr.so\n"
         "race:grpc_core::\n"
         "race:grpc_event_engine::\n"
         "race:libupb.so\n"
         "race:libcares.so\n"
         "race:libaddress_sorting.so\n"
         "race:libabsl_\n"
         "race:absl::debian3::synchronization_internal::\n"
         "race:libgloo.so\n"
         "race:libcrypto.so\n"
         "race:libssl.so\n"
         "race:libtorch_cpu.so\n"
         "race:libc10.so\n"
         "race:libdnnl.so\n"
         "race:libgomp.so\n"
         "thread:libgpr.so\n";
}
