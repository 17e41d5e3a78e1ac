#ifndef DISTRT_RUNTIME_PS_TABLE_POLICY_H_
#define DISTRT_RUNTIME_PS_TABLE_POLICY_H_

// TablePolicy: which ids of a hash embedding table get a trainable row
// (admission) and which rows it gives up (eviction), so that a table's memory
// stays bounded on a click log where most ids are seen once or twice — what
// Monolith and TensorFlow Recommenders-Addons offer.
//
// Admission:
//   kAlways       every id gets a row on first use (the default).
//   kMinCount     an id gets a row once pulls have asked for it min_count
//                 times, counted in a count-min sketch of bounded memory
//                 (AdmissionSketch); until then lookups get the unknown row
//                 and pushes to it are dropped (and counted).
//   kProbability  each pull of an id without a row admits it with
//                 probability `probability` (TFRA's probability filter).
// Eviction (per ps task, in small increments beside serving):
//   max_rows   the rows least recently updated go once more are held; 0:
//              unbounded.
//   ttl_steps  a row not updated for that many global steps goes; unset:
//              rows never expire.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distrt {

enum class AdmissionKind { kAlways, kMinCount, kProbability };

// What a lookup of an id without a row gets.
enum class UnknownRow {
  kZeros,      // zeros
  kSharedRow,  // one row, from the table's initializer, that never trains
};

struct AdmissionPolicy {
  AdmissionKind kind = AdmissionKind::kAlways;
  int64_t min_count = 0;     // kMinCount: >= 1
  double probability = 1.0;  // kProbability: in (0, 1]
  UnknownRow unknown = UnknownRow::kZeros;
  // kMinCount: counters per hash function of the sketch (it has 4), a power
  // of two; its memory is 4 * sketch_width * 4 bytes.
  int64_t sketch_width = int64_t{1} << 20;
};

struct EvictionPolicy {
  int64_t max_rows = 0;              // >= 0; 0: unbounded
  std::optional<int64_t> ttl_steps;  // >= 1 when set
};

struct TablePolicy {
  AdmissionPolicy admission;
  EvictionPolicy eviction;

  bool admits_all() const { return admission.kind == AdmissionKind::kAlways; }
  bool evicts() const {
    return eviction.max_rows > 0 || eviction.ttl_steps.has_value();
  }
};

// OK, or INVALID_ARGUMENT naming the table and the field, e.g.
// "hash embedding table \"C1\": eviction.max_rows is -1, must be at least 0
// (0: unbounded)": min_count < 1 under kMinCount or < 0 at all, probability
// outside (0, 1], max_rows < 0, ttl_steps < 1, sketch_width not a power of
// two in 2^4..2^30.
absl::Status ValidateTablePolicy(const TablePolicy& policy,
                                 absl::string_view table);

// "always", "min_count", "probability"; ParseAdmissionKind is its inverse,
// INVALID_ARGUMENT listing the names for any other.
absl::string_view AdmissionKindName(AdmissionKind kind);
absl::Status ParseAdmissionKind(absl::string_view name, AdmissionKind* kind);
// "zeros", "shared_row"; likewise.
absl::string_view UnknownRowName(UnknownRow unknown);
absl::Status ParseUnknownRow(absl::string_view name, UnknownRow* unknown);

// Empty when equal; otherwise what differs, e.g. "eviction.max_rows 10 vs
// 20".
std::string DescribePolicyDifference(const TablePolicy& a,
                                     const TablePolicy& b);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_TABLE_POLICY_H_
