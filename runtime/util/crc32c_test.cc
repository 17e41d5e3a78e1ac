#include "runtime/util/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace distrt {
namespace {

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, and of 0xFF.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
}

TEST(Crc32cTest, ExtendingPieceByPieceEqualsTheWhole) {
  std::string data;
  for (int i = 0; i < 10000; ++i) data.push_back(static_cast<char>(i * 7));
  const uint32_t whole = Crc32c(data);
  for (size_t piece : {1, 3, 64, 4095, 9999}) {
    uint32_t crc = Crc32c("");
    for (size_t at = 0; at < data.size(); at += piece) {
      crc = Crc32cExtend(crc, absl::string_view(data).substr(at, piece));
    }
    EXPECT_EQ(crc, whole) << "piece " << piece;
  }
  EXPECT_EQ(Crc32cExtend(Crc32c("1234"), "56789"), 0xE3069283u);
}

TEST(Crc32cTest, AnyFlippedBitChangesTheChecksum) {
  std::string data(100, 'x');
  const uint32_t crc = Crc32c(data);
  for (size_t byte = 0; byte < data.size(); byte += 13) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = data;
      flipped[byte] ^= static_cast<char>(1 << bit);
      EXPECT_NE(Crc32c(flipped), crc) << byte << ":" << bit;
    }
  }
}

}  // namespace
}  // namespace distrt
