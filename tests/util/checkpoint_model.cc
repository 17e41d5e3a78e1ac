#include "tests/util/checkpoint_model.h"

#include <cstring>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"

namespace distrt::testing {

const std::vector<int64_t>& CheckpointModelHashIds() {
  static const std::vector<int64_t>* const ids =
      new std::vector<int64_t>{3, -8, int64_t{1} << 45, 77, 1000001};
  return *ids;
}

CheckpointModel CreateCheckpointModel(PsClient& client, int embedding_parts) {
  CheckpointModel model;
  VariableSpec emb{"emb", DType::kFloat32, {9, 3}, {}, {}};
  emb.initializer.kind = InitializerSpec::Kind::kUniform;
  emb.initializer.seed = 11;
  emb.optimizer.kind = OptimizerKind::kAdam;
  VariableSpec bias{"bias", DType::kFloat32, {4}, {}, {}};
  bias.initializer.kind = InitializerSpec::Kind::kTruncatedNormal;
  bias.optimizer.kind = OptimizerKind::kMomentum;
  bias.optimizer.momentum = 0.9f;
  bias.optimizer.nesterov = true;
  for (auto [spec, policy] :
       {std::pair{emb, PartitionPolicy::FixedShards(embedding_parts)},
        std::pair{bias, PartitionPolicy::None()}}) {
    absl::StatusOr<VariablePlacement> placed =
        client.CreateVariable(spec, policy);
    EXPECT_TRUE(placed.ok()) << placed.status();
    if (placed.ok()) model.dense.push_back(*placed);
  }
  absl::StatusOr<VariablePlacement> step = client.CreateVariable(
      VariableSpec{"global_step", DType::kInt64, {}, {}, {}});
  EXPECT_TRUE(step.ok()) << step.status();
  if (step.ok()) model.global_step = *step;
  model.table.name = "ids";
  model.table.dim = 2;
  model.table.initializer.kind = InitializerSpec::Kind::kUniform;
  model.table.optimizer.kind = OptimizerKind::kFtrl;
  model.table.optimizer.l1_regularization = 0.01f;
  EXPECT_TRUE(client.CreateHashTable(model.table).ok());
  return model;
}

void TrainCheckpointModel(PsClient& client, const CheckpointModel& model,
                          int seed) {
  ASSERT_EQ(model.dense.size(), 2u) << "the model was not created";
  for (const VariablePlacement& v : model.dense) {
    std::vector<float> grad(NumRows(v.spec) * RowWidth(v.spec));
    for (size_t i = 0; i < grad.size(); ++i) {
      grad[i] = 0.1f * ((i * 7 + seed) % 5) - 0.2f;
    }
    ASSERT_TRUE(client.Push(v, grad).ok());
  }
  ASSERT_TRUE(client
                  .PushSparse(model.dense[0], {1, 8, 1},
                              std::vector<float>(9, 0.3f * seed))
                  .ok());
  const std::vector<int64_t>& ids = CheckpointModelHashIds();
  std::vector<float> hash_grads(ids.size() * 2);
  for (size_t i = 0; i < hash_grads.size(); ++i) {
    hash_grads[i] = 0.05f * ((i + seed) % 3) + 0.01f;
  }
  ASSERT_TRUE(client.PushHash(model.table, ids, hash_grads).ok());
  ASSERT_TRUE(client.AddInt64(model.global_step, std::vector<int64_t>{1}).ok());
}

bool ModelSnapshot::BitwiseEquals(const ModelSnapshot& other) const {
  if (dense.size() != other.dense.size() || global_step != other.global_step ||
      hash_rows.size() != other.hash_rows.size()) {
    return false;
  }
  for (size_t i = 0; i < dense.size(); ++i) {
    if (dense[i].size() != other.dense[i].size() ||
        std::memcmp(dense[i].data(), other.dense[i].data(),
                    dense[i].size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return std::memcmp(hash_rows.data(), other.hash_rows.data(),
                     hash_rows.size() * sizeof(float)) == 0;
}

ModelSnapshot PullModel(PsClient& client, const CheckpointModel& model) {
  ModelSnapshot snapshot;
  for (const VariablePlacement& v : model.dense) {
    std::vector<float>& values =
        snapshot.dense.emplace_back(NumRows(v.spec) * RowWidth(v.spec));
    EXPECT_TRUE(client.Pull(v, absl::MakeSpan(values)).ok());
  }
  snapshot.hash_rows.resize(CheckpointModelHashIds().size() * 2);
  EXPECT_TRUE(client
                  .PullHash(model.table, CheckpointModelHashIds(),
                            absl::MakeSpan(snapshot.hash_rows))
                  .ok());
  EXPECT_TRUE(client
                  .PullInt64(model.global_step,
                             absl::MakeSpan(&snapshot.global_step, 1))
                  .ok());
  return snapshot;
}

std::unique_ptr<PsClient> ClientOf(const std::vector<PsProcess>& tasks) {
  PsClient::Options options;
  options.rpc_timeout = absl::Seconds(30);
  options.ps_failure_timeout = absl::Seconds(30);
  options.checkpoint_timeout = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(AddressesOf(tasks), options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

}  // namespace distrt::testing
