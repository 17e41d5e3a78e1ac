#include "runtime/input/input_position_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"
#include "runtime/util/tfrecord_framing.h"

namespace distrt {
namespace {

// Length and checksum, before the payload.
constexpr int64_t kHeaderBytes = 8;
// The global step at the start of the payload.
constexpr int64_t kStepBytes = 8;

int64_t EntryBytes(size_t position_bytes) {
  return kHeaderBytes + kStepBytes + static_cast<int64_t>(position_bytes);
}

// Appends the entry to `out`, which may hold earlier entries.
void AppendEntry(int64_t global_step, absl::string_view position,
                 std::string* out) {
  const size_t start = out->size();
  AppendUint32LE(static_cast<uint32_t>(kStepBytes + position.size()), out);
  AppendUint32LE(0, out);  // the checksum, once the payload is in place
  AppendUint64LE(static_cast<uint64_t>(global_step), out);
  out->append(position.data(), position.size());
  const absl::string_view payload =
      absl::string_view(*out).substr(start + kHeaderBytes);
  const uint32_t crc = MaskedCrc32c(payload);
  for (int i = 0; i < 4; ++i) {
    (*out)[start + 4 + i] = static_cast<char>(crc >> (8 * i));
  }
}

bool AllZeros(absl::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](char c) { return c == '\0'; });
}

// `status` with "<what> <path>: " before its message, same code.
absl::Status Prefixed(absl::string_view what, absl::string_view path,
                      const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(what, " ", path, ": ", status.message()));
}

}  // namespace

InputPositionLog::InputPositionLog(std::string path, Options options, int fd)
    : path_(std::move(path)),
      options_(std::move(options)),
      fd_(fd),
      compact_at_bytes_(options_.compact_above_bytes) {}

InputPositionLog::~InputPositionLog() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::unique_ptr<InputPositionLog>> InputPositionLog::Open(
    const std::string& path, Options options) {
  if (options.compact_above_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("input position log ", path,
                     ": compact_above_bytes must be positive, not ",
                     options.compact_above_bytes));
  }
  RETURN_IF_ERROR(CreateDirectories(DirName(path)));
  const int fd =
      open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot open", path);
  // Owns `fd` from here on, whatever happens next.
  std::unique_ptr<InputPositionLog> log(
      new InputPositionLog(path, std::move(options), fd));

  ASSIGN_OR_RETURN(const std::string contents, ReadFileToString(path));
  ASSIGN_OR_RETURN(const int64_t good_bytes, log->Load(contents));
  if (good_bytes < static_cast<int64_t>(contents.size()) &&
      ftruncate(fd, good_bytes) != 0) {
    return ErrnoError("cannot cut the damaged tail off", path);
  }
  log->file_bytes_ = good_bytes;
  log->compact_at_bytes_ =
      std::max(log->options_.compact_above_bytes, 2 * log->entry_bytes_);
  return log;
}

absl::StatusOr<int64_t> InputPositionLog::Load(absl::string_view contents) {
  const auto damaged = [this](int64_t offset, absl::string_view why) {
    return absl::DataLossError(absl::StrCat("input position log ", path_,
                                            ": entry at byte offset ", offset,
                                            " ", why));
  };
  int64_t offset = 0;
  const int64_t size = static_cast<int64_t>(contents.size());
  while (offset < size) {
    const absl::string_view rest = contents.substr(offset);
    // Each `break` below drops a damaged tail: what a kill in the middle of
    // a write, or a machine crash, leaves.
    if (static_cast<int64_t>(rest.size()) < kHeaderBytes) break;
    const int64_t payload_bytes = DecodeUint32LE(rest);
    if (payload_bytes < kStepBytes ||
        payload_bytes > kStepBytes + kMaxPositionBytes) {
      if (AllZeros(rest)) break;
      return damaged(
          offset,
          absl::StrCat("has a payload length of ", payload_bytes, ", not in [",
                       kStepBytes, ", ", kStepBytes + kMaxPositionBytes, "]"));
    }
    const int64_t entry_bytes = kHeaderBytes + payload_bytes;
    if (entry_bytes > static_cast<int64_t>(rest.size())) break;
    const absl::string_view payload = rest.substr(kHeaderBytes, payload_bytes);
    if (MaskedCrc32c(payload) != DecodeUint32LE(rest.substr(4))) {
      if (entry_bytes == static_cast<int64_t>(rest.size()) || AllZeros(rest)) {
        break;
      }
      return damaged(offset, "fails its checksum");
    }
    const int64_t global_step = static_cast<int64_t>(DecodeUint64LE(payload));
    if (global_step < 0) {
      return damaged(offset,
                     absl::StrCat("has a negative global step ", global_step));
    }
    ForgetFrom(global_step);
    const absl::string_view position = payload.substr(kStepBytes);
    entries_.push_back({global_step, std::string(position)});
    entry_bytes_ += entry_bytes;
    offset += entry_bytes;
  }
  if (offset < size) torn_entries_ = 1;
  return offset;
}

