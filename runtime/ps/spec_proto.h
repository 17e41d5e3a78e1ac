#ifndef DISTRT_RUNTIME_PS_SPEC_PROTO_H_
#define DISTRT_RUNTIME_PS_SPEC_PROTO_H_

// Conversions between the runtime's variable and hash-table specs and their
// wire form (proto/variable.proto), used by the RPC layer and checkpoints.
// Decoding refuses what the wire allows but the runtime does not (unknown
// enum values), naming the field; specs are validated by their users.

#include "absl/status/statusor.h"
#include "proto/variable.pb.h"
#include "runtime/ps/hash_embedding_table.h"
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

void HashSpecToProto(const HashEmbeddingSpec& spec, ps::HashTableSpec* proto);
absl::StatusOr<HashEmbeddingSpec> HashSpecFromProto(
    const ps::HashTableSpec& proto);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_PS_SPEC_PROTO_H_
