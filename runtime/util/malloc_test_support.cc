#include "runtime/util/malloc_test_support.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace distrt::testing {

int CountMallocArenas() {
#if defined(__GLIBC__)
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return -1;
  malloc_info(0, stream);
  std::fclose(stream);
  const std::string report(text, size);
  std::free(text);
  int arenas = 0;
  for (size_t at = report.find("<heap nr="); at != std::string::npos;
       at = report.find("<heap nr=", at + 1)) {
    ++arenas;
  }
  return arenas;
#else
  return -1;
#endif
}

void AllocateOnANewThread() {
  std::thread([] {
    void* buffer = std::malloc(1 << 20);
    static_cast<volatile char*>(buffer)[0] = 1;
    std::free(buffer);
  }).join();
}

}  // namespace distrt::testing
