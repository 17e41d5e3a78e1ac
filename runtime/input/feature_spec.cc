#include "runtime/input/feature_spec.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/cluster/json_util.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {

namespace {

// The most values one numeric feature may have: a missing feature fills
// `length` defaults into every example, so a typo such as 1e9 would make
// every record allocate gigabytes.
constexpr int64_t kMaxNumericLength = int64_t{1} << 20;

// Builds error messages of the form
//   "<source>: <section>[<index>] (\"<name>\"): <field> ..."
// where everything after the source is the path of the field in the JSON.
class FieldPath {
 public:
  FieldPath(absl::string_view source, std::string path)
      : source_(source), path_(std::move(path)) {}

  // The path of an entry of a list: "numeric[2]", plus its name once known.
  static FieldPath Entry(absl::string_view source, absl::string_view section,
                         size_t index, absl::string_view name = {}) {
    std::string path = absl::StrCat(section, "[", index, "]");
    if (!name.empty()) absl::StrAppend(&path, " (\"", name, "\")");
    return FieldPath(source, std::move(path));
  }

  // The path of a field of this object: "embedding_groups[1]
  // (\"ads\").admission".
  FieldPath Field(absl::string_view name) const {
    return FieldPath(source_, absl::StrCat(path_, ".", name));
  }

  absl::Status Error(absl::string_view what) const {
    if (path_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ": ", what));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": ", path_, ": ", what));
  }

 private:
  absl::string_view source_;
  std::string path_;
};

