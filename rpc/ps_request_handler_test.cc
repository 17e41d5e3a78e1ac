// PsRequestHandler on decoded messages, without gRPC: what a ps task does
// with each request, its checks before anything changes, pushes applied
// once per request id, and the size limits. (tests/bad_rpc_payload_test
// sends the same requests to a ps_server process; fuzz/ throws bytes at it.)

#include "rpc/ps_request_handler.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/ps/table_policy.h"
#include "runtime/util/test_dir.h"

namespace distrt::rpc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Float32 [rows, 2] with SGD at learning rate 0.5 from `value`.
ps::CreateVariableRequest CreateRequest(const std::string& name, int64_t rows,
                                        float value = 0) {
  VariableSpec spec;
  spec.name = name;
  spec.shape = {rows, 2};
  spec.initializer.kind = InitializerSpec::Kind::kConstant;
  spec.initializer.value = value;
  spec.optimizer.learning_rate = 0.5f;
  ps::CreateVariableRequest request;
  VariableSpecToProto(spec, request.mutable_spec());
  return request;
}

// A pull's result, through the handler's ResponseTensor callback.
struct Pulled {
  int calls = 0;
  ps::DataType dtype = ps::DATA_TYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
  // A callable to pass straight to a pull (a ResponseTensor, being a
  // FunctionRef, must not outlive it).
  auto Sink() {
    return [this](ps::DataType d, const std::vector<int64_t>& s,
                  int64_t size) -> char* {
      ++calls;
      dtype = d;
      shape = s;
      bytes.assign(size, 0);
      return bytes.data();
    };
  }
  std::vector<float> floats() const {
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
};

ps::PullDenseRequest PullRequest(const std::string& name) {
  ps::PullDenseRequest request;
  request.set_name(name);
  return request;
}

std::vector<float> PullAll(PsRequestHandler& handler, const std::string& name) {
  Pulled pulled;
  const absl::Status s = handler.PullDense(PullRequest(name), pulled.Sink());
  EXPECT_TRUE(s.ok()) << s;
  return pulled.floats();
}

ps::PushDenseRequest PushRequest(const std::string& name, uint64_t request_id) {
  ps::PushDenseRequest request;
  request.set_name(name);
  request.set_request_id(request_id);
  return request;
}

// `values` as a TensorView of float32 [n / 2, 2]; the tensor holds them.
TensorView FloatView(const std::vector<float>& values, ps::Tensor* tensor) {
  EncodeFloat32(values, {static_cast<int64_t>(values.size()) / 2, 2}, tensor);
  return ViewOf(*tensor);
}

TensorView IdsView(const std::vector<int64_t>& ids, ps::Tensor* tensor) {
  EncodeInt64(ids, {static_cast<int64_t>(ids.size())}, tensor);
  return ViewOf(*tensor);
}

PsRequestHandler::Options SmallLimits() {
  PsRequestHandler::Options options;
  options.max_response_bytes = 64;
  options.max_variable_bytes = 4096;
  return options;
}

TEST(PsRequestHandlerTest, PullsAndPushesRowsOfAVariablePart) {
  PsRequestHandler handler(PsRequestHandler::Options{});
  ps::CreateVariableRequest create = CreateRequest("w", 4, 1.0f);
  create.mutable_rows()->set_begin(2);  // this task holds rows [2, 4)
  create.mutable_rows()->set_end(4);
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(create, &info).ok());
  EXPECT_EQ(info.rows_held().begin(), 2);
  EXPECT_EQ(info.rows_held().end(), 4);

  ps::PullDenseRequest pull = PullRequest("w");
  pull.mutable_rows()->set_begin(2);
  pull.mutable_rows()->set_end(4);
  Pulled pulled;
  ASSERT_TRUE(handler.PullDense(pull, pulled.Sink()).ok());
  EXPECT_EQ(pulled.calls, 1);
  EXPECT_EQ(pulled.dtype, ps::FLOAT32);
  EXPECT_THAT(pulled.shape, ElementsAre(2, 2));
  EXPECT_THAT(pulled.floats(), ElementsAre(1, 1, 1, 1));

