#include "runtime/ps/spec_proto.h"

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {

ps::DataType DTypeToProto(DType dtype) {
  return dtype == DType::kInt64 ? ps::INT64 : ps::FLOAT32;
}

absl::StatusOr<DType> DTypeFromProto(int dtype) {
  switch (dtype) {
    case ps::DATA_TYPE_UNSPECIFIED:
    case ps::FLOAT32:
      return DType::kFloat32;
    case ps::INT64:
      return DType::kInt64;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype ", dtype, " (expected FLOAT32 or INT64)"));
}

ps::RowRange RowRangeToProto(RowRange rows) {
  ps::RowRange proto;
  proto.set_begin(rows.begin);
  proto.set_end(rows.end);
  return proto;
}

RowRange RowRangeFromProto(const ps::RowRange& rows) {
  return RowRange{rows.begin(), rows.end()};
}

void InitializerToProto(const InitializerSpec& spec,
                        ps::InitializerConfig* proto) {
  proto->set_kind(static_cast<ps::InitializerConfig::Kind>(spec.kind));
  proto->set_value(spec.value);
  proto->set_minval(spec.minval);
  proto->set_maxval(spec.maxval);
  proto->set_mean(spec.mean);
  proto->set_stddev(spec.stddev);
  proto->set_seed(spec.seed);
}

absl::StatusOr<InitializerSpec> InitializerFromProto(
    const ps::InitializerConfig& proto) {
  if (!ps::InitializerConfig::Kind_IsValid(proto.kind())) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown initializer kind ", proto.kind()));
  }
  InitializerSpec spec;
  spec.kind = static_cast<InitializerSpec::Kind>(proto.kind());
  if (proto.has_value()) spec.value = proto.value();
  if (proto.has_minval()) spec.minval = proto.minval();
  if (proto.has_maxval()) spec.maxval = proto.maxval();
  if (proto.has_mean()) spec.mean = proto.mean();
  if (proto.has_stddev()) spec.stddev = proto.stddev();
  spec.seed = proto.seed();
  return spec;
}

void OptimizerToProto(const OptimizerConfig& c, ps::OptimizerConfig* proto) {
  proto->set_kind(static_cast<ps::OptimizerConfig::Kind>(c.kind));
  proto->set_learning_rate(c.learning_rate);
  proto->set_momentum(c.momentum);
  proto->set_nesterov(c.nesterov);
  proto->set_initial_accumulator_value(c.initial_accumulator_value);
  proto->set_epsilon(c.epsilon);
  proto->set_beta1(c.beta1);
  proto->set_beta2(c.beta2);
  proto->set_learning_rate_power(c.learning_rate_power);
  proto->set_l1_regularization(c.l1_regularization);
  proto->set_l2_regularization(c.l2_regularization);
}

absl::StatusOr<OptimizerConfig> OptimizerFromProto(
    const ps::OptimizerConfig& p) {
  if (!ps::OptimizerConfig::Kind_IsValid(p.kind())) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown optimizer kind ", p.kind()));
  }
  OptimizerConfig c;
  c.kind = static_cast<OptimizerKind>(p.kind());
  if (p.has_learning_rate()) c.learning_rate = p.learning_rate();
  if (p.has_momentum()) c.momentum = p.momentum();
  if (p.has_nesterov()) c.nesterov = p.nesterov();
  if (p.has_initial_accumulator_value()) {
    c.initial_accumulator_value = p.initial_accumulator_value();
  }
  if (p.has_epsilon()) c.epsilon = p.epsilon();
  if (p.has_beta1()) c.beta1 = p.beta1();
  if (p.has_beta2()) c.beta2 = p.beta2();
  if (p.has_learning_rate_power()) {
    c.learning_rate_power = p.learning_rate_power();
  }
  if (p.has_l1_regularization()) c.l1_regularization = p.l1_regularization();
  if (p.has_l2_regularization()) c.l2_regularization = p.l2_regularization();
  return c;
}

namespace {

// How values start and how pushes change them: what variable and
// hash-table specs share.
absl::Status DecodeUpdates(const ps::InitializerConfig& init_proto,
                           const ps::OptimizerConfig& opt_proto,
                           InitializerSpec* init, OptimizerConfig* opt) {
  ASSIGN_OR_RETURN(InitializerSpec decoded_init,
                   InitializerFromProto(init_proto));
  ASSIGN_OR_RETURN(OptimizerConfig decoded_opt, OptimizerFromProto(opt_proto));
  *init = decoded_init;
  *opt = decoded_opt;
  return absl::OkStatus();
}

}  // namespace

void VariableSpecToProto(const VariableSpec& spec, ps::VariableSpec* proto) {
  proto->set_name(spec.name);
  proto->set_dtype(DTypeToProto(spec.dtype));
  proto->mutable_shape()->Assign(spec.shape.begin(), spec.shape.end());
  InitializerToProto(spec.initializer, proto->mutable_initializer());
  OptimizerToProto(spec.optimizer, proto->mutable_optimizer());
}

