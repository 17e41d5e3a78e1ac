#include "runtime/summary/event_file_reader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/util/status_macros.h"
#include "runtime/util/tfrecord_framing.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<EventFileReader>> EventFileReader::Open(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadOnlyFile> file,
                   ReadOnlyFile::Open(path));
  return std::unique_ptr<EventFileReader>(new EventFileReader(std::move(file)));
}

absl::Status EventFileReader::ReadEvent(summary::Event* event) {
  const int64_t size = file_->size();
  if (offset_ == size) {
    return absl::OutOfRangeError(
        absl::StrCat("no more records in event file ", path()));
  }
  const std::string where =
      absl::StrCat("event file ", path(), " at offset ", offset_);
  const int64_t left = size - offset_;

  if (left < kTfRecordHeaderBytes) {
    return absl::DataLossError(absl::StrCat(
        "truncated record in ", where, ": the file ends ", left,
        " bytes into the ", kTfRecordHeaderBytes, "-byte record header"));
  }
  std::string header(kTfRecordHeaderBytes, '\0');
  RETURN_IF_ERROR(file_->ReadAt(offset_, absl::MakeSpan(header)));
  const absl::string_view length_bytes = absl::string_view(header).substr(0, 8);
  if (DecodeUint32LE(absl::string_view(header).substr(8)) !=
      MaskedCrc32c(length_bytes)) {
    return absl::DataLossError(
        absl::StrCat("corrupt record length in ", where, " (CRC mismatch)"));
  }
  const uint64_t length = DecodeUint64LE(length_bytes);
  const int64_t framing = kTfRecordHeaderBytes + kTfRecordFooterBytes;
  // Compared unsigned: a huge length must not overflow.
  if (left < framing || length > static_cast<uint64_t>(left - framing)) {
    return absl::DataLossError(
        absl::StrCat("truncated record in ", where, ": the file ends ", left,
                     " bytes into a record of ", length, " data bytes plus ",
                     framing, " bytes of framing"));
  }

  std::string data(length + kTfRecordFooterBytes, '\0');
  RETURN_IF_ERROR(
      file_->ReadAt(offset_ + kTfRecordHeaderBytes, absl::MakeSpan(data)));
  const uint32_t stored_crc =
      DecodeUint32LE(absl::string_view(data).substr(length));
  data.resize(length);
  if (stored_crc != MaskedCrc32c(data)) {
    return absl::DataLossError(absl::StrCat("corrupt record data in ", where,
                                            " (CRC mismatch over ", length,
                                            " bytes)"));
  }
  if (!event->ParseFromString(data)) {
    return absl::DataLossError(
        absl::StrCat("record in ", where, " is not a valid Event"));
  }
  offset_ += kTfRecordHeaderBytes + length + kTfRecordFooterBytes;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<summary::Event>> ReadEvents(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<EventFileReader> reader,
                   EventFileReader::Open(path));
  std::vector<summary::Event> events;
  while (true) {
    summary::Event event;
    const absl::Status s = reader->ReadEvent(&event);
    if (absl::IsOutOfRange(s)) return events;
    RETURN_IF_ERROR(s);
    events.push_back(std::move(event));
  }
}

absl::StatusOr<std::vector<ScalarPoint>> ReadScalars(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<summary::Event> events, ReadEvents(path));
  std::vector<ScalarPoint> points;
  for (const summary::Event& event : events) {
    if (!event.has_summary()) continue;
    for (const summary::Summary::Value& value : event.summary().value()) {
      if (value.value_case() != summary::Summary::Value::kSimpleValue) {
        continue;
      }
      points.push_back(ScalarPoint{event.step(), value.tag(),
                                   value.simple_value(), event.wall_time()});
    }
  }
  return points;
}

}  // namespace distrt
