#ifndef DISTRT_RUNTIME_UTIL_FORMAT_BYTES_H_
#define DISTRT_RUNTIME_UTIL_FORMAT_BYTES_H_

// Byte counts for people: "512 B", "1.5 KiB", "12.0 MiB", "3.2 GiB".

#include <cstdint>
#include <string>

namespace distrt {

std::string FormatBytes(int64_t bytes);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_FORMAT_BYTES_H_
