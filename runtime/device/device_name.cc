#include "runtime/device/device_name.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace distrt {
namespace {

// [A-Za-z][A-Za-z0-9_]*, as TF's job names and device types.
bool ConsumeIdentifier(absl::string_view* in, std::string* out) {
  size_t n = 0;
  while (n < in->size() && (absl::ascii_isalnum((*in)[n]) || (*in)[n] == '_')) {
    ++n;
  }
  if (n == 0 || !absl::ascii_isalpha(in->front())) return false;
  *out = std::string(in->substr(0, n));
  in->remove_prefix(n);
  return true;
}

bool ConsumeNumber(absl::string_view* in, int* out) {
  size_t n = 0;
  while (n < in->size() && absl::ascii_isdigit((*in)[n])) ++n;
  if (n == 0 || !absl::SimpleAtoi(in->substr(0, n), out)) return false;
  in->remove_prefix(n);
  return true;
}

std::string CanonicalType(std::string type) {
  const std::string upper = absl::AsciiStrToUpper(type);
  if (upper == "CPU" || upper == "GPU" || upper == "TPU") return upper;
  return type;
}

// "*" means "any": the part stays unset. Otherwise a number is required.
bool ConsumeNumberOrAny(absl::string_view* in, std::optional<int>* out) {
  out->reset();
  if (absl::ConsumePrefix(in, "*")) return true;
  int value = 0;
  if (!ConsumeNumber(in, &value)) return false;
  *out = value;
  return true;
}

// "TYPE" then optionally ":ID" or ":*".
bool ConsumeDevice(absl::string_view* in, DeviceName* name) {
  name->type.reset();
  name->id.reset();
  if (!absl::ConsumePrefix(in, "*")) {
    std::string type;
    if (!ConsumeIdentifier(in, &type)) return false;
    name->type = CanonicalType(type);
  }
  if (!absl::ConsumePrefix(in, ":")) return true;
  return ConsumeNumberOrAny(in, &name->id);
}

template <typename T>
absl::Status MergePart(absl::string_view part, std::optional<T>* target,
                       const std::optional<T>& other) {
  if (!other.has_value()) return absl::OkStatus();
  if (target->has_value() && **target != *other) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot merge device names with different ", part, ": '",
                     **target, "' and '", *other, "'"));
  }
  *target = other;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeviceName> DeviceName::Parse(absl::string_view name) {
  auto invalid = [name](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid device name \"", name, "\": ", why));
  };
  DeviceName parsed;
  absl::string_view rest = name;
  if (!rest.empty() && rest.front() != '/') {
    // A local name: "GPU:1", "cpu:0", "GPU".
    if (!ConsumeDevice(&rest, &parsed) || !rest.empty()) {
      return invalid("expected TYPE:ID such as GPU:0, or a name starting '/'");
    }
    return parsed;
  }
  while (!rest.empty()) {
    bool ok = true;
    std::string job;
    if (absl::ConsumePrefix(&rest, "/job:")) {
      if (absl::ConsumePrefix(&rest, "*")) {
        parsed.job.reset();
      } else if ((ok = ConsumeIdentifier(&rest, &job))) {
        parsed.job = job;
      }
    } else if (absl::ConsumePrefix(&rest, "/replica:")) {
      ok = ConsumeNumberOrAny(&rest, &parsed.replica);
    } else if (absl::ConsumePrefix(&rest, "/task:")) {
      ok = ConsumeNumberOrAny(&rest, &parsed.task);
    } else if (absl::ConsumePrefix(&rest, "/device:")) {
      ok = ConsumeDevice(&rest, &parsed);
    } else if (absl::StartsWithIgnoreCase(rest, "/cpu:") ||
               absl::StartsWithIgnoreCase(rest, "/gpu:")) {
      // Legacy "/cpu:0" and "/gpu:1".
      parsed.type = absl::AsciiStrToUpper(rest.substr(1, 3));
      rest.remove_prefix(5);
      ok = ConsumeNumberOrAny(&rest, &parsed.id);
    } else {
      return invalid(absl::StrCat(
          "unexpected \"", rest,
          "\"; expected /job:NAME, /replica:N, /task:N or /device:TYPE:N"));
    }
    if (!ok)
      return invalid(absl::StrCat("malformed part before \"", rest, "\""));
  }
  return parsed;
}

std::string DeviceName::ToString() const {
  std::string out;
  if (job) absl::StrAppend(&out, "/job:", *job);
  if (replica) absl::StrAppend(&out, "/replica:", *replica);
  if (task) absl::StrAppend(&out, "/task:", *task);
  if (type) {
    absl::StrAppend(&out, "/device:", *type, ":");
    if (id) {
      absl::StrAppend(&out, *id);
    } else {
      absl::StrAppend(&out, "*");
    }
  }
  return out;
}

absl::Status DeviceName::MergeFrom(const DeviceName& other) {
  DeviceName merged = *this;
  for (absl::Status s : {MergePart("jobs", &merged.job, other.job),
                         MergePart("replicas", &merged.replica, other.replica),
                         MergePart("tasks", &merged.task, other.task),
                         MergePart("device types", &merged.type, other.type),
                         MergePart("device ids", &merged.id, other.id)}) {
    if (!s.ok()) return s;
  }
  *this = std::move(merged);
  return absl::OkStatus();
}

DeviceName DeviceName::WithDefaults(const DeviceName& defaults) const {
  DeviceName merged = *this;
  if (!merged.job) merged.job = defaults.job;
  if (!merged.replica) merged.replica = defaults.replica;
  if (!merged.task) merged.task = defaults.task;
  if (!merged.type) merged.type = defaults.type;
  if (!merged.id) merged.id = defaults.id;
  return merged;
}

}  // namespace distrt
