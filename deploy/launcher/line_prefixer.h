#ifndef DISTRT_DEPLOY_LAUNCHER_LINE_PREFIXER_H_
#define DISTRT_DEPLOY_LAUNCHER_LINE_PREFIXER_H_

// LinePrefixer: turns the bytes a task writes, in whatever pieces a pipe
// delivers them, into whole lines that start with the task's name:
//   "step 100 loss 0.31\n" -> "[worker:1] step 100 loss 0.31\n"
// so that the output of many tasks can be interleaved on one terminal
// without two tasks' text sharing a line. Not thread-safe (one per pipe).

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace distrt::launcher {

class LinePrefixer {
 public:
  // A line longer than `max_line_bytes` (without its newline) is emitted in
  // pieces of that size, each as a line of its own, so that a task writing
  // without newlines cannot make the launcher hold unbounded memory.
  static constexpr size_t kDefaultMaxLineBytes = 64 << 10;

  explicit LinePrefixer(std::string prefix,
                        size_t max_line_bytes = kDefaultMaxLineBytes);

  // Takes the next bytes of the stream. Returns the lines it completes, each
  // with the prefix and a '\n'; empty when none is complete yet. A partial
  // line is kept for the next call.
  std::string Append(absl::string_view bytes);

  // At the end of the stream: the kept partial line with the prefix and a
  // '\n' added, or empty when the stream ended with a newline.
  std::string Flush();

 private:
  const std::string prefix_;
  const size_t max_line_bytes_;
  std::string partial_;     // bytes after the last newline seen
  bool after_cut_ = false;  // the last line emitted was cut at the limit
};

}  // namespace distrt::launcher

#endif  // DISTRT_DEPLOY_LAUNCHER_LINE_PREFIXER_H_
