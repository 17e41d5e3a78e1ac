#ifndef DISTRT_RUNTIME_UTIL_CRC32C_H_
#define DISTRT_RUNTIME_UTIL_CRC32C_H_

// CRC32C (Castagnoli, the iSCSI polynomial) of byte strings, computed with
// ISA-L's hardware-accelerated crc32_iscsi. Checkpoint files carry it for
// their header and for every tensor, so a flipped bit on disk is reported
// instead of being trained on. Pure functions; thread-safe.

#include <cstdint>

#include "absl/strings/string_view.h"

namespace distrt {

// The standard CRC32C: Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(absl::string_view data);

// The CRC32C of A + `data`, given `crc` == Crc32c(A): lets a long stream be
// checksummed piece by piece. Crc32cExtend(Crc32c(""), data) == Crc32c(data).
uint32_t Crc32cExtend(uint32_t crc, absl::string_view data);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_CRC32C_H_
