#include "deploy/launcher/line_prefixer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace distrt::launcher {

LinePrefixer::LinePrefixer(std::string prefix, size_t max_line_bytes)
    : prefix_(std::move(prefix)),
      max_line_bytes_(std::max<size_t>(1, max_line_bytes)) {}

std::string LinePrefixer::Append(absl::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    if (after_cut_) {
      after_cut_ = false;
      // A newline right after a cut ends the line already emitted.
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const size_t newline = bytes.find('\n');
    const size_t room = max_line_bytes_ - partial_.size();
    if (newline != absl::string_view::npos && newline <= room) {
      absl::StrAppend(&out, prefix_, partial_, bytes.substr(0, newline), "\n");
      partial_.clear();
      bytes.remove_prefix(newline + 1);
    } else if (bytes.size() >= room) {
      // The line is longer than allowed: emit what fits as a line.
      absl::StrAppend(&out, prefix_, partial_, bytes.substr(0, room), "\n");
      partial_.clear();
      bytes.remove_prefix(room);
      after_cut_ = true;
    } else {
      absl::StrAppend(&partial_, bytes);
      bytes = absl::string_view();
    }
  }
  return out;
}

std::string LinePrefixer::Flush() {
  if (partial_.empty()) return "";
  std::string out = absl::StrCat(prefix_, partial_, "\n");
  partial_.clear();
  after_cut_ = false;
  return out;
}

}  // namespace distrt::launcher
