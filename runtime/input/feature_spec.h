#ifndef DISTRT_RUNTIME_INPUT_FEATURE_SPEC_H_
#define DISTRT_RUNTIME_INPUT_FEATURE_SPEC_H_

// FeatureSpec: what each named input feature is, in tf.io / feature-column
// terms, and how the categorical ones group into embedding tables
// (--features=SPEC.json; docs/input.md gives the JSON). A record with named
// features (a tf.Example, a CSV row with a header) becomes an Example:
//   label    <- the label feature (one float or int64 value)
//   dense    <- the numeric features, concatenated in the spec's order
//   groups   <- per embedding group, its categorical features' ids (and
//               weights) in the spec's order
//
// Categorical kinds, as TensorFlow's feature columns:
//   identity     int64 ids in [0, buckets)
//                (categorical_column_with_identity)
//   hash_bucket  strings, or int64s written as decimal strings, into
//                Fingerprint64(s) % buckets: FarmHash's Fingerprint64, the
//                hash of TF's categorical_column_with_hash_bucket, so that
//                a TF model's buckets stay the same
//   hashed       int64 ids (or strings, by Fingerprint64) kept whole, for a
//                hash embedding table on the ps tasks: no vocabulary and no
//                bucket count
//
// Every feature of a group must be of the same kind and, for identity and
// hash_bucket, have the same bucket count: they share one table's ids.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/ps/table_policy.h"

namespace distrt {

struct NumericFeature {
  std::string name;
  int64_t length = 1;  // >= 1: values per example (tf.io.FixedLenFeature)
  // A missing feature takes default_value in every position; without one
  // it is an error.
  bool has_default = false;
  float default_value = 0.0f;
};

enum class CategoricalKind { kIdentity, kHashBucket, kHashed };

struct CategoricalFeature {
  std::string name;
  CategoricalKind kind = CategoricalKind::kIdentity;
  int64_t buckets = 0;  // >= 1 for identity and hash_bucket; 0 for hashed
  // A missing feature is an error when required, else no ids.
  bool required = false;
};

enum class Combiner { kSum, kMean, kSqrtn };

struct EmbeddingGroup {
  std::string name;                     // the table's variable name
  std::vector<std::string> features;    // categorical features, >= 1
  int64_t dim = 0;                      // >= 1
  Combiner combiner = Combiner::kMean;  // embedding_column's default
  // A float feature of the same length as the group's ids, their weights
  // (weighted_categorical_column); empty: all 1. Only for one-feature
  // groups.
  std::string weight_feature;
  // Which ids get a row of the group's table and which rows it gives up
  // ("admission" and "eviction" in the JSON); the default: every id, kept
  // for ever.
  TablePolicy policy;
};

struct FeatureSpec {
  std::string label;  // the label feature's name
  std::vector<NumericFeature> numeric;
  std::vector<CategoricalFeature> categorical;
  std::vector<EmbeddingGroup> groups;

  // Floats per example in Example::dense: the numeric lengths' sum.
  int64_t num_dense() const;
  // The categorical feature of that name; null if none.
  const CategoricalFeature* FindCategorical(absl::string_view name) const;
  // The kind and bucket count a group's table has (its first feature's).
  const CategoricalFeature& GroupKey(const EmbeddingGroup& group) const;
};

// Parses and checks a spec. INVALID_ARGUMENT naming `source` (the file, for
// messages) and the field, e.g. "spec.json: categorical[2] (\"C3\"):
// buckets must be at least 1 for kind identity": bad JSON, unknown fields,
// a name used twice, a group naming an unknown or non-categorical feature
// or a feature of another group, features of one group that differ in kind
// or buckets, a categorical feature in no group, an unknown kind or
// combiner, an unknown admission policy or a policy value out of range
// (e.g. "spec.json: embedding_groups[1] (\"C2\").eviction.ttl_steps: must
// be at least 1 (leave it out for rows that never expire), not 0").
absl::StatusOr<FeatureSpec> ParseFeatureSpec(absl::string_view json,
                                             absl::string_view source);
// The checks ParseFeatureSpec makes after reading the JSON, for a spec built
// in code (FeatureParser::Create makes them): the same errors, with field
// paths that index the spec's vectors ("embedding_groups[1]" is groups[1]).
absl::Status CheckFeatureSpec(const FeatureSpec& spec,
                              absl::string_view source);
// Reads and parses the file at `path`; errors name it.
absl::StatusOr<FeatureSpec> ReadFeatureSpec(const std::string& path);

absl::string_view CombinerName(Combiner combiner);
absl::string_view CategoricalKindName(CategoricalKind kind);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_FEATURE_SPEC_H_
