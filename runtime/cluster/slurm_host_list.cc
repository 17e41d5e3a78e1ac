#include "runtime/cluster/slurm_host_list.h"

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// More hosts than any cluster has: a typo such as "n[1-99999999]" is
// refused instead of filling memory.
constexpr int64_t kMaxHosts = 1 << 20;

// What is wrong, naming the bad part; the caller names the list (the
// resolver: "Slurm: SLURM_STEP_NODELIST=\"...\": ").
absl::Status BadHostList(absl::string_view why) {
  return absl::InvalidArgumentError(why);
}

bool AllDigits(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return true;
}

// "01-04,07" -> 01 02 03 04 07.
absl::StatusOr<std::vector<std::string>> ExpandRanges(absl::string_view group) {
  std::vector<std::string> numbers;
  for (absl::string_view part : absl::StrSplit(group, ',')) {
    std::pair<absl::string_view, absl::string_view> bounds =
        absl::StrSplit(part, absl::MaxSplits('-', 1));
    const absl::string_view low = bounds.first;
    const absl::string_view high =
        part.find('-') == absl::string_view::npos ? low : bounds.second;
    uint64_t first = 0;
    uint64_t last = 0;
    if (!AllDigits(low) || !AllDigits(high) || low.size() > 18 ||
        high.size() > 18 || !absl::SimpleAtoi(low, &first) ||
        !absl::SimpleAtoi(high, &last)) {
      return BadHostList(absl::StrCat("\"", part,
                                      "\" is not a number or a range "
                                      "of numbers such as 01-04"));
    }
    if (last < first) {
      return BadHostList(absl::StrCat("the range \"", part, "\" descends"));
    }
    if (last - first >= static_cast<uint64_t>(kMaxHosts)) {
      return BadHostList(absl::StrCat("the range \"", part, "\" has more than ",
                                      kMaxHosts, " hosts"));
    }
    const int width = static_cast<int>(low.size());
    for (uint64_t n = first; n <= last; ++n) {
      numbers.push_back(absl::StrFormat("%0*d", width, n));
    }
  }
  return numbers;
}

// One host expression: text and bracket groups, e.g. "rack[1-2]-n[01-02]".
absl::Status ExpandItem(absl::string_view item,
                        std::vector<std::string>& hosts) {
  std::vector<std::string> expanded = {""};
  size_t pos = 0;
  while (pos < item.size()) {
    const size_t open = item.find('[', pos);
    const absl::string_view text = item.substr(
        pos,
        open == absl::string_view::npos ? absl::string_view::npos : open - pos);
    if (text.find(']') != absl::string_view::npos) {
      return BadHostList(absl::StrCat("\"", item,
                                      "\" has a ']' without "
                                      "its '['"));
    }
    if (open == absl::string_view::npos) {
      if (pos > 0) {
        // scontrol refuses "n[1-2]x": text may only come before a bracket.
        return BadHostList(absl::StrCat("\"", item,
                                        "\" has text after its last "
                                        "bracket"));
      }
      for (std::string& host : expanded) absl::StrAppend(&host, text);
      break;
    }
    const size_t close = item.find(']', open);
    if (close == absl::string_view::npos) {
      return BadHostList(absl::StrCat("\"", item,
                                      "\" has a '[' without "
                                      "its ']'"));
    }
    ASSIGN_OR_RETURN(std::vector<std::string> numbers,
                     ExpandRanges(item.substr(open + 1, close - open - 1)));
    if (static_cast<int64_t>(expanded.size()) *
            static_cast<int64_t>(numbers.size()) >
        kMaxHosts) {
      return BadHostList(absl::StrCat("more than ", kMaxHosts, " hosts"));
    }
    std::vector<std::string> next;
    next.reserve(expanded.size() * numbers.size());
    for (const std::string& head : expanded) {
      for (const std::string& number : numbers) {
        next.push_back(absl::StrCat(head, text, number));
      }
    }
    expanded = std::move(next);
    pos = close + 1;
  }
  if (hosts.size() + expanded.size() > static_cast<size_t>(kMaxHosts)) {
    return BadHostList(absl::StrCat("more than ", kMaxHosts, " hosts"));
  }
  for (std::string& host : expanded) hosts.push_back(std::move(host));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSlurmHostList(
    absl::string_view list) {
  std::vector<std::string> hosts;
  // Items are separated by the commas outside brackets.
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size()) {
      const char c = list[i];
      if (c == '[') {
        if (depth > 0) return BadHostList("brackets inside brackets");
        ++depth;
      } else if (c == ']') {
        depth = depth > 0 ? depth - 1 : depth;
      }
      if (c != ',' || depth > 0) continue;
    }
    if (depth > 0) {
      return BadHostList("a '[' without its ']'");
    }
    const absl::string_view item = list.substr(start, i - start);
    if (item.empty()) {
      if (list.empty()) break;
      return BadHostList("an empty host name");
    }
    RETURN_IF_ERROR(ExpandItem(item, hosts));
    start = i + 1;
  }
  return hosts;
}

absl::StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(
    absl::string_view list) {
  std::vector<int> counts;
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    absl::string_view count = item;
    absl::string_view repeat = "1";
    if (const size_t paren = item.find('('); paren != absl::string_view::npos) {
      count = item.substr(0, paren);
      repeat = item.substr(paren);
      if (repeat.size() < 4 || repeat.substr(0, 2) != "(x" ||
          repeat.back() != ')') {
        repeat = "";
      } else {
        repeat = repeat.substr(2, repeat.size() - 3);
      }
    }
    int tasks = 0;
    int times = 0;
    if (!AllDigits(count) || !AllDigits(repeat) ||
        !absl::SimpleAtoi(count, &tasks) || !absl::SimpleAtoi(repeat, &times) ||
        tasks < 1 || times < 1 || times > kMaxHosts ||
        counts.size() + times > static_cast<size_t>(kMaxHosts)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", item, "\" is not a task count such as 2 or 2(x3)"));
    }
    counts.insert(counts.end(), times, tasks);
  }
  return counts;
}

}  // namespace distrt
