#include "runtime/util/tfrecord_framing.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "runtime/util/crc32c.h"

namespace distrt {
namespace {

// CRC32C computed one bit at a time from the reflected Castagnoli
// polynomial: slow, but independent of the ISA-L code under test.
uint32_t BitwiseCrc32c(absl::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ ((crc & 1) != 0 ? 0x82F63B78u : 0);
    }
  }
  return ~crc;
}

// The masking rule spelled out step by step: rotate right by 15, add the
// constant, modulo 2^32.
uint32_t ReferenceMask(uint32_t crc) {
  const uint64_t rotated = ((crc >> 15) | (uint64_t{crc} << 17)) & 0xFFFFFFFFu;
  return static_cast<uint32_t>((rotated + 0xA282EAD8u) & 0xFFFFFFFFu);
}

TEST(TfRecordTest, MaskedCrcOfKnownInput) {
  // The standard CRC32C check value, from both implementations.
  EXPECT_EQ(BitwiseCrc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(ReferenceMask(0xE3069283u), 0xC78AB0E5u);
  EXPECT_EQ(MaskTfRecordCrc(0xE3069283u), 0xC78AB0E5u);
  EXPECT_EQ(MaskedCrc32c("123456789"), 0xC78AB0E5u);

  for (const absl::string_view input :
       {absl::string_view(""), absl::string_view("a"),
        absl::string_view("brain.Event:2"),
        absl::string_view("\0\0\0\0\0\0\0\0", 8),
        absl::string_view("\xff\xfe\x80\x7f", 4)}) {
    EXPECT_EQ(MaskedCrc32c(input), ReferenceMask(BitwiseCrc32c(input)))
        << absl::CHexEscape(input);
  }
}

TEST(TfRecordTest, LengthCrcOfAVersionRecordMatchesTensorFlowFiles) {
  // Every event file TensorFlow writes starts with a 24-byte version event;
  // its header is these 12 bytes.
  std::string header;
  AppendUint64LE(24, &header);
  AppendUint32LE(MaskedCrc32c(header), &header);
  EXPECT_EQ(absl::BytesToHexString(header), "1800000000000000a37f4b22");
}

TEST(TfRecordTest, EncodesTensorFlowsRecordExactly) {
  // A version record from TensorFlow's own event-file loader test: an Event
  // with wall_time 1456445596.0 and file_version "brain.Event:2".
  const std::string tf_record = absl::HexStringToBytes(
      "1800000000000000a37f4b22"
      "0900000027e6b3d5411a0d627261696e2e4576656e743a32"
      "6a4d0b15");
  const std::string data = tf_record.substr(kTfRecordHeaderBytes, 24);
  EXPECT_EQ(absl::BytesToHexString(EncodeTfRecord(data)),
            absl::BytesToHexString(tf_record));
  EXPECT_EQ(EncodeTfRecord("").size(),
            kTfRecordHeaderBytes + kTfRecordFooterBytes);
}

TEST(TfRecordTest, LittleEndianRoundTrip) {
  std::string bytes;
  AppendUint64LE(0x0102030405060708u, &bytes);
  AppendUint32LE(0xA1B2C3D4u, &bytes);
  EXPECT_EQ(absl::BytesToHexString(bytes), "0807060504030201d4c3b2a1");
  EXPECT_EQ(DecodeUint64LE(bytes), 0x0102030405060708u);
  EXPECT_EQ(DecodeUint32LE(absl::string_view(bytes).substr(8)), 0xA1B2C3D4u);
}

}  // namespace
}  // namespace distrt