  ps::PushDenseRequest push = PushRequest("w", 7);
  *push.mutable_rows() = pull.rows();
  ps::Tensor grad;
  ASSERT_TRUE(handler.PushDense(push, FloatView({2, 4, 6, 8}, &grad)).ok());
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(0, -1, -2, -3));

  // Rows this task does not hold name both ranges, and change nothing.
  ps::PullDenseRequest outside = PullRequest("w");
  outside.mutable_rows()->set_begin(0);
  outside.mutable_rows()->set_end(3);
  Pulled none;
  absl::Status s = handler.PullDense(outside, none.Sink());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("[0, 3)"));
  EXPECT_THAT(s.message(), HasSubstr("[2, 4)"));
  EXPECT_EQ(none.calls, 0);
}

TEST(PsRequestHandlerTest, APushSentAgainIsAppliedOnce) {
  PsRequestHandler handler(PsRequestHandler::Options{});
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("w", 1), &info).ok());
  ps::Tensor grad;
  const TensorView view = FloatView({2, 2}, &grad);
  ASSERT_TRUE(handler.PushDense(PushRequest("w", 42), view).ok());
  ASSERT_TRUE(handler.PushDense(PushRequest("w", 42), view).ok());  // a retry
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(-1, -1));
  ASSERT_TRUE(handler.PushDense(PushRequest("w", 43), view).ok());
  ASSERT_TRUE(handler.PushDense(PushRequest("w", 0), view).ok());  // no id
  ASSERT_TRUE(handler.PushDense(PushRequest("w", 0), view).ok());
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(-4, -4));

  ps::GetStatusResponse status;
  handler.FillHoldings(&status);
  EXPECT_EQ(status.num_variables(), 1);
}

// ASSIGN and ADD write without the optimizer, once per request id; an
// unknown write is refused and changes nothing.
TEST(PsRequestHandlerTest, AssignsAndAddsWithoutTheOptimizer) {
  PsRequestHandler handler(PsRequestHandler::Options{});
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("w", 1), &info).ok());
  ps::Tensor values;
  ps::PushDenseRequest assign = PushRequest("w", 7);
  assign.set_write(ps::ASSIGN);
  ASSERT_TRUE(handler.PushDense(assign, FloatView({3, 4}, &values)).ok());
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(3, 4));
  ps::PushDenseRequest add = PushRequest("w", 8);
  add.set_write(ps::ADD);
  const TensorView delta = FloatView({10, 20}, &values);
  ASSERT_TRUE(handler.PushDense(add, delta).ok());
  ASSERT_TRUE(handler.PushDense(add, delta).ok());  // a retry
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(13, 24));

  ps::PushDenseRequest unknown = PushRequest("w", 9);
  unknown.set_write(static_cast<ps::DenseWrite>(17));
  absl::Status s = handler.PushDense(unknown, delta);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unknown write 17"));
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(13, 24));
}

// An int64 add may bring back the values it left (a fetch-and-add); a
// retry answers with what the variable holds, without adding again; other
// pushes may not ask for them.
TEST(PsRequestHandlerTest, AnInt64AddReturnsTheValuesItLeftWhenAsked) {
  PsRequestHandler handler(PsRequestHandler::Options{});
  ps::CreateVariableRequest create;
  VariableSpec spec;
  spec.name = "step";
  spec.dtype = DType::kInt64;
  VariableSpecToProto(spec, create.mutable_spec());
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(create, &info).ok());
  ps::Tensor one;
  EncodeInt64({1}, {}, &one);
  ps::PushDenseRequest add = PushRequest("step", 5);
  add.set_write(ps::ADD);
  add.set_return_values(true);
  ps::PushDenseResponse response;
  ASSERT_TRUE(handler.PushDense(add, ViewOf(one), &response).ok());
  EXPECT_THAT(response.values_after(), ElementsAre(1));
  ps::PushDenseRequest other = add;
  other.set_request_id(6);
  ASSERT_TRUE(handler.PushDense(other, ViewOf(one), &response).ok());
  EXPECT_THAT(response.values_after(), ElementsAre(2));
  ASSERT_TRUE(handler.PushDense(add, ViewOf(one), &response).ok());  // retry
  EXPECT_THAT(response.values_after(), ElementsAre(2));
  // Not asked: nothing returned.
  ASSERT_TRUE(
      handler.PushDense(PushRequest("step", 7), ViewOf(one), &response).ok());
  EXPECT_EQ(response.values_after_size(), 0);

  ASSERT_TRUE(handler.CreateVariable(CreateRequest("w", 1), &info).ok());
  ps::Tensor grad;
  ps::PushDenseRequest float_push = PushRequest("w", 8);
  float_push.set_return_values(true);
  absl::Status s =
      handler.PushDense(float_push, FloatView({1, 2}, &grad), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("return_values"));
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(0, 0));
}

