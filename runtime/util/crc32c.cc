#include "runtime/util/crc32c.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <cstddef>

namespace distrt {
namespace {

// crc32_iscsi takes an int length: larger inputs go in pieces of this size.
constexpr size_t kMaxPiece = size_t{1} << 30;

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, absl::string_view data) {
  // crc32_iscsi neither pre- nor post-inverts: the standard CRC32C starts
  // from all ones and inverts at the end, so undo and redo the inversion.
  uint32_t state = ~crc;
  while (!data.empty()) {
    const size_t n = std::min(data.size(), kMaxPiece);
    // ISA-L only reads the buffer; its signature just lacks the const.
    state =
        crc32_iscsi(const_cast<unsigned char*>(
                        reinterpret_cast<const unsigned char*>(data.data())),
                    static_cast<int>(n), state);
    data.remove_prefix(n);
  }
  return ~state;
}

uint32_t Crc32c(absl::string_view data) { return Crc32cExtend(0, data); }

}  // namespace distrt
