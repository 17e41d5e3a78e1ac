#include "runtime/ps/table_policy.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distrt {
namespace {

constexpr int64_t kMinSketchWidth = int64_t{1} << 4;
constexpr int64_t kMaxSketchWidth = int64_t{1} << 30;

absl::Status Invalid(absl::string_view table, absl::string_view field,
                     absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(
      "hash embedding table \"", table, "\": ", field, " ", problem));
}

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

absl::Status ValidateAdmission(const AdmissionPolicy& a,
                               absl::string_view table) {
  switch (a.kind) {
    case AdmissionKind::kAlways:
    case AdmissionKind::kMinCount:
    case AdmissionKind::kProbability:
      break;
    default:
      return Invalid(table, "admission.policy",
                     absl::StrCat("is ", static_cast<int>(a.kind),
                                  ", not a known policy (always, min_count, "
                                  "probability)"));
  }
  if (a.unknown != UnknownRow::kZeros && a.unknown != UnknownRow::kSharedRow) {
    return Invalid(table, "admission.unknown",
                   absl::StrCat("is ", static_cast<int>(a.unknown),
                                ", not a known choice (zeros, shared_row)"));
  }
  // min_count is checked whatever the policy, so that a negative count is
  // caught even where it is not (yet) used.
  if (a.min_count < 0) {
    return Invalid(table, "admission.min_count",
                   absl::StrCat("is ", a.min_count, ", must be at least 0"));
  }
  if (a.kind == AdmissionKind::kMinCount && a.min_count < 1) {
    return Invalid(table, "admission.min_count",
                   absl::StrCat("is ", a.min_count,
                                ", must be at least 1 under the min_count "
                                "policy"));
  }
  // The negated comparison also refuses NaN.
  if (!(a.probability > 0.0 && a.probability <= 1.0)) {
    return Invalid(table, "admission.probability",
                   absl::StrCat("is ", a.probability, ", must be in (0, 1]"));
  }
  if (!IsPowerOfTwo(a.sketch_width) || a.sketch_width < kMinSketchWidth ||
      a.sketch_width > kMaxSketchWidth) {
    return Invalid(
        table, "admission.sketch_width",
        absl::StrCat("is ", a.sketch_width, ", must be a power of two from ",
                     kMinSketchWidth, " to ", kMaxSketchWidth));
  }
  return absl::OkStatus();
}

absl::Status ValidateEviction(const EvictionPolicy& e,
                              absl::string_view table) {
  if (e.max_rows < 0) {
    return Invalid(
        table, "eviction.max_rows",
        absl::StrCat("is ", e.max_rows, ", must be at least 0 (0: unbounded)"));
  }
  if (e.ttl_steps.has_value() && *e.ttl_steps < 1) {
    return Invalid(table, "eviction.ttl_steps",
                   absl::StrCat("is ", *e.ttl_steps,
                                ", must be at least 1 (leave it unset for "
                                "rows that never expire)"));
  }
  return absl::OkStatus();
}

std::string TtlString(const std::optional<int64_t>& ttl) {
  return ttl.has_value() ? absl::StrCat(*ttl) : "unset";
}

}  // namespace

absl::Status ValidateTablePolicy(const TablePolicy& policy,
                                 absl::string_view table) {
  if (absl::Status s = ValidateAdmission(policy.admission, table); !s.ok()) {
    return s;
  }
  return ValidateEviction(policy.eviction, table);
}

absl::string_view AdmissionKindName(AdmissionKind kind) {
  switch (kind) {
    case AdmissionKind::kAlways:
      return "always";
    case AdmissionKind::kMinCount:
      return "min_count";
    case AdmissionKind::kProbability:
      return "probability";
  }
  return "unknown";
}

absl::Status ParseAdmissionKind(absl::string_view name, AdmissionKind* kind) {
  for (AdmissionKind k : {AdmissionKind::kAlways, AdmissionKind::kMinCount,
                          AdmissionKind::kProbability}) {
    if (name == AdmissionKindName(k)) {
      *kind = k;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown admission policy \"", name,
                   "\" (expected always, min_count or probability)"));
}

absl::string_view UnknownRowName(UnknownRow unknown) {
  switch (unknown) {
    case UnknownRow::kZeros:
      return "zeros";
    case UnknownRow::kSharedRow:
      return "shared_row";
  }
  return "unknown";
}

absl::Status ParseUnknownRow(absl::string_view name, UnknownRow* unknown) {
  for (UnknownRow u : {UnknownRow::kZeros, UnknownRow::kSharedRow}) {
    if (name == UnknownRowName(u)) {
      *unknown = u;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown choice \"", name,
                   "\" for what lookups of ids without a row get (expected "
                   "zeros or shared_row)"));
}

std::string DescribePolicyDifference(const TablePolicy& a,
                                     const TablePolicy& b) {
  std::vector<std::string> diffs;
  auto differs = [&diffs](absl::string_view field, const auto& x,
                          const auto& y) {
    if (x != y) diffs.push_back(absl::StrCat(field, " ", x, " vs ", y));
  };
  const AdmissionPolicy& aa = a.admission;
  const AdmissionPolicy& ab = b.admission;
  differs("admission.policy", AdmissionKindName(aa.kind),
          AdmissionKindName(ab.kind));
  differs("admission.min_count", aa.min_count, ab.min_count);
  differs("admission.probability", aa.probability, ab.probability);
  differs("admission.unknown", UnknownRowName(aa.unknown),
          UnknownRowName(ab.unknown));
  differs("admission.sketch_width", aa.sketch_width, ab.sketch_width);
  differs("eviction.max_rows", a.eviction.max_rows, b.eviction.max_rows);
  differs("eviction.ttl_steps", TtlString(a.eviction.ttl_steps),
          TtlString(b.eviction.ttl_steps));
  return absl::StrJoin(diffs, ", ");
}

}  // namespace distrt
