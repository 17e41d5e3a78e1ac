#ifndef DISTRT_RUNTIME_UTIL_MALLOC_TEST_SUPPORT_H_
#define DISTRT_RUNTIME_UTIL_MALLOC_TEST_SUPPORT_H_

// What the malloc_tuning tests share (test-only).

#include <cstdlib>

// Sanitizers bring their own malloc: AddressSanitizer's mallopt refuses
// every setting, ThreadSanitizer's lets glibc's through but never uses
// glibc's heap. Neither can show what the settings do.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DISTRT_MALLOC_REPLACED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DISTRT_MALLOC_REPLACED 1
#endif
#endif

namespace distrt::testing {

// The number of glibc malloc arenas (malloc_info's <heap nr="..."> entries);
// -1 where it cannot be read (not glibc).
int CountMallocArenas();

// Starts a thread that allocates, touches and frees 1 MiB, and joins it: a
// new thread's first allocation is where glibc gives it an arena.
void AllocateOnANewThread();

}  // namespace distrt::testing

#endif  // DISTRT_RUNTIME_UTIL_MALLOC_TEST_SUPPORT_H_
