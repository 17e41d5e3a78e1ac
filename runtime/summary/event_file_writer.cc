#include "runtime/summary/event_file_writer.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"
#include "runtime/util/tfrecord_framing.h"

namespace distrt {
namespace {

absl::StatusOr<std::string> HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) {
    return absl::ErrnoToStatus(errno,
                               "cannot get the host name for an event file");
  }
  // A '/' would make the file name a path; hosts are not named so, but the
  // name comes from outside.
  std::string host = name;
  std::replace(host.begin(), host.end(), '/', '_');
  return host;
}

double WallTimeSeconds(absl::Time time) {
  return absl::ToDoubleSeconds(time - absl::UnixEpoch());
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(
    const std::string& log_dir, absl::string_view suffix) {
  if (absl::StrContains(suffix, '/') || absl::StrContains(suffix, '\0')) {
    return absl::InvalidArgumentError(
        absl::StrCat("event file suffix \"", absl::CHexEscape(suffix),
                     "\" for log directory ", log_dir, " contains '/' or NUL"));
  }
  RETURN_IF_ERROR(CreateDirectories(log_dir));
  ASSIGN_OR_RETURN(std::string host, HostName());

  const absl::Time now = absl::Now();
  std::string name = absl::StrFormat("events.out.tfevents.%010d.%s",
                                     absl::ToUnixSeconds(now), host);
  if (!suffix.empty()) absl::StrAppend(&name, ".", suffix);
  std::string path = JoinPath(log_dir, name);

  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create event file", path);
  std::unique_ptr<EventFileWriter> writer(
      new EventFileWriter(std::move(path), fd));

  summary::Event version;
  version.set_wall_time(WallTimeSeconds(now));
  version.set_file_version(std::string(kEventFileVersion));
  if (absl::Status s = writer->WriteEvent(version); !s.ok()) {
    // Best effort: a file without its version record is of no use.
    unlink(writer->path().c_str());
    return s;
  }
  return writer;
}

EventFileWriter::~EventFileWriter() {
  Flush().IgnoreError();
  close(fd_);
}

absl::Status EventFileWriter::WriteScalars(
    int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
    absl::Time wall_time) {
  if (scalars.empty()) return absl::OkStatus();
  summary::Event event;
  event.set_wall_time(WallTimeSeconds(wall_time));
  event.set_step(step);
  summary::Summary* values = event.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    if (tag.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("scalar summary with an empty tag at step ", step,
                       " for event file ", path_));
    }
    summary::Summary::Value* v = values->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return WriteEvent(event);
}

absl::Status EventFileWriter::WriteEvent(const summary::Event& event) {
  std::string data;
  if (!event.SerializeToString(&data)) {
    return absl::InternalError(
        absl::StrCat("cannot serialize an event for event file ", path_));
  }
  return WriteRecord(data);
}

absl::Status EventFileWriter::WriteRecord(absl::string_view data) {
  const std::string record = EncodeTfRecord(data);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(write_error_);
  write_error_ = WriteAll(fd_, record, path_);
  return write_error_;
}

absl::Status EventFileWriter::Flush() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(write_error_);
  if (fsync(fd_) != 0) return ErrnoError("cannot fsync event file", path_);
  return absl::OkStatus();
}

}  // namespace distrt
