#include "runtime/util/format_bytes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace distrt {

std::string FormatBytes(int64_t bytes) {
  if (bytes < 1024 && bytes > -1024) return absl::StrCat(bytes, " B");
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while ((value >= 1024 || value <= -1024) && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace distrt
