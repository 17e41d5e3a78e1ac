#include "fuzz/checkpoint_fuzz_util.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/shard_file.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/initializer.h"
#include "runtime/tensor/dtype.h"
#include "runtime/util/crc32c.h"

namespace distrt::fuzz {
namespace {

VariableSpec FloatSpec(std::string name, std::vector<int64_t> shape,
                       OptimizerKind kind, uint64_t seed) {
  VariableSpec spec;
  spec.name = std::move(name);
  spec.shape = std::move(shape);
  spec.initializer.kind = InitializerSpec::Kind::kUniform;
  spec.initializer.seed = seed;
  spec.optimizer.kind = kind;
  spec.optimizer.learning_rate = 0.1f;
  return spec;
}

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

std::string DescribeStateDifference(const VariableState& a,
                                    const VariableState& b) {
  if (a.step != b.step) return absl::StrCat("step ", a.step, " vs ", b.step);
  if (!SameBits(a.values, b.values)) return "values";
  if (!SameBits(a.ints, b.ints)) return "int64 values";
  if (a.slots.size() != b.slots.size()) return "number of slots";
  for (size_t s = 0; s < a.slots.size(); ++s) {
    if (!SameBits(a.slots[s], b.slots[s])) return absl::StrCat("slot ", s);
  }
  return "";
}

std::string DescribeTableDifference(const HashTableState& a,
                                    const HashTableState& b) {
  if (a.ids != b.ids) return "ids";
  if (a.steps != b.steps) return "steps";
  if (!SameBits(a.values, b.values)) return "values";
  if (a.slots.size() != b.slots.size()) return "number of slots";
  for (size_t s = 0; s < a.slots.size(); ++s) {
    if (!SameBits(a.slots[s], b.slots[s])) return absl::StrCat("slot ", s);
  }
  return "";
}

uint32_t GetUint32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}

void PutUint32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Sets the checksum of `tensor` when its bytes lie within `data`.
void FixTensor(absl::string_view data, ps::SavedTensor* tensor) {
  const int64_t size = static_cast<int64_t>(data.size());
  if (tensor->offset() < 0 || tensor->length() < 0 || tensor->offset() > size ||
      tensor->length() > size - tensor->offset()) {
    return;
  }
  tensor->set_crc32c(Crc32c(data.substr(tensor->offset(), tensor->length())));
}

}  // namespace

std::vector<VariableSpec> FuzzModelVariables() {
  std::vector<VariableSpec> specs = {
      FloatSpec("dense", {4, 3}, OptimizerKind::kAdam, 11),
      FloatSpec("emb", {10, 2}, OptimizerKind::kAdagrad, 12),
      FloatSpec("bias", {3}, OptimizerKind::kMomentum, 13),
      FloatSpec("ftrl_w", {2, 2}, OptimizerKind::kFtrl, 14),
  };
  VariableSpec step;
  step.name = "global_step";
  step.dtype = DType::kInt64;
  step.shape = {1};
  specs.push_back(step);
  return specs;
}

std::vector<HashEmbeddingSpec> FuzzModelTables() {
  std::vector<HashEmbeddingSpec> specs(2);
  specs[0].name = "users";
  specs[0].dim = 3;
  specs[0].initializer.kind = InitializerSpec::Kind::kUniform;
  specs[0].initializer.seed = 21;
  specs[0].optimizer.kind = OptimizerKind::kFtrl;
  specs[1].name = "items";
  specs[1].dim = 2;
  specs[1].initializer.kind = InitializerSpec::Kind::kTruncatedNormal;
  specs[1].initializer.seed = 22;
  specs[1].optimizer.kind = OptimizerKind::kSgd;
  return specs;
}