// Unknown keys are errors, so that a misspelt optional field ("buckts")
// is not silently ignored and its default silently used.
absl::Status CheckKeys(const Json& object,
                       const std::vector<absl::string_view>& known,
                       const FieldPath& at) {
  for (const auto& item : object.items()) {
    bool found = false;
    for (absl::string_view key : known) found = found || item.key() == key;
    if (!found) {
      return at.Error(absl::StrCat("unknown field \"", item.key(),
                                   "\" (the fields are ",
                                   absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

// "<field> <what>", or "<what>" where `at` is the field's own path (the
// fields of a group's admission and eviction).
std::string FieldSays(absl::string_view field, absl::string_view what) {
  return field.empty() ? std::string(what) : absl::StrCat(field, " ", what);
}

absl::StatusOr<std::string> GetString(const Json& value,
                                      absl::string_view field,
                                      const FieldPath& at) {
  if (!value.is_string()) {
    return at.Error(FieldSays(
        field, absl::StrCat("must be a string, got ", DescribeJson(value))));
  }
  return value.get<std::string>();
}

absl::StatusOr<int64_t> GetInteger(const Json& value, absl::string_view field,
                                   const FieldPath& at) {
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return at.Error(
        FieldSays(field, absl::StrCat(value.dump(), " is too large")));
  }
  if (!value.is_number_integer()) {
    return at.Error(FieldSays(
        field, absl::StrCat("must be an integer, got ", DescribeJson(value))));
  }
  return value.get<int64_t>();
}

absl::StatusOr<bool> GetBool(const Json& value, absl::string_view field,
                             const FieldPath& at) {
  if (!value.is_boolean()) {
    return at.Error(absl::StrCat(field, " must be true or false, got ",
                                 DescribeJson(value)));
  }
  return value.get<bool>();
}

// The entry's "name": required, so that later messages can name the entry.
absl::StatusOr<std::string> GetName(const Json& entry, const FieldPath& at) {
  auto it = entry.find("name");
  if (it == entry.end()) return at.Error("name is missing");
  return GetString(*it, "name", at);
}

// Checks that `json[key]`, when present, is a list of objects, and returns
// it (an empty list when absent).
absl::StatusOr<Json> GetObjectList(const Json& json, absl::string_view key,
                                   absl::string_view source) {
  auto it = json.find(std::string(key));
  if (it == json.end()) return Json::array();
  if (!it->is_array()) {
    return FieldPath(source, "")
        .Error(absl::StrCat(key, " must be a list, got ", DescribeJson(*it)));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_object()) {
      return FieldPath::Entry(source, key, i)
          .Error(
              absl::StrCat("must be an object, got ", DescribeJson((*it)[i])));
    }
  }
  return *it;
}

absl::StatusOr<NumericFeature> NumericFromJson(const Json& entry,
                                               absl::string_view source,
                                               size_t index) {
  const FieldPath unnamed = FieldPath::Entry(source, "numeric", index);
  NumericFeature feature;
  ASSIGN_OR_RETURN(feature.name, GetName(entry, unnamed));
  const FieldPath at = FieldPath::Entry(source, "numeric", index, feature.name);
  RETURN_IF_ERROR(CheckKeys(entry, {"name", "length", "default"}, at));
  if (auto it = entry.find("length"); it != entry.end()) {
    ASSIGN_OR_RETURN(feature.length, GetInteger(*it, "length", at));
  }
  if (auto it = entry.find("default"); it != entry.end()) {
    if (!it->is_number()) {
      return at.Error(
          absl::StrCat("default must be a number, got ", DescribeJson(*it)));
    }
    const double value = it->get<double>();
    // Checked here rather than after the conversion, so that the message
    // shows the number as written.
    if (!(std::fabs(value) <= std::numeric_limits<float>::max())) {
      return at.Error(
          absl::StrCat("default ", it->dump(), " does not fit in a float"));
    }
    feature.has_default = true;
    feature.default_value = static_cast<float>(value);
  }
  return feature;
}

absl::StatusOr<CategoricalKind> KindFromName(absl::string_view name,
                                             const FieldPath& at) {
  for (CategoricalKind kind :
       {CategoricalKind::kIdentity, CategoricalKind::kHashBucket,
        CategoricalKind::kHashed}) {
    if (name == CategoricalKindName(kind)) return kind;
  }
  return at.Error(
      absl::StrCat("unknown kind \"", name,
                   "\" (the kinds are identity, hash_bucket, hashed)"));
}

absl::StatusOr<CategoricalFeature> CategoricalFromJson(const Json& entry,
                                                       absl::string_view source,
                                                       size_t index) {
  const FieldPath unnamed = FieldPath::Entry(source, "categorical", index);
  CategoricalFeature feature;
  ASSIGN_OR_RETURN(feature.name, GetName(entry, unnamed));
  const FieldPath at =
      FieldPath::Entry(source, "categorical", index, feature.name);
  RETURN_IF_ERROR(
      CheckKeys(entry, {"name", "kind", "buckets", "required"}, at));
  auto kind = entry.find("kind");
  if (kind == entry.end()) {
    return at.Error("kind is missing (identity, hash_bucket or hashed)");
  }
  ASSIGN_OR_RETURN(std::string kind_name, GetString(*kind, "kind", at));
  ASSIGN_OR_RETURN(feature.kind, KindFromName(kind_name, at));
  if (auto it = entry.find("buckets"); it != entry.end()) {
    if (feature.kind == CategoricalKind::kHashed) {
      // A hashed feature's ids are kept whole: a bucket count here would be
      // a misunderstanding, not a setting.
      return at.Error(
          "buckets does not apply to kind hashed, whose ids are kept whole "
          "(use kind hash_bucket for Fingerprint64 % buckets)");
    }
    ASSIGN_OR_RETURN(feature.buckets, GetInteger(*it, "buckets", at));
  } else if (feature.kind != CategoricalKind::kHashed) {
    return at.Error(absl::StrCat("buckets is missing (kind ", kind_name,
                                 " needs a bucket count)"));
  }
  if (auto it = entry.find("required"); it != entry.end()) {
    ASSIGN_OR_RETURN(feature.required, GetBool(*it, "required", at));
  }
  return feature;
}

absl::StatusOr<Combiner> CombinerFromName(absl::string_view name,
                                          const FieldPath& at) {
  for (Combiner combiner :
       {Combiner::kSum, Combiner::kMean, Combiner::kSqrtn}) {
    if (name == CombinerName(combiner)) return combiner;
  }
  return at.Error(absl::StrCat("unknown combiner \"", name,
                               "\" (the combiners are sum, mean, sqrtn)"));
}

// object[key] when present, null when not; INVALID_ARGUMENT when present
// but `policy` does not take it (only `takers` do): set by mistake, it would
// silently do nothing.
absl::StatusOr<const Json*> PolicyField(const Json& object,
                                        absl::string_view key, bool taken,
                                        absl::string_view takers,
                                        absl::string_view policy,
                                        const FieldPath& at) {
  auto it = object.find(std::string(key));
  if (it == object.end()) return nullptr;
  if (!taken) {
    return at.Field(key).Error(
        absl::StrCat("applies to ", takers, " only, not to policy ", policy));
  }
  return &*it;
}

// The admission policy's name, at `at` (the admission object's path).
absl::StatusOr<AdmissionKind> AdmissionKindFromJson(const Json& object,
                                                    const FieldPath& at) {
  auto it = object.find("policy");
  if (it == object.end()) {
    return at.Error("policy is missing (always, min_count or probability)");
  }
  const FieldPath policy_at = at.Field("policy");
  ASSIGN_OR_RETURN(std::string name, GetString(*it, "", policy_at));
  AdmissionKind kind;
  if (!ParseAdmissionKind(name, &kind).ok()) {
    return policy_at.Error(
        absl::StrCat("unknown policy \"", name,
                     "\"; expected always, min_count or probability"));
  }
  return kind;
}

// A group's "admission" object, at `at` (its path). Each policy's own
// fields are required (min_count, probability) or optional (unknown,
// sketch_width), and no other policy's fields are allowed.
absl::StatusOr<AdmissionPolicy> AdmissionFromJson(const Json& object,
                                                  const FieldPath& at) {
  RETURN_IF_ERROR(CheckKeys(
      object, {"policy", "min_count", "probability", "unknown", "sketch_width"},
      at));
  AdmissionPolicy admission;
  ASSIGN_OR_RETURN(admission.kind, AdmissionKindFromJson(object, at));
  const absl::string_view policy = AdmissionKindName(admission.kind);
  const bool min_count = admission.kind == AdmissionKind::kMinCount;
  const bool probability = admission.kind == AdmissionKind::kProbability;

  ASSIGN_OR_RETURN(const Json* count,
                   PolicyField(object, "min_count", min_count,
                               "policy min_count", policy, at));
  if (count != nullptr) {
    ASSIGN_OR_RETURN(admission.min_count,
                     GetInteger(*count, "", at.Field("min_count")));
  } else if (min_count) {
    return at.Error(
        "min_count is missing (policy min_count admits an id once pulls "
        "have asked for it that many times)");
  }
  ASSIGN_OR_RETURN(const Json* p,
                   PolicyField(object, "probability", probability,
                               "policy probability", policy, at));
  if (p != nullptr) {
    if (!p->is_number()) {
      return at.Field("probability")
          .Error(absl::StrCat("must be a number, got ", DescribeJson(*p)));
    }
    admission.probability = p->get<double>();
  } else if (probability) {
    return at.Error(
        "probability is missing (policy probability admits an id without a "
        "row with that probability at each pull)");
  }
  ASSIGN_OR_RETURN(
      const Json* unknown,
      PolicyField(object, "unknown", min_count || probability,
                  "policies min_count and probability", policy, at));
  if (unknown != nullptr) {
    const FieldPath unknown_at = at.Field("unknown");
    ASSIGN_OR_RETURN(std::string name, GetString(*unknown, "", unknown_at));
    if (!ParseUnknownRow(name, &admission.unknown).ok()) {
      return unknown_at.Error(absl::StrCat("unknown row \"", name,
                                           "\"; expected zeros or shared_row"));
    }
  }
  ASSIGN_OR_RETURN(const Json* width,
                   PolicyField(object, "sketch_width", min_count,
                               "policy min_count", policy, at));
  if (width != nullptr) {
    ASSIGN_OR_RETURN(admission.sketch_width,
                     GetInteger(*width, "", at.Field("sketch_width")));
  }
  return admission;
}

// A group's "eviction" object, at `at` (its path).
absl::StatusOr<EvictionPolicy> EvictionFromJson(const Json& object,
                                                const FieldPath& at) {
  RETURN_IF_ERROR(CheckKeys(object, {"max_rows", "ttl_steps"}, at));
  EvictionPolicy eviction;
  if (auto it = object.find("max_rows"); it != object.end()) {
    ASSIGN_OR_RETURN(eviction.max_rows,
                     GetInteger(*it, "", at.Field("max_rows")));
  }
  if (auto it = object.find("ttl_steps"); it != object.end()) {
    ASSIGN_OR_RETURN(eviction.ttl_steps,
                     GetInteger(*it, "", at.Field("ttl_steps")));
  }
  return eviction;
}

// The group's "admission" and "eviction" objects, when present, into
// `policy`; `at` is the group's path.
absl::Status PolicyFromJson(const Json& entry, const FieldPath& at,
                            TablePolicy* policy) {
  for (absl::string_view key : {"admission", "eviction"}) {
    auto it = entry.find(std::string(key));
    if (it == entry.end()) continue;
    if (!it->is_object()) {
      return at.Error(
          absl::StrCat(key, " must be an object, got ", DescribeJson(*it)));
    }
    if (key == "admission") {
      ASSIGN_OR_RETURN(policy->admission,
                       AdmissionFromJson(*it, at.Field(key)));
    } else {
      ASSIGN_OR_RETURN(policy->eviction, EvictionFromJson(*it, at.Field(key)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<EmbeddingGroup> GroupFromJson(const Json& entry,
                                             absl::string_view source,
                                             size_t index) {
  const FieldPath unnamed = FieldPath::Entry(source, "embedding_groups", index);
  EmbeddingGroup group;
  ASSIGN_OR_RETURN(group.name, GetName(entry, unnamed));
  const FieldPath at =
      FieldPath::Entry(source, "embedding_groups", index, group.name);
  RETURN_IF_ERROR(CheckKeys(entry,
                            {"name", "features", "dim", "combiner",
                             "weight_feature", "admission", "eviction"},
                            at));
  auto features = entry.find("features");
  if (features == entry.end()) return at.Error("features is missing");
  if (!features->is_array()) {
    return at.Error(absl::StrCat("features must be a list of names, got ",
                                 DescribeJson(*features)));
  }
  for (size_t i = 0; i < features->size(); ++i) {
    ASSIGN_OR_RETURN(
        std::string name,
        GetString((*features)[i], absl::StrCat("features[", i, "]"), at));
    group.features.push_back(std::move(name));
  }
  auto dim = entry.find("dim");
  if (dim == entry.end()) return at.Error("dim is missing");
  ASSIGN_OR_RETURN(group.dim, GetInteger(*dim, "dim", at));
  if (auto it = entry.find("combiner"); it != entry.end()) {
    ASSIGN_OR_RETURN(std::string name, GetString(*it, "combiner", at));
    ASSIGN_OR_RETURN(group.combiner, CombinerFromName(name, at));
  }
  if (auto it = entry.find("weight_feature"); it != entry.end()) {
    ASSIGN_OR_RETURN(group.weight_feature,
                     GetString(*it, "weight_feature", at));
    if (group.weight_feature.empty()) {
      return at.Error(
          "weight_feature must not be empty (leave it out for weights of 1)");
    }
  }
  RETURN_IF_ERROR(PolicyFromJson(entry, at, &group.policy));
  return group;
}

// Where each feature name of a spec is declared, for "used twice" errors.
class FeatureNames {
 public:
  // Records that `name` is declared at `where` ("label", "numeric[2]", ...);
  // an error when it is already declared elsewhere.
  absl::Status Add(const std::string& name, std::string where,
                   const FieldPath& at) {
    auto [it, inserted] = declared_.emplace(name, where);
    if (!inserted) {
      return at.Error(absl::StrCat("feature \"", name,
                                   "\" is already declared by ", it->second));
    }
    return absl::OkStatus();
  }

  // Where `name` is declared; empty when it is not.
  std::string Find(const std::string& name) const {
    auto it = declared_.find(name);
    return it == declared_.end() ? std::string() : it->second;
  }

 private:
  absl::flat_hash_map<std::string, std::string> declared_;
};

absl::Status CheckNumeric(const NumericFeature& feature, const FieldPath& at) {
  if (feature.length < 1) {
    return at.Error(
        absl::StrCat("length must be at least 1, not ", feature.length));
  }
  if (feature.length > kMaxNumericLength) {
    return at.Error(absl::StrCat("length ", feature.length,
                                 " is more than the most allowed, ",
                                 kMaxNumericLength));
  }
  if (feature.has_default && !std::isfinite(feature.default_value)) {
    return at.Error(absl::StrCat("default must be a finite number, not ",
                                 feature.default_value));
  }
  return absl::OkStatus();
}

absl::Status CheckCategorical(const CategoricalFeature& feature,
                              const FieldPath& at) {
  if (feature.kind != CategoricalKind::kIdentity &&
      feature.kind != CategoricalKind::kHashBucket &&
      feature.kind != CategoricalKind::kHashed) {
    return at.Error(
        absl::StrCat("unknown kind ", static_cast<int>(feature.kind)));
  }
  if (feature.kind == CategoricalKind::kHashed) {
    if (feature.buckets != 0) {
      return at.Error(absl::StrCat(
          "buckets must be 0 for kind hashed, whose ids are kept whole, not ",
          feature.buckets));
    }
  } else if (feature.buckets < 1) {
    return at.Error(absl::StrCat("buckets must be at least 1 for kind ",
                                 CategoricalKindName(feature.kind), ", not ",
                                 feature.buckets));
  }
  return absl::OkStatus();
}

// The features of spec.groups[g]: categorical, each in no other group, all
// of one kind and bucket count. Records each one's group in `group_of`.
absl::Status CheckGroupFeatures(
    const FeatureSpec& spec, const EmbeddingGroup& group,
    const FeatureNames& names, const FieldPath& at,
    absl::flat_hash_map<std::string, std::string>* group_of) {
  if (group.features.empty()) {
    return at.Error("features must name at least one categorical feature");
  }
  const CategoricalFeature* first = nullptr;
  for (size_t f = 0; f < group.features.size(); ++f) {
    const std::string& name = group.features[f];
    const CategoricalFeature* feature = spec.FindCategorical(name);
    if (feature == nullptr) {
      const std::string declared = names.Find(name);
      if (declared.empty()) {
        return at.Error(absl::StrCat("features[", f, "]: unknown feature \"",
                                     name, "\" (not in the categorical list)"));
      }
      return at.Error(absl::StrCat("features[", f, "]: feature \"", name,
                                   "\" is not categorical (it is ", declared,
                                   ")"));
    }
    auto [it, inserted] = group_of->emplace(name, group.name);
    if (!inserted) {
      return at.Error(absl::StrCat("features[", f, "]: feature \"", name,
                                   "\" is already in embedding group \"",
                                   it->second, "\""));
    }
    if (first == nullptr) {
      first = feature;
    } else if (feature->kind != first->kind ||
               feature->buckets != first->buckets) {
      // One table: its ids must mean the same for every feature.
      return at.Error(absl::StrCat(
          "features[", f, "]: feature \"", name, "\" (kind ",
          CategoricalKindName(feature->kind), ", ", feature->buckets,
          " buckets) differs from feature \"", first->name, "\" (kind ",
          CategoricalKindName(first->kind), ", ", first->buckets,
          " buckets); the features of one group share one table"));
    }
  }
  return absl::OkStatus();
}

// Whether AdmissionSketch takes `width` counters per hash function: a
// power of two in 2^4..2^30.
bool IsSketchWidth(int64_t width) {
  return width >= 16 && width <= (int64_t{1} << 30) &&
         (width & (width - 1)) == 0;
}

// `at` is the admission object's path.
absl::Status CheckAdmission(const AdmissionPolicy& admission,
                            const FieldPath& at) {
  const AdmissionKind kind = admission.kind;
  if (kind != AdmissionKind::kAlways && kind != AdmissionKind::kMinCount &&
      kind != AdmissionKind::kProbability) {
    return at.Field("policy").Error(
        absl::StrCat("unknown policy ", static_cast<int>(kind)));
  }
  if (kind == AdmissionKind::kMinCount && admission.min_count < 1) {
    return at.Field("min_count")
        .Error(absl::StrCat("must be at least 1 under policy min_count, not ",
                            admission.min_count));
  }
  if (admission.min_count < 0) {
    return at.Field("min_count")
        .Error(absl::StrCat("must be at least 0, not ", admission.min_count));
  }
  if (!(admission.probability > 0 && admission.probability <= 1)) {
    return at.Field("probability")
        .Error(absl::StrCat("must be in (0, 1], not ", admission.probability));
  }
  if (admission.unknown != UnknownRow::kZeros &&
      admission.unknown != UnknownRow::kSharedRow) {
    return at.Field("unknown").Error(
        absl::StrCat("unknown row ", static_cast<int>(admission.unknown)));
  }
  if (!IsSketchWidth(admission.sketch_width)) {
    return at.Field("sketch_width")
        .Error(absl::StrCat("must be a power of two from 16 to 2^30, not ",
                            admission.sketch_width));
  }
  return absl::OkStatus();
}

// `at` is the eviction object's path.
absl::Status CheckEviction(const EvictionPolicy& eviction,
                           const FieldPath& at) {
  if (eviction.max_rows < 0) {
    return at.Field("max_rows")
        .Error(absl::StrCat("must be at least 0 (0: unbounded), not ",
                            eviction.max_rows));
  }
  if (eviction.ttl_steps.has_value() && *eviction.ttl_steps < 1) {
    return at.Field("ttl_steps")
        .Error(absl::StrCat(
            "must be at least 1 (leave it out for rows that never expire), "
            "not ",
            *eviction.ttl_steps));
  }
  return absl::OkStatus();
}

// The group's policy, at `at` (the group's path): the checks above name
// the field; ValidateTablePolicy, the ps tasks' own check, follows so that
// no spec passes here that CreateHashTable would refuse.
absl::Status CheckPolicy(const EmbeddingGroup& group, const FieldPath& at) {
  RETURN_IF_ERROR(
      CheckAdmission(group.policy.admission, at.Field("admission")));
  RETURN_IF_ERROR(CheckEviction(group.policy.eviction, at.Field("eviction")));
  if (absl::Status s = ValidateTablePolicy(group.policy, group.name); !s.ok()) {
    return at.Error(s.message());
  }
  return absl::OkStatus();
}

// spec.groups[g], after the features were declared in `names`; adds its
// weight feature there, its name to `group_names`.
absl::Status CheckGroup(
    const FeatureSpec& spec, size_t g, absl::string_view source,
    FeatureNames* names, absl::flat_hash_map<std::string, size_t>* group_names,
    absl::flat_hash_map<std::string, std::string>* group_of) {
  const EmbeddingGroup& group = spec.groups[g];
  const FieldPath at =
      FieldPath::Entry(source, "embedding_groups", g, group.name);
  if (group.name.empty()) return at.Error("name must not be empty");
  if (auto [it, inserted] = group_names->emplace(group.name, g); !inserted) {
    return at.Error(absl::StrCat("name is already used by embedding_groups[",
                                 it->second, "]"));
  }
  RETURN_IF_ERROR(CheckGroupFeatures(spec, group, *names, at, group_of));
  if (group.dim < 1) {
    return at.Error(absl::StrCat("dim must be at least 1, not ", group.dim));
  }
  if (group.combiner != Combiner::kSum && group.combiner != Combiner::kMean &&
      group.combiner != Combiner::kSqrtn) {
    return at.Error(
        absl::StrCat("unknown combiner ", static_cast<int>(group.combiner)));
  }
  RETURN_IF_ERROR(CheckPolicy(group, at));
  if (!group.weight_feature.empty()) {
    if (group.features.size() != 1) {
      return at.Error(
          absl::StrCat("weight_feature needs a group of one feature, not ",
                       group.features.size(),
                       " (the weights are matched to one feature's ids)"));
    }
    RETURN_IF_ERROR(names->Add(
        group.weight_feature,
        absl::StrCat("embedding_groups[", g, "].weight_feature"), at));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t FeatureSpec::num_dense() const {
  int64_t total = 0;
  for (const NumericFeature& feature : numeric) total += feature.length;
  return total;
}

const CategoricalFeature* FeatureSpec::FindCategorical(
    absl::string_view name) const {
  for (const CategoricalFeature& feature : categorical) {
    if (feature.name == name) return &feature;
  }
  return nullptr;
}

const CategoricalFeature& FeatureSpec::GroupKey(
    const EmbeddingGroup& group) const {
  // CheckFeatureSpec guarantees a first feature that is categorical.
  return *FindCategorical(group.features.front());
}

absl::Status CheckFeatureSpec(const FeatureSpec& spec,
                              absl::string_view source) {
  FeatureNames names;
  const FieldPath top(source, "");
  if (spec.label.empty()) return top.Error("label must not be empty");
  RETURN_IF_ERROR(names.Add(spec.label, "label", top));

  for (size_t i = 0; i < spec.numeric.size(); ++i) {
    const NumericFeature& feature = spec.numeric[i];
    const FieldPath at = FieldPath::Entry(source, "numeric", i, feature.name);
    if (feature.name.empty()) return at.Error("name must not be empty");
    RETURN_IF_ERROR(CheckNumeric(feature, at));
    RETURN_IF_ERROR(
        names.Add(feature.name, absl::StrCat("numeric[", i, "]"), at));
  }
  for (size_t i = 0; i < spec.categorical.size(); ++i) {
    const CategoricalFeature& feature = spec.categorical[i];
    const FieldPath at =
        FieldPath::Entry(source, "categorical", i, feature.name);
    if (feature.name.empty()) return at.Error("name must not be empty");
    RETURN_IF_ERROR(CheckCategorical(feature, at));
    RETURN_IF_ERROR(
        names.Add(feature.name, absl::StrCat("categorical[", i, "]"), at));
  }

  // Which group each categorical feature belongs to, and the group names.
  absl::flat_hash_map<std::string, std::string> group_of;
  absl::flat_hash_map<std::string, size_t> group_names;
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    RETURN_IF_ERROR(
        CheckGroup(spec, g, source, &names, &group_names, &group_of));
  }
  for (size_t i = 0; i < spec.categorical.size(); ++i) {
    const CategoricalFeature& feature = spec.categorical[i];
    if (!group_of.contains(feature.name)) {
      return FieldPath::Entry(source, "categorical", i, feature.name)
          .Error(
              "is in no embedding group (every categorical feature needs "
              "a table)");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<FeatureSpec> ParseFeatureSpec(absl::string_view json,
                                             absl::string_view source) {
  auto parsed = ParseJson(json);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", parsed.status().message()));
  }
  const FieldPath top(source, "");
  if (!parsed->is_object()) {
    return top.Error(absl::StrCat("a feature spec must be an object, got ",
                                  DescribeJson(*parsed)));
  }
  RETURN_IF_ERROR(CheckKeys(
      *parsed, {"label", "numeric", "categorical", "embedding_groups"}, top));

  FeatureSpec spec;
  auto label = parsed->find("label");
  if (label == parsed->end()) return top.Error("label is missing");
  ASSIGN_OR_RETURN(spec.label, GetString(*label, "label", top));

  ASSIGN_OR_RETURN(Json numeric, GetObjectList(*parsed, "numeric", source));
  for (size_t i = 0; i < numeric.size(); ++i) {
    ASSIGN_OR_RETURN(NumericFeature feature,
                     NumericFromJson(numeric[i], source, i));
    spec.numeric.push_back(std::move(feature));
  }
  ASSIGN_OR_RETURN(Json categorical,
                   GetObjectList(*parsed, "categorical", source));
  for (size_t i = 0; i < categorical.size(); ++i) {
    ASSIGN_OR_RETURN(CategoricalFeature feature,
                     CategoricalFromJson(categorical[i], source, i));
    spec.categorical.push_back(std::move(feature));
  }
  ASSIGN_OR_RETURN(Json groups,
                   GetObjectList(*parsed, "embedding_groups", source));
  for (size_t i = 0; i < groups.size(); ++i) {
    ASSIGN_OR_RETURN(EmbeddingGroup group, GroupFromJson(groups[i], source, i));
    spec.groups.push_back(std::move(group));
  }
  RETURN_IF_ERROR(CheckFeatureSpec(spec, source));
  return spec;
}

absl::StatusOr<FeatureSpec> ReadFeatureSpec(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseFeatureSpec(text, path);
}

absl::string_view CombinerName(Combiner combiner) {
  switch (combiner) {
    case Combiner::kSum:
      return "sum";
    case Combiner::kMean:
      return "mean";
    case Combiner::kSqrtn:
      return "sqrtn";
  }
  return "unknown";
}

absl::string_view CategoricalKindName(CategoricalKind kind) {
  switch (kind) {
    case CategoricalKind::kIdentity:
      return "identity";
    case CategoricalKind::kHashBucket:
      return "hash_bucket";
    case CategoricalKind::kHashed:
      return "hashed";
  }
  return "unknown";
}

}  // namespace distrt
