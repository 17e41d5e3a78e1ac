#ifndef DISTRT_RUNTIME_INPUT_INPUT_POSITION_LOG_H_
#define DISTRT_RUNTIME_INPUT_INPUT_POSITION_LOG_H_

// InputPositionLog: where one worker's input pipeline stood after each
// training step, so that a worker restarted mid-epoch resumes its input
// where the job's global step says it was, instead of at the epoch's start.
//
// After every step the worker appends (global step after the step, the
// pipeline's position) to a file of its own under the job's checkpoint
// directory (e.g. <checkpoint_dir>/input_positions/worker-3.log). When it
// (re)starts it reads the job's global step G (restored from the last
// checkpoint after a job restart, or the live value when only this worker
// restarted) and resumes from the entry with the largest global step <= G,
// or from the start when there is none. The position is an opaque byte
// string that the pipeline serialises.
//
// The file is a sequence of entries, each
//
//   offset 0   4 bytes  n: payload length, uint32 little-endian
//   offset 4   4 bytes  masked CRC32C of the payload (as TFRecord masks it)
//   offset 8   n bytes  payload: global step, int64 LE, then the position
//
// Durability. An append is one write(2) and no fsync: a killed process
// loses nothing it wrote; a machine crash may lose the file's tail, which
// only makes the resume point older (some input is read twice, none is
// skipped). A damaged tail -- an entry cut short, or the last entry failing
// its checksum, or zeros to the end of the file, which is what a crash or a
// kill in the middle of a write leaves -- is dropped at Open and cut off the
// file, never reported as an error. Damage anywhere else is DATA_LOSS.
//
// Timelines. Global steps in a log may go down: a job restarted from an
// older checkpoint appends smaller steps after larger ones. The entries with
// steps >= a newly appended step belong to the abandoned timeline and are
// stale: they are forgotten at that Append (and at Open, reading the file in
// order), and left out of the file at the next compaction. ResumeAt cuts the
// timeline at the resume step at once, before the first new step is logged.
//
// Size. Once the file passes Options::compact_above_bytes it is compacted:
// rewritten (temporary file, fsync, rename) with the newest entry whose step
// is <= the newest committed checkpoint's global step and every entry after
// it. The entries kept in memory are exactly those the file holds, less the
// stale ones, so memory is bounded the same way. Both stay bounded as long
// as checkpoints keep being committed: every entry after the committed step
// may be needed by a restart from a checkpoint committed later.
//
// Thread rules: not thread-safe. One thread (the training loop) opens the
// log and makes every call. Two logs must never share a file.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distrt {

class InputPositionLog {
 public:
  // The largest position Append takes. A longer length field in the file is
  // damage, not a pipeline's position.
  static constexpr int64_t kMaxPositionBytes = int64_t{1} << 20;

  struct Options {
    // Compact once the file exceeds this many bytes and twice what the
    // last compaction kept (so that a file that cannot shrink, because no
    // newer checkpoint was committed, is not rewritten at every step).
    int64_t compact_above_bytes = int64_t{1} << 20;

    // The newest committed checkpoint's global step, asked at each
    // compaction. -1 means no checkpoint is committed: a job restart then
    // starts over at step 0, where no entry applies, and a worker-only
    // restart needs only the newest entry, so only the newest entry is
    // kept. (A saver that has not committed its first checkpoint yet may
    // return the step of the one it is writing, so that its entry survives
    // until it commits.) Unset behaves as -1: the file stays bounded, and a
    // job restart from a checkpoint finds no entry and starts the epoch
    // over, reading input twice but never skipping any. An error leaves the
    // file as it is; compaction is tried again after the file has grown by
    // another compact_above_bytes.
    std::function<absl::StatusOr<int64_t>()> committed_global_step;
  };

  // Opens the log at `path`, creating the file and its directory when
  // missing, and reads its entries. A damaged tail is dropped (see
  // torn_entries()) and cut off the file so that appends follow the last
  // good entry. Errors name the path: the errno's code for system calls,
  // DATA_LOSS with the entry's byte offset for a damaged entry that is not
  // the tail.
  static absl::StatusOr<std::unique_ptr<InputPositionLog>> Open(
      const std::string& path, Options options);
  static absl::StatusOr<std::unique_ptr<InputPositionLog>> Open(
      const std::string& path) {
    return Open(path, Options());
  }

  ~InputPositionLog();
  InputPositionLog(const InputPositionLog&) = delete;
  InputPositionLog& operator=(const InputPositionLog&) = delete;

  const std::string& path() const { return path_; }

  // The position logged with the largest global step <= `global_step`,
  // among the entries read at Open and appended since (stale ones left
  // out); nullopt when there is none: start from the beginning.
  std::optional<std::string> PositionAt(int64_t global_step) const;

  // PositionAt(global_step), for a worker about to resume at that step; the
  // entries after `global_step` are forgotten and the file rewritten
  // without them (when there are any), since the restart abandons that
  // timeline. Without this, a second restart to a checkpoint taken before
  // this worker's first new step could pick an entry of the old timeline
  // and skip input.
  absl::StatusOr<std::optional<std::string>> ResumeAt(int64_t global_step);

  // Logs that the pipeline stood at `position` after the step that made the
  // global step `global_step` (>= 0). Entries with steps >= `global_step`
  // are stale from now on (see "Timelines"). INVALID_ARGUMENT for a
  // negative step or a position over kMaxPositionBytes. When the append
  // brings the file over its compaction threshold the file is compacted; an
  // error of the compaction is returned, prefixed "compacting <path>", and
  // the entry stays logged all the same. After a failed write nothing of
  // the entry remains in the file.
  absl::Status Append(int64_t global_step, absl::string_view position);

  // How many damaged tails were dropped at Open (0 or 1), for a log line.
  int torn_entries() const { return torn_entries_; }

  // Bytes the file holds now.
  int64_t file_bytes() const { return file_bytes_; }

 private:
  struct Entry {
    int64_t global_step;
    std::string position;
  };

  InputPositionLog(std::string path, Options options, int fd);

  // Reads and checks the entries in `contents`, forgetting stale ones;
  // returns where the good entries end.
  absl::StatusOr<int64_t> Load(absl::string_view contents);
  // Forgets the entries with steps >= `global_step`.
  void ForgetFrom(int64_t global_step);
  // Rewrites the file with the entries in memory, which `Compact` first
  // trims to those a restart may need.
  absl::Status Compact();
  absl::Status Rewrite();
  // Opens `path_` for appending (after a rewrite replaced the file).
  absl::Status Reopen();

  // Constant after construction.
  const std::string path_;
  const Options options_;

  int fd_;  // -1 after a failed Reopen; Append retries it
  int64_t file_bytes_ = 0;
  // Bytes of the entries in memory as the file would hold them.
  int64_t entry_bytes_ = 0;
  // The file size that triggers the next compaction.
  int64_t compact_at_bytes_;
  int torn_entries_ = 0;
  // Strictly increasing in global_step: a new entry replaces every entry
  // with a step >= its own.
  std::vector<Entry> entries_;
  // Reused by Append, so that encoding an entry allocates nothing.
  std::string encoded_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INPUT_POSITION_LOG_H_