void CreateFuzzModel(VariableStore& store, HashTableSet& tables,
                     RowRange emb_rows) {
  for (const VariableSpec& spec : FuzzModelVariables()) {
    const RowRange rows =
        spec.name == "emb" ? emb_rows : RowRange{0, NumRows(spec)};
    if (absl::StatusOr<VariableInfo> info = store.Create(spec, rows);
        !info.ok()) {
      FuzzFail(absl::StrCat("cannot create the fuzz model: ",
                            info.status().ToString()));
    }
  }
  for (const HashEmbeddingSpec& spec : FuzzModelTables()) {
    if (absl::StatusOr<HashEmbeddingTable*> table = tables.Create(spec);
        !table.ok()) {
      FuzzFail(absl::StrCat("cannot create the fuzz model: ",
                            table.status().ToString()));
    }
  }
}

std::string DescribeHoldingsDifference(const VariableStore& a_store,
                                       const HashTableSet& a_tables,
                                       const VariableStore& b_store,
                                       const HashTableSet& b_tables) {
  const std::vector<VariableInfo> a = a_store.List();
  const std::vector<VariableInfo> b = b_store.List();
  if (a.size() != b.size()) return "the number of variables";
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string& name = a[i].spec.name;
    if (name != b[i].spec.name) return absl::StrCat("variable ", name);
    if (std::string diff = DescribeSpecDifference(a[i].spec, b[i].spec);
        !diff.empty()) {
      return absl::StrCat("variable ", name, ": ", diff);
    }
    if (!(a[i].rows_held == b[i].rows_held)) {
      return absl::StrCat("variable ", name, ": rows held");
    }
    absl::StatusOr<VariableState> x = a_store.Snapshot(name);
    absl::StatusOr<VariableState> y = b_store.Snapshot(name);
    if (!x.ok() || !y.ok()) return absl::StrCat("variable ", name, ": gone");
    if (std::string diff = DescribeStateDifference(*x, *y); !diff.empty()) {
      return absl::StrCat("variable ", name, ": ", diff);
    }
  }
  const std::vector<HashEmbeddingTable*> ta = a_tables.List();
  const std::vector<HashEmbeddingTable*> tb = b_tables.List();
  if (ta.size() != tb.size()) return "the number of tables";
  for (size_t i = 0; i < ta.size(); ++i) {
    const std::string& name = ta[i]->spec().name;
    if (name != tb[i]->spec().name) return absl::StrCat("table ", name);
    if (std::string diff =
            DescribeTableDifference(ta[i]->Export(), tb[i]->Export());
        !diff.empty()) {
      return absl::StrCat("table ", name, ": ", diff);
    }
  }
  return "";
}

std::string FixShardChecksums(absl::string_view file) {
  std::string fixed(file);
  if (fixed.size() < static_cast<size_t>(kShardPreambleBytes)) return fixed;
  const size_t header_bytes = GetUint32(fixed.data() + 8);
  if (header_bytes > fixed.size() - kShardPreambleBytes) return fixed;
  const absl::string_view header_text =
      absl::string_view(fixed).substr(kShardPreambleBytes, header_bytes);
  ps::CheckpointShardHeader header;
  if (!header.ParseFromArray(header_text.data(),
                             static_cast<int>(header_text.size()))) {
    PutUint32(Crc32c(header_text), fixed.data() + 12);
    return fixed;
  }
  const absl::string_view data =
      absl::string_view(file).substr(kShardPreambleBytes + header_bytes);
  for (ps::SavedVariable& variable : *header.mutable_variables()) {
    FixTensor(data, variable.mutable_values());
    for (ps::SavedTensor& slot : *variable.mutable_slots()) {
      FixTensor(data, &slot);
    }
  }
  for (ps::SavedHashTable& table : *header.mutable_hash_tables()) {
    FixTensor(data, table.mutable_ids());
    FixTensor(data, table.mutable_values());
    FixTensor(data, table.mutable_steps());
    for (ps::SavedTensor& slot : *table.mutable_slots()) {
      FixTensor(data, &slot);
    }
  }
  const std::string serialized = header.SerializeAsString();
  std::string out(file.substr(0, kShardPreambleBytes));
  PutUint32(static_cast<uint32_t>(serialized.size()), out.data() + 8);
  PutUint32(Crc32c(serialized), out.data() + 12);
  absl::StrAppend(&out, serialized, data);
  return out;
}

}  // namespace distrt::fuzz