absl::StatusOr<VariableSpec> VariableSpecFromProto(
    const ps::VariableSpec& proto) {
  auto named = [&proto](const absl::Status& s) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", proto.name(), "\": ", s.message()));
  };
  VariableSpec spec;
  spec.name = proto.name();
  absl::StatusOr<DType> dtype = DTypeFromProto(proto.dtype());
  if (!dtype.ok()) return named(dtype.status());
  spec.dtype = *dtype;
  spec.shape.assign(proto.shape().begin(), proto.shape().end());
  if (absl::Status s = DecodeUpdates(proto.initializer(), proto.optimizer(),
                                     &spec.initializer, &spec.optimizer);
      !s.ok()) {
    return named(s);
  }
  return spec;
}

void VariableInfoToProto(const VariableInfo& info, ps::VariableInfo* proto) {
  VariableSpecToProto(info.spec, proto->mutable_spec());
  *proto->mutable_rows_held() = RowRangeToProto(info.rows_held);
  proto->set_bytes(info.bytes);
  proto->set_step(info.step);
}

absl::StatusOr<VariableInfo> VariableInfoFromProto(
    const ps::VariableInfo& proto) {
  ASSIGN_OR_RETURN(VariableSpec spec, VariableSpecFromProto(proto.spec()));
  return VariableInfo{std::move(spec), RowRangeFromProto(proto.rows_held()),
                      proto.bytes(), proto.step()};
}

void TablePolicyToProto(const TablePolicy& policy,
                        ps::TableAdmission* admission,
                        ps::TableEviction* eviction) {
  const AdmissionPolicy& a = policy.admission;
  // The enums number their values alike. A value out of range goes as it is
  // (proto3 enums are open), so that the receiver refuses it by name rather
  // than reading a valid policy.
  static_assert(static_cast<int>(AdmissionKind::kMinCount) ==
                    ps::TableAdmission::MIN_COUNT &&
                static_cast<int>(AdmissionKind::kProbability) ==
                    ps::TableAdmission::PROBABILITY &&
                static_cast<int>(UnknownRow::kSharedRow) ==
                    ps::TableAdmission::SHARED_ROW);
  admission->set_policy(static_cast<ps::TableAdmission::Policy>(a.kind));
  admission->set_min_count(a.min_count);
  admission->set_probability(a.probability);
  admission->set_unknown(static_cast<ps::TableAdmission::Unknown>(a.unknown));
  admission->set_sketch_width(a.sketch_width);
  eviction->set_max_rows(policy.eviction.max_rows);
  if (policy.eviction.ttl_steps.has_value()) {
    eviction->set_ttl_steps(*policy.eviction.ttl_steps);
  } else {
    eviction->clear_ttl_steps();
  }
}

absl::StatusOr<TablePolicy> TablePolicyFromProto(
    const ps::TableAdmission& admission, const ps::TableEviction& eviction) {
  if (!ps::TableAdmission::Policy_IsValid(admission.policy())) {
    return absl::InvalidArgumentError(
        absl::StrCat("admission.policy is ", admission.policy(),
                     ", not a known policy (ALWAYS, MIN_COUNT, PROBABILITY)"));
  }
  if (!ps::TableAdmission::Unknown_IsValid(admission.unknown())) {
    return absl::InvalidArgumentError(
        absl::StrCat("admission.unknown is ", admission.unknown(),
                     ", not a known choice (ZEROS, SHARED_ROW)"));
  }
  TablePolicy policy;
  AdmissionPolicy& a = policy.admission;
  a.kind = static_cast<AdmissionKind>(admission.policy());
  a.unknown = static_cast<UnknownRow>(admission.unknown());
  a.min_count = admission.min_count();
  // Proto3 cannot tell an unset double or int from 0: 0 stands for the
  // defaults, which older senders that know no policy get.
  if (admission.probability() != 0) a.probability = admission.probability();
  if (admission.sketch_width() != 0) a.sketch_width = admission.sketch_width();
  policy.eviction.max_rows = eviction.max_rows();
  if (eviction.has_ttl_steps()) {
    policy.eviction.ttl_steps = eviction.ttl_steps();
  }
  return policy;
}

void HashSpecToProto(const HashEmbeddingSpec& spec, ps::HashTableSpec* proto) {
  proto->set_name(spec.name);
  proto->set_dim(spec.dim);
  InitializerToProto(spec.initializer, proto->mutable_initializer());
  OptimizerToProto(spec.optimizer, proto->mutable_optimizer());
  TablePolicyToProto(spec.policy, proto->mutable_admission(),
                     proto->mutable_eviction());
}

absl::StatusOr<HashEmbeddingSpec> HashSpecFromProto(
    const ps::HashTableSpec& proto) {
  auto named = [&proto](const absl::Status& s) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hash embedding table \"", proto.name(), "\": ", s.message()));
  };
  HashEmbeddingSpec spec;
  spec.name = proto.name();
  spec.dim = proto.dim();
  if (absl::Status s = DecodeUpdates(proto.initializer(), proto.optimizer(),
                                     &spec.initializer, &spec.optimizer);
      !s.ok()) {
    return named(s);
  }
  absl::StatusOr<TablePolicy> policy =
      TablePolicyFromProto(proto.admission(), proto.eviction());
  if (!policy.ok()) return named(policy.status());
  spec.policy = *std::move(policy);
  return spec;
}

}  // namespace distrt
