#ifndef DISTRT_RUNTIME_SUMMARY_EVENT_FILE_WRITER_H_
#define DISTRT_RUNTIME_SUMMARY_EVENT_FILE_WRITER_H_

// EventFileWriter: writes scalar summaries (loss, examples/s, learning rate,
// eval metrics) to an event file that `tensorboard --logdir DIR` displays.
//
// The file is a sequence of TFRecords (runtime/util/tfrecord_framing.h), each a
// serialized distrt.summary.Event (proto/summary_event.proto, wire-compatible
// with TensorFlow's Event). The first record carries only the file version
// "brain.Event:2"; each WriteScalars call appends one record.
//
// Every record is handed to the kernel by the call that makes it (there is
// no buffer in the process), so TensorBoard sees it at once and a crash of
// the process loses nothing already written; Flush() fsyncs, for a crash of
// the machine. A record torn by a failed write would hide every later one
// from readers, so after a write error the writer refuses further writes.
//
// Thread-safe: concurrent calls append whole records in some order.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/summary_event.pb.h"

namespace distrt {

// The file_version of an event file's first record.
inline constexpr absl::string_view kEventFileVersion = "brain.Event:2";

class EventFileWriter {
 public:
  // Creates `log_dir` and any missing parents, then the new file
  // "<log_dir>/events.out.tfevents.<unix seconds, 10 digits>.<hostname>"
  // followed by ".<suffix>" when `suffix` is not empty, and writes the
  // version record. TensorBoard reads every file in `log_dir` whose name
  // contains "tfevents" as one run, so tasks sharing a directory pass
  // different suffixes (e.g. "chief" and "eval"). INVALID_ARGUMENT for a
  // suffix containing '/'; ALREADY_EXISTS when the file exists (the same
  // suffix used twice in one directory within one second); otherwise the
  // file system's error, naming the path.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Create(
      const std::string& log_dir, absl::string_view suffix);

  // Flushes (as Flush(), ignoring errors: call Flush() first to see them)
  // and closes the file.
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // The file being written.
  const std::string& path() const { return path_; }

  // Appends one Event at `step` and `wall_time` whose Summary holds one
  // simple_value per (tag, value), in order. Values are stored as float32,
  // as TensorBoard's simple_value is; NaN and infinities are written as
  // they are. An empty `scalars` writes nothing. INVALID_ARGUMENT naming the
  // file for an empty tag (nothing is written).
  absl::Status WriteScalars(
      int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
      absl::Time wall_time = absl::Now());

  // Appends `event` as one record, as it is (for events other than
  // scalars; the caller sets wall_time).
  absl::Status WriteEvent(const summary::Event& event);

  // Makes what was written durable (fsync). After a failed write, returns
  // that error.
  absl::Status Flush();

 private:
  EventFileWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  // Appends the record holding `data` unless a write failed before.
  absl::Status WriteRecord(absl::string_view data);

  // Constant after construction.
  const std::string path_;
  const int fd_;

  absl::Mutex mu_;
  // The first write error; once set, every write and Flush returns it.
  absl::Status write_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_SUMMARY_EVENT_FILE_WRITER_H_