std::optional<std::string> InputPositionLog::PositionAt(
    int64_t global_step) const {
  const auto after = std::upper_bound(
      entries_.begin(), entries_.end(), global_step,
      [](int64_t step, const Entry& e) { return step < e.global_step; });
  if (after == entries_.begin()) return std::nullopt;
  return std::prev(after)->position;
}

absl::StatusOr<std::optional<std::string>> InputPositionLog::ResumeAt(
    int64_t global_step) {
  std::optional<std::string> position = PositionAt(global_step);
  if (!entries_.empty() && entries_.back().global_step > global_step) {
    // No overflow: some entry's step is greater than global_step.
    ForgetFrom(global_step + 1);
    absl::Status rewritten = Rewrite();
    if (!rewritten.ok()) {
      return Prefixed("cutting the abandoned timeline out of", path_,
                      rewritten);
    }
  }
  return position;
}

absl::Status InputPositionLog::Append(int64_t global_step,
                                      absl::string_view position) {
  if (global_step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input position log ", path_, ": negative global step ", global_step));
  }
  if (static_cast<int64_t>(position.size()) > kMaxPositionBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input position log ", path_, ": a position of ", position.size(),
        " bytes is over the limit of ", kMaxPositionBytes));
  }
  if (fd_ < 0) RETURN_IF_ERROR(Reopen());

  encoded_.clear();
  AppendEntry(global_step, position, &encoded_);
  if (absl::Status written = WriteAll(fd_, encoded_, path_); !written.ok()) {
    // Part of the entry may have reached the file (a short write, then
    // ENOSPC): cut it off, or the next entry would follow damage. When even
    // that fails, Reopen does it before the next write.
    if (ftruncate(fd_, file_bytes_) != 0) {
      close(fd_);
      fd_ = -1;
    }
    return written;
  }
  file_bytes_ += static_cast<int64_t>(encoded_.size());
  ForgetFrom(global_step);
  entries_.push_back({global_step, std::string(position)});
  entry_bytes_ += static_cast<int64_t>(encoded_.size());

  if (file_bytes_ > compact_at_bytes_) {
    if (absl::Status compacted = Compact(); !compacted.ok()) {
      return Prefixed("compacting", path_, compacted);
    }
  }
  return absl::OkStatus();
}

void InputPositionLog::ForgetFrom(int64_t global_step) {
  const auto first = std::lower_bound(
      entries_.begin(), entries_.end(), global_step,
      [](const Entry& e, int64_t step) { return e.global_step < step; });
  for (auto it = first; it != entries_.end(); ++it) {
    entry_bytes_ -= EntryBytes(it->position.size());
  }
  entries_.erase(first, entries_.end());
}

absl::Status InputPositionLog::Compact() {
  int64_t committed = -1;
  if (options_.committed_global_step) {
    absl::StatusOr<int64_t> step = options_.committed_global_step();
    if (!step.ok()) {
      compact_at_bytes_ = file_bytes_ + options_.compact_above_bytes;
      return absl::Status(step.status().code(),
                          absl::StrCat("asking for the committed global step: ",
                                       step.status().message()));
    }
    committed = *step;
  }
  // The first entry a restart may need: the newest with a step <= the
  // committed one; with no checkpoint committed, the newest of all. When
  // every entry is newer than a committed checkpoint, all are kept.
  size_t keep_from = 0;
  if (committed < 0) {
    keep_from = entries_.empty() ? 0 : entries_.size() - 1;
  } else {
    const auto after = std::upper_bound(
        entries_.begin(), entries_.end(), committed,
        [](int64_t step, const Entry& e) { return step < e.global_step; });
    if (after != entries_.begin()) {
      keep_from = static_cast<size_t>(std::prev(after) - entries_.begin());
    }
  }
  for (size_t i = 0; i < keep_from; ++i) {
    entry_bytes_ -= EntryBytes(entries_[i].position.size());
  }
  entries_.erase(entries_.begin(), entries_.begin() + keep_from);

  absl::Status rewritten = Rewrite();
  if (!rewritten.ok()) {
    compact_at_bytes_ = file_bytes_ + options_.compact_above_bytes;
    return rewritten;
  }
  return absl::OkStatus();
}

absl::Status InputPositionLog::Rewrite() {
  std::string contents;
  contents.reserve(static_cast<size_t>(entry_bytes_));
  for (const Entry& e : entries_) {
    AppendEntry(e.global_step, e.position, &contents);
  }
  RETURN_IF_ERROR(WriteFileAtomically(path_, {contents}));
  // The descriptor still refers to the replaced file. Its close result is
  // of no interest: every entry it held that matters is in the new file.
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  file_bytes_ = static_cast<int64_t>(contents.size());
  compact_at_bytes_ = std::max(options_.compact_above_bytes,
                               2 * static_cast<int64_t>(contents.size()));
  return Reopen();
}

absl::Status InputPositionLog::Reopen() {
  const int fd =
      open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot open", path_);
  // After a failed write, the file may hold part of an entry past
  // file_bytes_; after a rewrite this changes nothing.
  if (ftruncate(fd, file_bytes_) != 0) {
    absl::Status status = ErrnoError("cannot truncate", path_);
    close(fd);
    return status;
  }
  fd_ = fd;
  return absl::OkStatus();
}

}  // namespace distrt
