#include "runtime/input/quoted_token.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace distrt {

std::string QuotedToken(absl::string_view token) {
  if (token.size() <= kMaxQuotedTokenBytes) {
    return absl::StrCat("\"", absl::CHexEscape(token), "\"");
  }
  return absl::StrCat("\"",
                      absl::CHexEscape(token.substr(0, kMaxQuotedTokenBytes)),
                      "...\" (", token.size(), " bytes)");
}

}  // namespace distrt