// Values after an add that would not fit in a response are refused before
// the add.
TEST(PsRequestHandlerTest, ValuesAfterAnAddAreBoundedLikeAPull) {
  PsRequestHandler handler(SmallLimits());  // 64-byte responses
  ps::CreateVariableRequest create;
  VariableSpec spec;
  spec.name = "counts";
  spec.dtype = DType::kInt64;
  spec.shape = {16};
  VariableSpecToProto(spec, create.mutable_spec());
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(create, &info).ok());
  ps::Tensor ones;
  EncodeInt64(std::vector<int64_t>(16, 1), {16}, &ones);
  ps::PushDenseRequest add = PushRequest("counts", 1);
  add.set_write(ps::ADD);
  add.set_return_values(true);
  ps::PushDenseResponse response;
  absl::Status s = handler.PushDense(add, ViewOf(ones), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("\"counts\""));
  add.set_return_values(false);
  add.set_request_id(2);
  ASSERT_TRUE(handler.PushDense(add, ViewOf(ones), &response).ok());
  // Only the second add is in: element 0 is 1, not 2.
  ps::PullDenseRequest pull = PullRequest("counts");
  pull.mutable_rows()->set_begin(0);
  pull.mutable_rows()->set_end(1);
  Pulled pulled;
  ASSERT_TRUE(handler.PullDense(pull, pulled.Sink()).ok());
  ASSERT_EQ(pulled.bytes.size(), sizeof(int64_t));
  int64_t first = 0;
  std::memcpy(&first, pulled.bytes.data(), sizeof(first));
  EXPECT_EQ(first, 1);
}

TEST(PsRequestHandlerTest, BadRequestsChangeNothing) {
  PsRequestHandler handler(PsRequestHandler::Options{});
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("w", 2), &info).ok());
  ps::Tensor grad;
  absl::Status s =
      handler.PushDense(PushRequest("w", 1), FloatView({1, 2}, &grad));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"w\""));
  s = handler.PushDense(PushRequest("nope", 2), FloatView({1, 2, 3, 4}, &grad));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("nope"));
  ps::Tensor ids;
  EncodeInt64({1}, {1}, &ids);
  s = handler.PushDense(PushRequest("w", 3), ViewOf(ids));  // int64 to float
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(0, 0, 0, 0));

  // The same name with another shape.
  s = handler.CreateVariable(CreateRequest("w", 3), &info);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  ps::LookupVariableRequest lookup;
  lookup.set_name("w");
  ASSERT_TRUE(handler.LookupVariable(lookup, &info).ok());
  EXPECT_EQ(info.spec().shape(0), 2);
}

TEST(PsRequestHandlerTest, ABatchStopsAtTheFirstBadItem) {
  PsRequestHandler handler(PsRequestHandler::Options{});
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("a", 1), &info).ok());
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("b", 1), &info).ok());
  ps::PushDenseBatchRequest batch;
  batch.set_request_id(5);
  for (const char* name : {"a", "missing", "b"}) {
    ps::PushDenseRequest* item = batch.add_pushes();
    item->set_name(name);
    EncodeFloat32({2, 2}, {1, 2}, item->mutable_values());
  }
  absl::Status s = handler.PushDenseBatch(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(PullAll(handler, "a"), ElementsAre(-1, -1));  // before it
  EXPECT_THAT(PullAll(handler, "b"), ElementsAre(0, 0));    // after it

  ps::PullDenseBatchRequest pulls;
  *pulls.add_pulls() = PullRequest("a");
  *pulls.add_pulls() = PullRequest("b");
  ps::PullDenseBatchResponse response;
  ASSERT_TRUE(handler.PullDenseBatch(pulls, &response).ok());
  ASSERT_EQ(response.pulls_size(), 2);
  EXPECT_EQ(response.pulls(1).values().shape(0), 1);
}

