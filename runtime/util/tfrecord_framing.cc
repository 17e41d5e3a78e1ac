#include "runtime/util/tfrecord_framing.h"

#include "runtime/util/crc32c.h"

namespace distrt {

uint32_t MaskedCrc32c(absl::string_view data) {
  return MaskTfRecordCrc(Crc32c(data));
}

std::string EncodeTfRecord(absl::string_view data) {
  std::string record;
  record.reserve(kTfRecordHeaderBytes + data.size() + kTfRecordFooterBytes);
  AppendUint64LE(data.size(), &record);
  AppendUint32LE(MaskedCrc32c(record), &record);
  record.append(data.data(), data.size());
  AppendUint32LE(MaskedCrc32c(data), &record);
  return record;
}

void AppendUint64LE(uint64_t value, std::string* out) {
  for (int i = 0; i < 8; ++i)
    out->push_back(static_cast<char>(value >> (8 * i)));
}

void AppendUint32LE(uint32_t value, std::string* out) {
  for (int i = 0; i < 4; ++i)
    out->push_back(static_cast<char>(value >> (8 * i)));
}

uint64_t DecodeUint64LE(absl::string_view bytes) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) {
    value |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  }
  return value;
}

uint32_t DecodeUint32LE(absl::string_view bytes) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    value |= uint32_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  }
  return value;
}

}  // namespace distrt
