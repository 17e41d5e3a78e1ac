#ifndef DISTRT_RUNTIME_SUMMARY_EVENT_FILE_READER_H_
#define DISTRT_RUNTIME_SUMMARY_EVENT_FILE_READER_H_

// Reading event files back (what EventFileWriter writes and TensorBoard
// reads), for tests and for tools that check a run's summaries. Reading
// trusts nothing: both CRCs of every record are checked, a length is checked
// against the file's size before anything is allocated, and every error is
// DATA_LOSS (or the file system's code) naming the file and the offset of
// the bad record.
//
// An EventFileReader is not thread-safe; the free functions are.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/summary_event.pb.h"
#include "runtime/util/file_system.h"

namespace distrt {

// Reads the records of one event file in order, up to the size the file had
// when opened.
class EventFileReader {
 public:
  static absl::StatusOr<std::unique_ptr<EventFileReader>> Open(
      const std::string& path);

  const std::string& path() const { return file_->path(); }
  // Where the next record starts.
  int64_t offset() const { return offset_; }

  // Reads the record at offset() into `*event` and moves past it.
  // OUT_OF_RANGE when offset() is the end of the file. DATA_LOSS naming the
  // file and offset when the file ends inside the record ("truncated": e.g.
  // a writer was killed mid-record), when a CRC does not match, or when the
  // data is not an Event; the offset is then not moved.
  absl::Status ReadEvent(summary::Event* event);

 private:
  explicit EventFileReader(std::unique_ptr<ReadOnlyFile> file)
      : file_(std::move(file)) {}

  const std::unique_ptr<ReadOnlyFile> file_;
  int64_t offset_ = 0;
};

// Every event of the file at `path`; the first error of ReadEvent other than
// the end of the file.
absl::StatusOr<std::vector<summary::Event>> ReadEvents(const std::string& path);

// One scalar summary value as read back.
struct ScalarPoint {
  int64_t step = 0;
  std::string tag;
  float value = 0;
  double wall_time = 0;  // seconds since the Unix epoch

  friend bool operator==(const ScalarPoint& a, const ScalarPoint& b) {
    return a.step == b.step && a.tag == b.tag && a.value == b.value &&
           a.wall_time == b.wall_time;
  }
};

// The simple_value scalars of the file at `path`, in file order (values
// within one event in their order); events without a summary, such as the
// version record, contribute nothing. Errors as ReadEvents.
absl::StatusOr<std::vector<ScalarPoint>> ReadScalars(const std::string& path);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_SUMMARY_EVENT_FILE_READER_H_