TEST(PsRequestHandlerTest, SparseRowsAndHashTables) {
  PsRequestHandler handler(PsRequestHandler::Options{});
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("emb", 5), &info).ok());
  ps::PushSparseRequest push;
  push.set_name("emb");
  ps::Tensor ids, grads;
  ASSERT_TRUE(handler
                  .PushSparse(push, IdsView({3, 1, 3}, &ids),
                              FloatView({2, 2, 4, 4, 6, 6}, &grads))
                  .ok());
  ps::PullSparseRequest pull;
  pull.set_name("emb");
  Pulled rows;
  ASSERT_TRUE(
      handler.PullSparse(pull, IdsView({1, 3, 0}, &ids), rows.Sink()).ok());
  EXPECT_THAT(rows.shape, ElementsAre(3, 2));
  EXPECT_THAT(rows.floats(), ElementsAre(-2, -2, -4, -4, 0, 0));
  // Ids are checked as the rows are read, after the response's memory is
  // asked for (the transport then sends the error instead).
  Pulled unsent;
  absl::Status s = handler.PullSparse(pull, IdsView({5}, &ids), unsent.Sink());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("emb"));

  HashEmbeddingSpec table;
  table.name = "h";
  table.dim = 2;
  table.optimizer.learning_rate = 1.0f;
  ps::CreateHashTableRequest create;
  HashSpecToProto(table, create.mutable_spec());
  ps::HashTableInfo table_info;
  ASSERT_TRUE(handler.CreateHashTable(create, &table_info).ok());
  push.set_name("h");
  ASSERT_TRUE(handler
                  .PushHash(push, IdsView({1000000007}, &ids),
                            FloatView({1, 2}, &grads))
                  .ok());
  pull.set_name("h");
  Pulled hashed;
  ASSERT_TRUE(
      handler.PullHash(pull, IdsView({1000000007, 9}, &ids), hashed.Sink())
          .ok());
  EXPECT_THAT(hashed.floats(), ElementsAre(-1, -2, 0, 0));
}

// A hash table with a TTL of 10 global steps and min_count admission: the
// global step of each push ages the rows, and ListVariables reports what the
// table did.
TEST(PsRequestHandlerTest, HashTablePolicyGlobalStepAndCounters) {
  PsRequestHandler handler(PsRequestHandler::Options{});
  HashEmbeddingSpec table;
  table.name = "h";
  table.dim = 2;
  table.policy.admission.kind = AdmissionKind::kMinCount;
  table.policy.admission.min_count = 2;
  table.policy.eviction.ttl_steps = 10;
  ps::CreateHashTableRequest create;
  HashSpecToProto(table, create.mutable_spec());
  ps::HashTableInfo created;
  ASSERT_TRUE(handler.CreateHashTable(create, &created).ok());
  EXPECT_EQ(created.spec().admission().policy(), ps::TableAdmission::MIN_COUNT);
  EXPECT_EQ(created.spec().eviction().ttl_steps(), 10);

  // Another policy for the same table: what differs is named.
  HashEmbeddingSpec other = table;
  other.policy.eviction.ttl_steps = 20;
  HashSpecToProto(other, create.mutable_spec());
  absl::Status s = handler.CreateHashTable(create, &created);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("eviction.ttl_steps 10 vs 20"));
  // A bad value names the table and the field.
  other.policy.eviction.ttl_steps = 0;
  other.name = "bad";
  HashSpecToProto(other, create.mutable_spec());
  s = handler.CreateHashTable(create, &created);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("hash embedding table \"bad\": eviction.ttl_steps is "
                        "0, must be at least 1"));

  ps::PullSparseRequest pull;
  pull.set_name("h");
  ps::PushSparseRequest push;
  push.set_name("h");
  ps::Tensor ids, grads;
  Pulled pulled;
  // Id 5 is seen twice (admitted on the second pull), id 6 once: its push
  // is dropped.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(handler.PullHash(pull, IdsView({5}, &ids), pulled.Sink()).ok());
  }
  ASSERT_TRUE(handler.PullHash(pull, IdsView({6}, &ids), pulled.Sink()).ok());
  push.set_global_step(3);
  push.set_request_id(1);
  ASSERT_TRUE(handler
                  .PushHash(push, IdsView({5, 6}, &ids),
                            FloatView({1, 1, 1, 1}, &grads))
                  .ok());
  ps::ListVariablesResponse list;
  handler.ListVariables(&list);
  ASSERT_EQ(list.hash_tables_size(), 1);
  const ps::HashTableInfo& info = list.hash_tables(0);
  EXPECT_EQ(info.num_rows(), 1);
  EXPECT_EQ(info.admitted(), 1);
  EXPECT_EQ(info.unknown_lookups(), 2);  // 5's first pull, 6's
  EXPECT_EQ(info.dropped_pushes(), 1);
  EXPECT_EQ(info.clock(), 3);
  EXPECT_EQ(info.evicted_by_ttl(), 0);
  EXPECT_EQ(info.bytes(), 2 * 4);

  // At global step 13, row 5 (updated at 3) is 10 steps old: evicted.
  push.set_global_step(13);
  push.set_request_id(2);
  ASSERT_TRUE(
      handler.PushHash(push, IdsView({6}, &ids), FloatView({1, 1}, &grads))
          .ok());
  list.Clear();
  handler.ListVariables(&list);
  EXPECT_EQ(list.hash_tables(0).clock(), 13);
  EXPECT_EQ(list.hash_tables(0).evicted_by_ttl(), 1);
  EXPECT_EQ(list.hash_tables(0).num_rows(), 0);
  EXPECT_EQ(list.hash_tables(0).dropped_pushes(), 2);
  // GetStatus says the same, per table and in all.
  ps::GetStatusResponse status;
  handler.FillHoldings(&status);
  ASSERT_EQ(status.hash_tables_size(), 1);
  EXPECT_EQ(status.hash_tables(0).spec().name(), "h");
  EXPECT_EQ(status.hash_tables(0).evicted_by_ttl(), 1);
  EXPECT_EQ(status.hash_tables(0).admitted(), 1);
  EXPECT_EQ(status.hash_tables(0).clock(), 13);
  EXPECT_EQ(status.num_hash_tables(), 1);
  EXPECT_EQ(status.hash_table_rows(), 0);

  // Without a global step the clock counts pushes; a negative one is
  // refused naming the table.
  push.clear_global_step();
  push.set_request_id(3);
  ASSERT_TRUE(
      handler.PushHash(push, IdsView({6}, &ids), FloatView({1, 1}, &grads))
          .ok());
  list.Clear();
  handler.ListVariables(&list);
  EXPECT_EQ(list.hash_tables(0).clock(), 14);
  push.set_global_step(-2);
  push.set_request_id(4);
  s = handler.PushHash(push, IdsView({6}, &ids), FloatView({1, 1}, &grads));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "hash embedding table \"h\": global step -2 is negative");
}

