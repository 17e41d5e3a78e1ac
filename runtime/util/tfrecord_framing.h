#ifndef DISTRT_RUNTIME_UTIL_TFRECORD_FRAMING_H_
#define DISTRT_RUNTIME_UTIL_TFRECORD_FRAMING_H_

// TFRecord framing, the container format of TensorBoard's event files and
// of TensorFlow users' training data (runtime/input/tfrecord_reader.h): a
// file is a sequence of records, each
//
//   offset 0       8 bytes   n: data length, uint64 little-endian
//   offset 8       4 bytes   masked CRC32C of those 8 bytes, uint32 LE
//   offset 12      n bytes   data (an event, a tf.Example, ...)
//   offset 12 + n  4 bytes   masked CRC32C of the data, uint32 LE
//
// with nothing before, between or after the records. Pure functions;
// thread-safe.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace distrt {

// Bytes of a record before its data (length and its CRC), and after it.
inline constexpr int64_t kTfRecordHeaderBytes = 12;
inline constexpr int64_t kTfRecordFooterBytes = 4;

// A CRC32C as a record stores it ("masked"): rotated right by 15 bits plus a
// constant, so that the CRC of bytes that contain CRCs is not degenerate.
inline uint32_t MaskTfRecordCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// MaskTfRecordCrc(Crc32c(data)): the checksum a record stores for `data`.
uint32_t MaskedCrc32c(absl::string_view data);

// The whole record holding `data`.
std::string EncodeTfRecord(absl::string_view data);

// Little-endian encodings as the framing uses them.
void AppendUint64LE(uint64_t value, std::string* out);
void AppendUint32LE(uint32_t value, std::string* out);
// `bytes` must hold at least 8 (resp. 4) bytes.
uint64_t DecodeUint64LE(absl::string_view bytes);
uint32_t DecodeUint32LE(absl::string_view bytes);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_TFRECORD_FRAMING_H_
