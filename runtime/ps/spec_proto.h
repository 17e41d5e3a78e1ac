#ifndef DISTRT_RUNTIME_PS_SPEC_PROTO_H_
#define DISTRT_RUNTIME_PS_SPEC_PROTO_H_

// Conversions between the runtime's variable and hash-table specs and their
// wire form (proto/variable.proto), used by the RPC layer and checkpoints.
// Decoding refuses what the wire allows but the runtime does not (unknown
// enum values), naming the field; specs are validated by their users.

#include "absl/status/statusor.h"
#include "proto/variable.pb.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/table_policy.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/ps/variable_store.h"

namespace distrt {

ps::DataType DTypeToProto(DType dtype);
// DATA_TYPE_UNSPECIFIED means float32.
absl::StatusOr<DType> DTypeFromProto(int dtype);

ps::RowRange RowRangeToProto(RowRange rows);
RowRange RowRangeFromProto(const ps::RowRange& rows);

void InitializerToProto(const InitializerSpec& spec,
                        ps::InitializerConfig* proto);
absl::StatusOr<InitializerSpec> InitializerFromProto(
    const ps::InitializerConfig& proto);

void OptimizerToProto(const OptimizerConfig& config,
                      ps::OptimizerConfig* proto);
// Unset hyper-parameters take OptimizerConfig's (Keras') defaults.
absl::StatusOr<OptimizerConfig> OptimizerFromProto(
    const ps::OptimizerConfig& proto);

void VariableSpecToProto(const VariableSpec& spec, ps::VariableSpec* proto);
absl::StatusOr<VariableSpec> VariableSpecFromProto(
    const ps::VariableSpec& proto);

void VariableInfoToProto(const VariableInfo& info, ps::VariableInfo* proto);
absl::StatusOr<VariableInfo> VariableInfoFromProto(
    const ps::VariableInfo& proto);

// A policy's wire form: probability and sketch_width 0 stand for their
// defaults (1 and AdmissionPolicy's; so a probability of exactly 0, which
// ValidateTablePolicy refuses, arrives as 1: validate before sending),
// ttl_steps is present only when set. Other values go as they are, out of
// range enums included. Decoding refuses unknown admission.policy and
// admission.unknown values.
void TablePolicyToProto(const TablePolicy& policy,
                        ps::TableAdmission* admission,
                        ps::TableEviction* eviction);
absl::StatusOr<TablePolicy> TablePolicyFromProto(
    const ps::TableAdmission& admission, const ps::TableEviction& eviction);

// Errors name the table, e.g. `hash embedding table "C1": admission.policy
// is 7, not a known policy (...)`.
void HashSpecToProto(const HashEmbeddingSpec& spec, ps::HashTableSpec* proto);
absl::StatusOr<HashEmbeddingSpec> HashSpecFromProto(
    const ps::HashTableSpec& proto);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_SPEC_PROTO_H_
