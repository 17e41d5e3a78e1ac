#ifndef DISTRT_RUNTIME_INPUT_QUOTED_TOKEN_H_
#define DISTRT_RUNTIME_INPUT_QUOTED_TOKEN_H_

// How a record reader shows a piece of a malformed line in its error: in
// double quotes, C-escaped (a NUL or a control byte cannot cut the message
// short or garble a terminal; bytes of 0x80 and above are escaped too, so
// UTF-8 shows as \xc3\xb6), and cut to kMaxQuotedTokenBytes with the full
// size said (a 1 MB token must not make a 1 MB error line).

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace distrt {

inline constexpr size_t kMaxQuotedTokenBytes = 64;

// "abc" -> "\"abc\""; "a\0b" -> "\"a\\x00\\x62\""; a long token ->
// "\"<first 64 bytes>...\" (1048576 bytes)".
std::string QuotedToken(absl::string_view token);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_QUOTED_TOKEN_H_
