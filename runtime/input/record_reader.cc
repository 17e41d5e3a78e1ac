#include "runtime/input/record_reader.h"

#include "absl/strings/str_cat.h"

namespace distrt {

std::string RecordLocation::ToString() const {
  // Text formats number lines from 1; binary ones leave line at 0.
  if (position.line > 0) return absl::StrCat(path, ":", position.line);
  return absl::StrCat(path, ": record ", position.index, " at byte ",
                      position.offset);
}

}  // namespace distrt