TEST(PsRequestHandlerTest, LimitsAreResourceExhaustedBeforeAnyWork) {
  PsRequestHandler handler(SmallLimits());
  ps::VariableInfo info;
  // 16 floats: 64 bytes of values (and none of slots for SGD) fit.
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("w", 8), &info).ok());
  Pulled pulled;
  ASSERT_TRUE(handler.PullDense(PullRequest("w"), pulled.Sink()).ok());
  // 4 KiB of variables: a 1024-row one does not fit.
  absl::Status s = handler.CreateVariable(CreateRequest("big", 1024), &info);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("x", 9), &info).ok());
  Pulled none;
  s = handler.PullDense(PullRequest("x"), none.Sink());  // 72 bytes > 64
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(none.calls, 0);
}

TEST(PsRequestHandlerTest, SavesCommitsAndRestoresItsShard) {
  TestDir dir;
  PsRequestHandler handler(PsRequestHandler::Options{});
  ps::VariableInfo info;
  ASSERT_TRUE(handler.CreateVariable(CreateRequest("w", 1), &info).ok());
  ps::Tensor grad;
  ASSERT_TRUE(
      handler.PushDense(PushRequest("w", 1), FloatView({2, 4}, &grad)).ok());

  ps::SaveRequest save;
  save.set_directory(dir.path());
  save.set_step(3);
  save.set_num_shards(1);
  ps::SaveResponse saved;
  ASSERT_TRUE(handler.Save(save, &saved).ok());
  EXPECT_GT(saved.bytes(), 0);
  ps::CommitCheckpointRequest commit;
  commit.set_directory(dir.path());
  commit.set_step(3);
  commit.set_num_shards(1);
  ps::CommitCheckpointResponse committed;
  ASSERT_TRUE(handler.CommitCheckpoint(commit, &committed).ok());

  ASSERT_TRUE(
      handler.PushDense(PushRequest("w", 2), FloatView({2, 4}, &grad)).ok());
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(-2, -4));
  ps::RestoreRequest restore;
  restore.set_directory(dir.path());
  restore.set_num_shards(1);
  ps::RestoreResponse restored;
  ASSERT_TRUE(handler.Restore(restore, &restored).ok());
  EXPECT_EQ(restored.step(), 3);
  EXPECT_EQ(restored.checkpoint(), committed.checkpoint());
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(-1, -2));

  // A directory without checkpoints changes nothing.
  TestDir empty;
  restore.set_directory(empty.path());
  EXPECT_FALSE(handler.Restore(restore, &restored).ok());
  EXPECT_THAT(PullAll(handler, "w"), ElementsAre(-1, -2));
}

}  // namespace
}  // namespace distrt::rpc
