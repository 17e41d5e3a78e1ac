#include "runtime/cluster/json_util.h"

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {

namespace {

// Finds the first bracket that opens a list or object nested deeper than
// kMaxJsonNesting (brackets inside strings do not count), before the
// parser builds anything. Text that closes more than it opened is left to
// the parser, which says what is wrong with it.
absl::Status CheckNesting(absl::string_view text) {
  int depth = 0;
  int line = 1;
  size_t line_start = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonNesting) {
        return absl::InvalidArgumentError(absl::StrCat(
            "not valid JSON: at line ", line, ", column ", i - line_start + 1,
            ": lists and objects nested deeper than ", kMaxJsonNesting));
      }
    } else if (c == ']' || c == '}') {
      if (--depth < 0) return absl::OkStatus();
    } else if (c == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  RETURN_IF_ERROR(CheckNesting(text));
  // nlohmann reports where and why parsing failed only through its exception;
  // it is caught here and never crosses this function.
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error " prefix.
    const size_t at = what.find(" at ");
    if (at != std::string::npos) what = what.substr(at + 1);
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", what));
  }
}

std::string DescribeJson(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "a list";
    case Json::value_t::string:
      return absl::StrCat("the string ", value.dump());
    case Json::value_t::boolean:
      return absl::StrCat("the boolean ", value.dump());
    case Json::value_t::null:
      return "null";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return absl::StrCat("the number ", value.dump());
    default:
      return "a value of an unexpected kind";
  }
}

absl::StatusOr<int> ParseTaskIndex(const Json& value, absl::string_view what) {
  int64_t index = 0;
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > std::numeric_limits<int>::max()) {
    // Read as int64 it could wrap to a negative number.
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", value.get<uint64_t>(), " is too large"));
  }
  if (value.is_number_integer()) {
    index = value.get<int64_t>();
  } else if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    absl::string_view digits = text;
    if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
    bool all_digits = !digits.empty();
    for (char c : digits) all_digits = all_digits && absl::ascii_isdigit(c);
    if (!all_digits || !absl::SimpleAtoi(text, &index)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " \"", text, "\" is not an integer"));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be an integer, got ", DescribeJson(value)));
  }
  if (index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", index, " is negative"));
  }
  if (index > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", index, " is too large"));
  }
  return static_cast<int>(index);
}

}  // namespace distrt
