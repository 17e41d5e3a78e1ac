#ifndef DISTRT_RUNTIME_UTIL_ATOMIC_FILE_WRITER_H_
#define DISTRT_RUNTIME_UTIL_ATOMIC_FILE_WRITER_H_

// AtomicFileWriter: a file written in pieces under a temporary name beside
// it ("<path>.tmp-<random>") and put in place by Commit, so that `path`
// holds its old contents, or none, until every byte of the new ones is on
// disk: then the temporary is fsync'd, renamed over `path`, and the
// directory fsync'd, so the new name survives a crash too.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
//                    AtomicFileWriter::Create(path));
//   for (...) RETURN_IF_ERROR(file->Append(line));
//   RETURN_IF_ERROR(file->Commit());
//
// Finish (flush, fsync, close) and Commit (rename) are separate so that a
// program writing several files can finish them all before it commits any.
// A writer destroyed before Commit removes its temporary. Errors name the
// file and say what failed (strerror). Not thread-safe.

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace distrt {

class AtomicFileWriter {
 public:
  struct Options {
    // The new file's mode, exactly (the umask does not apply): 0600 for a
    // private key.
    mode_t mode = 0644;
    // Bytes gathered before they are written to the temporary.
    size_t buffer_bytes = size_t{1} << 20;
  };

  // Creates the temporary. NOT_FOUND saying so when the directory of `path`
  // does not exist; the errno's code otherwise.
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Create(
      const std::string& path, const Options& options);
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Create(
      const std::string& path) {
    return Create(path, Options());
  }

  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  const std::string& path() const { return path_; }

  // Appends `data`. After an error every later call returns it.
  absl::Status Append(absl::string_view data);
  // Writes what is buffered, fsyncs and closes the temporary. Append is
  // refused afterwards.
  absl::Status Finish();
  // Finishes (if not yet), renames the temporary over `path` and fsyncs the
  // directory.
  absl::Status Commit();

 private:
  AtomicFileWriter(std::string path, std::string tmp, int fd,
                   size_t buffer_bytes);
  absl::Status Flush();
  // Remembers the first error.
  absl::Status Fail(absl::Status status);

  const std::string path_;
  const std::string tmp_;
  const size_t buffer_bytes_;
  int fd_;  // -1 once closed
  std::string buffer_;
  bool committed_ = false;
  absl::Status error_;
};

// Writes the concatenation of `pieces` to `path` with an AtomicFileWriter:
// on any error `path` is untouched and no temporary is left.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::Span<const absl::string_view> pieces);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_ATOMIC_FILE_WRITER_H_
