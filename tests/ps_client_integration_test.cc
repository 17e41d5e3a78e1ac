// PsClient against real ps_server processes over gRPC on 127.0.0.1:
// placement and partitioning as the servers see them, dense, sparse and
// hash-table round trips, concurrent pushes, and bad requests.

#include <signal.h>

#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/bundle_message.h"
#include "rpc/tensor_codec.h"
#include "rpc/wire_message.h"
#include "tests/util/constant_variable_spec.h"
#include "tests/util/ps_processes.h"
#include "tests/util/refusing_proxy.h"
#include "tests/util/step_requests.h"

namespace distrt {
namespace {

using ::distrt::testing::AddressesOf;
using ::distrt::testing::PsProcess;
using ::distrt::testing::ReadStep;
using ::distrt::testing::RefusingProxy;
using ::distrt::testing::StartPsProcesses;
using ::distrt::testing::UpdateStep;
using ::distrt::testing::UpdateThenRead;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

using ::distrt::testing::ConstantVariableSpec;

int64_t Elements(const VariableSpec& spec) {
  return NumRows(spec) * RowWidth(spec);
}

class PsClientIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(2);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    tasks_ = *std::move(tasks);
    client_ = NewClient();
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(client_->WaitForServers(absl::Seconds(30)).ok());
  }

  std::unique_ptr<PsClient> NewClient(
      PsClient::Options options = PsClient::Options()) {
    options.rpc_timeout = absl::Seconds(30);
    absl::StatusOr<std::unique_ptr<PsClient>> client =
        PsClient::Create(AddressesOf(tasks_), options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  std::vector<PsProcess> tasks_;
  std::unique_ptr<PsClient> client_;
};

TEST_F(PsClientIntegrationTest, RoundRobinPlacementAndRowPartitions) {
  ASSERT_TRUE(
      client_->CreateVariable(ConstantVariableSpec("a", {4, 3}, 1)).ok());
  ASSERT_TRUE(client_->CreateVariable(ConstantVariableSpec("b", {5}, 2)).ok());
  ASSERT_TRUE(client_->CreateVariable(ConstantVariableSpec("c", {}, 3)).ok());
  absl::StatusOr<VariablePlacement> emb = client_->CreateVariable(
      ConstantVariableSpec("emb", {11, 4}, 0), PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(emb.ok()) << emb.status();

  std::vector<DistributedVariableInfo> variables;
  ASSERT_TRUE(client_->List(&variables, nullptr).ok());
  ASSERT_EQ(variables.size(), 4u);
  auto parts_of = [&](int i) {
    std::vector<std::string> parts;
    for (const VariablePart& p : variables[i].placement.parts) {
      parts.push_back(
          absl::StrCat(p.ps_task, ":", p.rows.begin, "-", p.rows.end));
    }
    return parts;
  };
  // a, b, c, then emb's two parts take the next tasks in turn; the first
  // part gets the extra row.
  EXPECT_THAT(parts_of(0), ElementsAre("0:0-4"));            // a
  EXPECT_THAT(parts_of(1), ElementsAre("1:0-5"));            // b
  EXPECT_THAT(parts_of(2), ElementsAre("0:0-1"));            // c
  EXPECT_THAT(parts_of(3), ElementsAre("1:0-6", "0:6-11"));  // emb
  EXPECT_EQ(variables[3].part_bytes[0], 6 * 4 * 4);

  absl::StatusOr<std::vector<ps::GetStatusResponse>> stats = client_->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ((*stats)[0].num_variables(), 3);  // a, c, emb's second part
  EXPECT_EQ((*stats)[1].num_variables(), 2);  // b, emb's first part
  EXPECT_EQ((*stats)[0].variable_rows(), 4 + 1 + 5);
  EXPECT_EQ((*stats)[0].requests().at("CreateVariable"), 3);

  // Another client (another worker) creating the same variables in the same
  // order agrees; looking one up by name finds the same parts.
  std::unique_ptr<PsClient> other = NewClient();
  ASSERT_TRUE(other->CreateVariable(ConstantVariableSpec("a", {4, 3}, 1)).ok());
  absl::StatusOr<VariablePlacement> found = other->LookupVariable("emb");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->parts.size(), 2u);
  EXPECT_EQ(found->parts[1].ps_task, 0);
  EXPECT_EQ(found->parts[1].rows, (RowRange{6, 11}));
  // A different spec under the same name is refused, saying what differs.
  absl::StatusOr<VariablePlacement> clash =
      other->CreateVariable(ConstantVariableSpec("a", {4, 5}, 1));
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(clash.status().message(), HasSubstr("shape [4, 3] vs [4, 5]"));
}

TEST_F(PsClientIntegrationTest, DenseRoundTripsAcrossParts) {
  absl::StatusOr<VariablePlacement> w =
      client_->CreateVariable(ConstantVariableSpec("w", {7, 2}, 0.5f, 0.5f),
                              PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<float> values(Elements(w->spec));
  ASSERT_TRUE(client_->Pull(*w, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ::testing::Each(0.5f));

  // SGD with learning rate 0.5: w -= 0.5 * g, with g = row index + column.
  std::vector<float> grad(values.size());
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = i / 2 + i % 2;
  ASSERT_TRUE(client_->Push(*w, grad).ok());
  ASSERT_TRUE(client_->Pull(*w, absl::MakeSpan(values)).ok());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(values[i], 0.5f - 0.5f * grad[i]) << i;
  }

  // Rows 3..5 straddle the boundary between the parts (4 | 3 rows).
  std::vector<float> rows(3 * 2);
  ASSERT_TRUE(client_->PullRows(*w, {3, 6}, absl::MakeSpan(rows)).ok());
  EXPECT_THAT(rows, ElementsAreArray(values.begin() + 6, values.begin() + 12));
  ASSERT_TRUE(client_->PushRows(*w, {3, 6}, std::vector<float>(6, 1.0f)).ok());
  ASSERT_TRUE(client_->PullRows(*w, {3, 6}, absl::MakeSpan(rows)).ok());
  EXPECT_EQ(rows[0], values[6] - 0.5f);

  VariableSpec step_spec{"global_step", DType::kInt64, {}, {}, {}};
  absl::StatusOr<VariablePlacement> step = client_->CreateVariable(step_spec);
  ASSERT_TRUE(step.ok()) << step.status();
  ASSERT_TRUE(client_->AddInt64(*step, std::vector<int64_t>{5}).ok());
  ASSERT_TRUE(client_->AddInt64(*step, std::vector<int64_t>{2}).ok());
  int64_t global_step = 0;
  ASSERT_TRUE(client_->PullInt64(*step, absl::MakeSpan(&global_step, 1)).ok());
  EXPECT_EQ(global_step, 7);
}

TEST_F(PsClientIntegrationTest, SparseRowsByIdWithDuplicatesSummed) {
  absl::StatusOr<VariablePlacement> emb =
      client_->CreateVariable(ConstantVariableSpec("emb", {10, 3}, 1.0f),
                              PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(emb.ok()) << emb.status();
  // Ids on both parts, in any order, one repeated.
  const std::vector<int64_t> ids = {9, 2, 9, 5};
  std::vector<float> grads(ids.size() * 3);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.25f * (i / 3 + 1);
  ASSERT_TRUE(client_->PushSparse(*emb, ids, grads).ok());

  std::vector<float> rows(4 * 3);
  ASSERT_TRUE(
      client_->PullSparse(*emb, {2, 9, 0, 5}, absl::MakeSpan(rows)).ok());
  // Row 9 got 0.25 + 0.75; row 2 got 0.5; row 0 nothing; row 5 got 1.0.
  EXPECT_THAT(rows, ElementsAre(0.5f, 0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f,
                                1.0f, 0.0f, 0.0f, 0.0f));

  std::vector<float> one(3);
  absl::Status bad = client_->PullSparse(*emb, {10}, absl::MakeSpan(one));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("id 10 is not one of its rows"));
}

// A step's reads in one round: dense variables (a small pair batched, a
// partitioned one) and rows by id of two variables (ids on both tasks, one
// repeated) come back as Pull and PullSparse give them; a bad buffer or id
// is refused naming the variable.
TEST_F(PsClientIntegrationTest, AReadOfDenseAndSparseGoesInOneRound) {
  const VariablePlacement a =
      *client_->CreateVariable(ConstantVariableSpec("a", {3}, 1.0f));
  const VariablePlacement b =
      *client_->CreateVariable(ConstantVariableSpec("b", {}, 2.0f));
  const VariablePlacement big =
      *client_->CreateVariable(ConstantVariableSpec("big", {6, 2}, 3.0f),
                               PartitionPolicy::FixedShards(2));
  const VariablePlacement emb =
      *client_->CreateVariable(ConstantVariableSpec("emb", {10, 3}, 0.0f),
                               PartitionPolicy::FixedShards(2));
  const VariablePlacement wide =
      *client_->CreateVariable(ConstantVariableSpec("wide", {8, 1}, 0.0f),
                               PartitionPolicy::FixedShards(2));
  // Distinct rows, so that misplaced ones show.
  std::vector<float> emb_grad(30), wide_grad(8);
  for (size_t i = 0; i < emb_grad.size(); ++i) emb_grad[i] = -1.0f * i;
  for (size_t i = 0; i < wide_grad.size(); ++i) wide_grad[i] = -10.0f * i;
  ASSERT_TRUE(client_->Push(emb, emb_grad).ok());
  ASSERT_TRUE(client_->Push(wide, wide_grad).ok());

  std::vector<float> a_out(3), b_out(1), big_out(12);
  const std::vector<int64_t> emb_ids = {9, 2, 9, 5}, wide_ids = {0, 7};
  std::vector<float> emb_out(4 * 3), wide_out(2);
  const std::vector<DenseVariablePull> dense = {
      {&a, absl::MakeSpan(a_out)},
      {&b, absl::MakeSpan(b_out)},
      {&big, absl::MakeSpan(big_out)}};
  const std::vector<SparseVariablePull> sparse = {
      {&emb, emb_ids, absl::MakeSpan(emb_out)},
      {&wide, wide_ids, absl::MakeSpan(wide_out)}};
  ASSERT_TRUE(ReadStep(*client_, dense, sparse).ok());
  EXPECT_THAT(a_out, ::testing::Each(1.0f));
  EXPECT_THAT(b_out, ElementsAre(2.0f));
  EXPECT_THAT(big_out, ::testing::Each(3.0f));
  EXPECT_THAT(emb_out,
              ElementsAre(27, 28, 29, 6, 7, 8, 27, 28, 29, 15, 16, 17));
  EXPECT_THAT(wide_out, ElementsAre(0, 70));

  // Only sparse reads, too.
  std::fill(emb_out.begin(), emb_out.end(), 0.0f);
  ASSERT_TRUE(ReadStep(*client_, {}, {sparse.data(), 1}).ok());
  EXPECT_EQ(emb_out[0], 27);

  std::vector<float> short_out(2);
  absl::Status s =
      ReadStep(*client_, dense, {{&emb, emb_ids, absl::MakeSpan(short_out)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"emb\""));
  s = ReadStep(
      *client_, dense,
      {{&wide, std::vector<int64_t>{8}, absl::MakeSpan(wide_out).first(1)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("id 8 is not one of its rows"));
}

// Requests served so far by every ps task together, by RPC name.
std::map<std::string, int64_t> RequestsServed(PsClient& client) {
  absl::StatusOr<std::vector<ps::GetStatusResponse>> stats = client.Stats();
  EXPECT_TRUE(stats.ok()) << stats.status();
  std::map<std::string, int64_t> served;
  if (!stats.ok()) return served;
  for (const ps::GetStatusResponse& task : *stats) {
    for (const auto& [rpc, n] : task.requests()) served[rpc] += n;
  }
  return served;
}

// A step's small requests to one ps task go as one Bundle call, served
// part by part as the RPCs they carry (and counted as them); the task
// holding one variable's rows only gets its one request alone. A part that
// fails on the ps task fails the step with its own error.
TEST_F(PsClientIntegrationTest, AStepsSmallRequestsToATaskGoAsOneBundle) {
  const VariablePlacement b =
      *client_->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  const VariablePlacement emb =
      *client_->CreateVariable(ConstantVariableSpec("emb", {10, 1}, 0.0f),
                               PartitionPolicy::FixedShards(2));
  ASSERT_EQ(b.parts.size(), 1u);
  const std::vector<int64_t> ids = {9, 2, 9};
  std::vector<float> b_out(2), emb_out(3);
  std::map<std::string, int64_t> before = RequestsServed(*client_);
  ASSERT_TRUE(ReadStep(*client_, {{&b, absl::MakeSpan(b_out)}},
                       {{&emb, ids, absl::MakeSpan(emb_out)}})
                  .ok());
  std::map<std::string, int64_t> after = RequestsServed(*client_);
  EXPECT_EQ(after["Bundle"] - before["Bundle"], 1);
  EXPECT_EQ(after["PullSparse"] - before["PullSparse"], 2);
  EXPECT_EQ(after["PullDense"] - before["PullDense"], 1);
  EXPECT_THAT(b_out, ::testing::Each(1.0f));

  before = after;
  const std::vector<float> b_grad = {0.5f, -0.5f}, grads = {1, 2, 4};
  ASSERT_TRUE(
      UpdateStep(*client_, {{&b, b_grad}}, {{&emb, ids, grads}}, {}).ok());
  after = RequestsServed(*client_);
  EXPECT_EQ(after["Bundle"] - before["Bundle"], 1);
  EXPECT_EQ(after["PushSparse"] - before["PushSparse"], 2);
  std::vector<float> emb_now(10);
  ASSERT_TRUE(client_->Pull(emb, absl::MakeSpan(emb_now)).ok());
  EXPECT_FLOAT_EQ(emb_now[9], -5.0f);  // repeats summed; learning rate 1
  EXPECT_FLOAT_EQ(emb_now[2], -2.0f);

  // A variable the ps task does not hold, in a bundle with one it does.
  VariablePlacement missing = b;
  missing.spec.name = "missing";
  std::vector<float> missing_out(2);
  absl::Status s = ReadStep(
      *client_,
      {{&b, absl::MakeSpan(b_out)}, {&missing, absl::MakeSpan(missing_out)}},
      {{&emb, ids, absl::MakeSpan(emb_out)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("missing"));

  // Without bundles, every request goes alone.
  PsClient::Options alone;
  alone.bundle_below_bytes = 0;
  std::unique_ptr<PsClient> other = NewClient(alone);
  ASSERT_NE(other, nullptr);
  before = RequestsServed(*client_);
  ASSERT_TRUE(ReadStep(*other, {{&b, absl::MakeSpan(b_out)}},
                       {{&emb, ids, absl::MakeSpan(emb_out)}})
                  .ok());
  after = RequestsServed(*client_);
  EXPECT_EQ(after["Bundle"], before["Bundle"]);
  EXPECT_EQ(after["PullSparse"] - before["PullSparse"], 2);
}

// A Bundle part naming an RPC that bundles do not carry (one without
// tensors, or Bundle itself) is answered with its own error; the parts
// beside it are served.
TEST_F(PsClientIntegrationTest, BundlePartsOfOtherRpcsAreRefusedAlone) {
  ASSERT_TRUE(
      client_->CreateVariable(ConstantVariableSpec("v", {2}, 4.0f)).ok());
  absl::StatusOr<VariablePlacement> v = client_->LookupVariable("v");
  ASSERT_TRUE(v.ok()) << v.status();
  const PsProcess& holder = tasks_[v->parts[0].ps_task];
  ps::PullDenseRequest pull;
  pull.set_name("v");
  std::vector<rpc::WirePart> parts(3);
  parts[0].method = "Save";
  parts[0].message = rpc::EncodeWithTensors(ps::SaveRequest(), {});
  parts[1].method = "Bundle";
  parts[1].message = rpc::EncodeBundle({});
  parts[2].method = "PullDense";
  parts[2].message = rpc::EncodeWithTensors(pull, {});
  grpc::ByteBuffer request = rpc::EncodeBundle(parts);
  grpc::ByteBuffer response;
  grpc::GenericStub stub(grpc::CreateChannel(
      holder.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(&context, "/distrt.ps.ParameterServer/Bundle",
                 grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();  // the deadline bounds the wait
  ASSERT_TRUE(status.ok()) << status.error_message();
  absl::StatusOr<std::vector<rpc::WirePart>> answers =
      rpc::DecodeBundle(&response, "Bundle response");
  ASSERT_TRUE(answers.ok()) << answers.status();
  ASSERT_EQ(answers->size(), 3u);
  for (int i : {0, 1}) {
    EXPECT_EQ((*answers)[i].code, grpc::StatusCode::INVALID_ARGUMENT) << i;
    EXPECT_THAT((*answers)[i].error,
                HasSubstr("is not one of the RPCs a bundle carries"));
  }
  EXPECT_THAT((*answers)[0].error, HasSubstr("part 0: \"Save\""));
  EXPECT_EQ((*answers)[2].code, 0) << (*answers)[2].error;
  ps::PullDenseResponse pulled;
  ASSERT_TRUE(
      rpc::DecodeWithTensors(&(*answers)[2].message, "PullDense", &pulled, {})
          .ok());
  EXPECT_EQ(pulled.values().data().size(), 2 * sizeof(float));
}

// A ps task that does not serve Bundle gets the bundle's calls one by one
// after its first refusal (saying so once), and no bundle again.
TEST(PsClientBundleFallbackTest, ATaskWithoutBundleGetsTheCallsAlone) {
  absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(1);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  absl::StatusOr<std::unique_ptr<RefusingProxy>> proxy =
      RefusingProxy::Start((*tasks)[0].address(), [](absl::string_view method) {
        return absl::EndsWith(method, "/Bundle");
      });
  ASSERT_TRUE(proxy.ok()) << proxy.status();

  PsClient::Options options;
  options.rpc_timeout = absl::Seconds(30);
  absl::Mutex log_mu;
  std::vector<std::string> log;
  options.log = [&](absl::string_view line) {
    absl::MutexLock lock(&log_mu);
    log.emplace_back(line);
  };
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(std::vector<std::string>{(*proxy)->address()}, options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->WaitForServers(absl::Seconds(30)).ok());
  const VariablePlacement b =
      *(*client)->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  const VariablePlacement emb =
      *(*client)->CreateVariable(ConstantVariableSpec("emb", {10, 1}, 3.0f));
  const std::vector<int64_t> ids = {9, 2};
  for (int step = 0; step < 2; ++step) {
    std::vector<float> b_out(2), emb_out(2);
    ASSERT_TRUE(ReadStep(**client, {{&b, absl::MakeSpan(b_out)}},
                         {{&emb, ids, absl::MakeSpan(emb_out)}})
                    .ok());
    EXPECT_THAT(b_out, ::testing::Each(1.0f));
    EXPECT_THAT(emb_out, ::testing::Each(3.0f));
  }
  EXPECT_EQ((*proxy)->refused(), 1);
  absl::MutexLock lock(&log_mu);
  int said = 0;
  for (const std::string& line : log) {
    said += absl::StrContains(line, "does not serve Bundle");
  }
  EXPECT_EQ(said, 1) << absl::StrJoin(log, "\n");
}

// A step's updates in one round: a dense variable and rows by id (on both
// tasks, one repeated: summed) land as Push and PushSparse apply them.
TEST_F(PsClientIntegrationTest, AnUpdateOfDenseAndSparseGoesInOneRound) {
  const VariablePlacement b =
      *client_->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  const VariablePlacement emb =
      *client_->CreateVariable(ConstantVariableSpec("emb", {10, 1}, 0.0f),
                               PartitionPolicy::FixedShards(2));
  const std::vector<float> b_grad = {0.5f, -0.5f};
  const std::vector<int64_t> ids = {9, 2, 9};
  const std::vector<float> grads = {1.0f, 2.0f, 4.0f};
  ASSERT_TRUE(
      UpdateStep(*client_, {{&b, b_grad}}, {{&emb, ids, grads}}, {}).ok());
  std::vector<float> b_now(2), emb_now(10);
  ASSERT_TRUE(client_->Pull(b, absl::MakeSpan(b_now)).ok());
  ASSERT_TRUE(client_->Pull(emb, absl::MakeSpan(emb_now)).ok());
  EXPECT_THAT(b_now, ElementsAre(0.5f, 1.5f));
  EXPECT_THAT(emb_now, ElementsAre(0, 0, -2, 0, 0, 0, 0, 0, 0, -5));

  const std::vector<float> short_grads = {1.0f};
  absl::Status s = UpdateStep(*client_, {}, {{&emb, ids, short_grads}}, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"emb\""));
}

// A step's updates and the next step's reads in one round: one Bundle per
// ps task, served in order, so the reads see the updates; the counter's
// add brings its value back beside them.
TEST_F(PsClientIntegrationTest, UpdateThenReadReadsWhatItsUpdatesLeft) {
  const VariablePlacement b =
      *client_->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  const VariablePlacement emb =
      *client_->CreateVariable(ConstantVariableSpec("emb", {10, 1}, 0.0f),
                               PartitionPolicy::FixedShards(2));
  const VariablePlacement step =
      *client_->CreateVariable(VariableSpec{"step", DType::kInt64, {}, {}, {}});
  const std::vector<float> b_grad = {0.5f, -0.5f}, grads = {1, 2, 4};
  const std::vector<int64_t> ids = {9, 2, 9}, one = {1};
  std::vector<int64_t> after(1);
  std::vector<float> b_out(2), emb_out(3);
  std::map<std::string, int64_t> before = RequestsServed(*client_);
  ASSERT_TRUE(UpdateThenRead(*client_, {{&b, b_grad}}, {{&emb, ids, grads}},
                             {{&step, one, absl::MakeSpan(after)}},
                             {{&b, absl::MakeSpan(b_out)}},
                             {{&emb, ids, absl::MakeSpan(emb_out)}})
                  .ok());
  std::map<std::string, int64_t> after_served = RequestsServed(*client_);
  // emb's rows are on both tasks: one bundle to each, nothing alone.
  EXPECT_EQ(after_served["Bundle"] - before["Bundle"], 2);
  EXPECT_EQ(after_served["PushSparse"] - before["PushSparse"], 2);
  EXPECT_EQ(after_served["PullSparse"] - before["PullSparse"], 2);
  EXPECT_THAT(b_out, ElementsAre(0.5f, 1.5f));
  EXPECT_THAT(emb_out, ElementsAre(-5.0f, -2.0f, -5.0f));  // repeats summed
  EXPECT_THAT(after, ElementsAre(1));

  // Sizes are checked before anything is sent.
  std::vector<float> short_out(1);
  absl::Status s = UpdateThenRead(*client_, {{&b, b_grad}}, {}, {}, {},
                                  {{&emb, ids, absl::MakeSpan(short_out)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"emb\""));
  std::vector<float> b_now(2);
  ASSERT_TRUE(client_->Pull(b, absl::MakeSpan(b_now)).ok());
  EXPECT_THAT(b_now, ElementsAre(0.5f, 1.5f));
}

// The global step's fetch-and-add goes in a step's round of updates: it
// is applied once with them and brings back the value it left.
TEST_F(PsClientIntegrationTest, AnUpdatesAddToACounterReturnsItsValue) {
  const VariablePlacement b =
      *client_->CreateVariable(ConstantVariableSpec("b", {2}, 1.0f));
  const VariablePlacement emb =
      *client_->CreateVariable(ConstantVariableSpec("emb", {10, 1}, 0.0f),
                               PartitionPolicy::FixedShards(2));
  const VariablePlacement step = *client_->CreateVariable(
      VariableSpec{"global_step", DType::kInt64, {}, {}, {}});
  ASSERT_TRUE(client_->AddInt64(step, std::vector<int64_t>{40}).ok());
  const std::vector<float> b_grad = {0.5f, -0.5f};
  const std::vector<int64_t> ids = {1, 8};
  const std::vector<float> grads = {1.0f, 2.0f};
  const std::vector<int64_t> one = {1};
  int64_t after = 0;
  ASSERT_TRUE(UpdateStep(*client_, {{&b, b_grad}}, {{&emb, ids, grads}},
                         {{&step, one, absl::MakeSpan(&after, 1)}})
                  .ok());
  EXPECT_EQ(after, 41);
  // Without the values after: added all the same.
  ASSERT_TRUE(UpdateStep(*client_, {}, {}, {{&step, one, {}}}).ok());
  int64_t now = 0;
  ASSERT_TRUE(client_->PullInt64(step, absl::MakeSpan(&now, 1)).ok());
  EXPECT_EQ(now, 42);
  std::vector<float> b_now(2), emb_now(10);
  ASSERT_TRUE(client_->Pull(b, absl::MakeSpan(b_now)).ok());
  ASSERT_TRUE(client_->Pull(emb, absl::MakeSpan(emb_now)).ok());
  EXPECT_THAT(b_now, ElementsAre(0.5f, 1.5f));
  EXPECT_THAT(emb_now, ElementsAre(0, -1, 0, 0, 0, 0, 0, 0, -2, 0));

  // A counter split over both ps tasks: each task's part comes back into
  // its place in `after` (decoded on gRPC threads, one range each).
  VariableSpec counts_spec{"counts", DType::kInt64, {4}, {}, {}};
  const VariablePlacement counts =
      *client_->CreateVariable(counts_spec, PartitionPolicy::FixedShards(2));
  ASSERT_EQ(counts.parts.size(), 2u);
  const std::vector<int64_t> deltas = {1, 2, 3, 4};
  std::vector<int64_t> counts_after(4);
  for (int round = 1; round <= 2; ++round) {
    ASSERT_TRUE(UpdateStep(*client_, {{&b, b_grad}}, {},
                           {{&step, one, {}},
                            {&counts, deltas, absl::MakeSpan(counts_after)}})
                    .ok());
    EXPECT_THAT(counts_after,
                ElementsAre(round, 2 * round, 3 * round, 4 * round));
  }

  // An add to a float32 variable is refused before anything is sent.
  const std::vector<int64_t> two = {1, 1};
  absl::Status s = UpdateStep(*client_, {{&b, b_grad}}, {}, {{&b, two, {}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"b\""));
  ASSERT_TRUE(client_->Pull(b, absl::MakeSpan(b_now)).ok());
  EXPECT_THAT(b_now, ElementsAre(-0.5f, 2.5f));
}

TEST_F(PsClientIntegrationTest, HashTableRowsAreCreatedOnFirstUse) {
  HashEmbeddingSpec table;
  table.name = "user_emb";
  table.dim = 4;
  table.initializer.kind = InitializerSpec::Kind::kUniform;
  table.initializer.seed = 7;
  table.optimizer.learning_rate = 1.0f;
  ASSERT_TRUE(client_->CreateHashTable(table).ok());
  ASSERT_TRUE(client_->CreateHashTable(table).ok());  // every worker may ask

  const std::vector<int64_t> ids = {int64_t{1} << 50, -3, 17, 17, 99};
  std::vector<float> first(ids.size() * 4), second(ids.size() * 4);
  ASSERT_TRUE(client_->PullHash(table, ids, absl::MakeSpan(first)).ok());
  ASSERT_TRUE(client_->PullHash(table, ids, absl::MakeSpan(second)).ok());
  EXPECT_EQ(first, second);
  EXPECT_NE(first[0], first[4]);  // different ids, different rows

  ASSERT_TRUE(
      client_->PushHash(table, {17, 17}, std::vector<float>(8, 1.0f)).ok());
  std::vector<float> row(4);
  ASSERT_TRUE(client_->PullHash(table, {17}, absl::MakeSpan(row)).ok());
  EXPECT_EQ(row[0], first[8] - 2.0f);

  std::vector<DistributedHashTableInfo> tables;
  ASSERT_TRUE(client_->List(nullptr, &tables).ok());
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].rows_per_task[0] + tables[0].rows_per_task[1], 4);
  EXPECT_EQ(tables[0].bytes_per_task[0] + tables[0].bytes_per_task[1],
            4 * 4 * 4);
}

TEST_F(PsClientIntegrationTest, ConcurrentPushesAreNeverLost) {
  constexpr int kThreads = 8;
  constexpr int kPushes = 1000;
  absl::StatusOr<VariablePlacement> w =
      client_->CreateVariable(ConstantVariableSpec("counter", {6, 2}, 0.0f),
                              PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(w.ok()) << w.status();
  absl::StatusOr<VariablePlacement> step = client_->CreateVariable(
      VariableSpec{"global_step", DType::kInt64, {}, {}, {}});
  ASSERT_TRUE(step.ok()) << step.status();
  // SGD with learning rate 1 and gradient -1 adds exactly 1 per push: the
  // sums stay exact in float32 far beyond 8000.
  const std::vector<float> minus_one(Elements(w->spec), -1.0f);
  std::vector<std::thread> threads;
  std::vector<absl::Status> failures(kThreads);
  // Half the threads add as a training step does, learning the value their
  // add left (a fetch-and-add): those values are all distinct.
  std::vector<std::vector<int64_t>> seen(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPushes && failures[t].ok(); ++i) {
        failures[t] = client_->Push(*w, minus_one);
        if (!failures[t].ok()) break;
        if (t % 2 == 0) {
          failures[t] = client_->AddInt64(*step, std::vector<int64_t>{1});
          continue;
        }
        int64_t after = 0;
        failures[t] = client_->AddInt64(*step, std::vector<int64_t>{1},
                                        absl::MakeSpan(&after, 1));
        seen[t].push_back(after);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& s : failures) ASSERT_TRUE(s.ok()) << s;
  std::set<int64_t> distinct;
  size_t fetched = 0;
  for (const std::vector<int64_t>& values : seen) {
    fetched += values.size();
    for (int64_t v : values) {
      EXPECT_GE(v, 1);
      EXPECT_LE(v, kThreads * kPushes);
      distinct.insert(v);
    }
  }
  EXPECT_EQ(fetched, static_cast<size_t>(kThreads / 2 * kPushes));
  EXPECT_EQ(distinct.size(), fetched);

  std::vector<float> values(Elements(w->spec));
  ASSERT_TRUE(client_->Pull(*w, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ::testing::Each(float{kThreads * kPushes}));
  int64_t global_step = 0;
  ASSERT_TRUE(client_->PullInt64(*step, absl::MakeSpan(&global_step, 1)).ok());
  EXPECT_EQ(global_step, kThreads * kPushes);
}

// Requests that a client library would never send, straight from a stub.
class RawRequestTest : public PsClientIntegrationTest {
 protected:
  void SetUp() override {
    PsClientIntegrationTest::SetUp();
    ASSERT_TRUE(
        client_->CreateVariable(ConstantVariableSpec("w", {4, 2}, 0)).ok());
    stub_ = ps::ParameterServer::NewStub(grpc::CreateChannel(
        tasks_[0].address(), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Push(ps::PushDenseRequest request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    ps::PushDenseResponse response;
    return stub_->PushDense(&context, request, &response);
  }

  std::unique_ptr<ps::ParameterServer::Stub> stub_;
};

TEST_F(RawRequestTest, ResentPushIsAppliedOnce) {
  ps::PushDenseRequest request;
  request.set_name("w");
  request.set_request_id(77);
  rpc::EncodeFloat32(std::vector<float>(8, 1.0f), {4, 2},
                     request.mutable_values());
  ASSERT_TRUE(Push(request).ok());
  ASSERT_TRUE(Push(request).ok());  // a retry: acknowledged, not applied
  absl::StatusOr<VariablePlacement> w = client_->LookupVariable("w");
  ASSERT_TRUE(w.ok());
  std::vector<float> values(8);
  ASSERT_TRUE(client_->Pull(*w, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ::testing::Each(-1.0f));

  request.set_request_id(78);  // another push
  ASSERT_TRUE(Push(request).ok());
  request.set_request_id(0);  // no id: applied every time
  ASSERT_TRUE(Push(request).ok());
  ASSERT_TRUE(Push(request).ok());
  ASSERT_TRUE(client_->Pull(*w, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ::testing::Each(-4.0f));
  absl::StatusOr<std::vector<ps::GetStatusResponse>> stats = client_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ((*stats)[0].duplicate_pushes(), 1);
}

TEST_F(RawRequestTest, FailedPushMayBeResent) {
  ps::PushDenseRequest request;
  request.set_name("w");
  request.set_request_id(99);
  rpc::EncodeFloat32(std::vector<float>(5, 1.0f), {5},
                     request.mutable_values());
  EXPECT_EQ(Push(request).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  rpc::EncodeFloat32(std::vector<float>(8, 1.0f), {4, 2},
                     request.mutable_values());
  ASSERT_TRUE(Push(request).ok());
  absl::StatusOr<VariablePlacement> w = client_->LookupVariable("w");
  ASSERT_TRUE(w.ok());
  std::vector<float> values(8);
  ASSERT_TRUE(client_->Pull(*w, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ::testing::Each(-1.0f));
}

TEST_F(RawRequestTest, UnknownVariableIsNotFoundNamingIt) {
  ps::PushDenseRequest request;
  request.set_name("nope");
  grpc::Status s = Push(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("\"nope\""));
}

TEST_F(RawRequestTest, WrongLengthNamesBothSizes) {
  ps::PushDenseRequest request;
  request.set_name("w");
  rpc::EncodeFloat32(std::vector<float>(5, 1.0f), {5},
                     request.mutable_values());
  grpc::Status s = Push(request);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("has 5 values, expected 8"));
  EXPECT_THAT(s.error_message(), HasSubstr("\"w\""));
}

TEST_F(RawRequestTest, WrongDtypeAndRowRangeAreInvalid) {
  ps::PushDenseRequest request;
  request.set_name("w");
  rpc::EncodeInt64(std::vector<int64_t>(8, 1), {8}, request.mutable_values());
  EXPECT_EQ(Push(request).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  ps::PullDenseRequest pull;
  pull.set_name("w");
  pull.mutable_rows()->set_begin(0);
  pull.mutable_rows()->set_end(int64_t{1} << 62);  // never allocated
  grpc::ClientContext context;
  ps::PullDenseResponse response;
  grpc::Status s = stub_->PullDense(&context, pull, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("not within the rows held"));
}

TEST_F(RawRequestTest, NegativeAndHugeShapesAreRefusedBeforeAllocation) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{-1, 4},
        std::vector<int64_t>{1 << 30, 1 << 30, 4}}) {
    ps::CreateVariableRequest request;
    request.mutable_spec()->set_name("huge");
    request.mutable_spec()->mutable_shape()->Assign(shape.begin(), shape.end());
    grpc::ClientContext context;
    ps::VariableInfo response;
    grpc::Status s = stub_->CreateVariable(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("\"huge\""));
  }
  // Within the element limit but beyond the server's memory limit.
  ps::CreateVariableRequest request;
  request.mutable_spec()->set_name("big");
  request.mutable_spec()->add_shape(int64_t{1} << 38);
  grpc::ClientContext context;
  ps::VariableInfo response;
  grpc::Status s = stub_->CreateVariable(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST(PsServerLimitsTest, OversizedMessagesAreResourceExhausted) {
  absl::StatusOr<std::vector<PsProcess>> tasks =
      StartPsProcesses(1, {"--max_message_mb=1"});
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  auto stub = ps::ParameterServer::NewStub(grpc::CreateChannel(
      (*tasks)[0].address(), grpc::InsecureChannelCredentials()));
  ps::PushDenseRequest request;
  request.set_name("w");
  rpc::EncodeFloat32(std::vector<float>(1 << 19, 1.0f), {1 << 19},
                     request.mutable_values());  // 2 MiB
  grpc::ClientContext context;
  ps::PushDenseResponse response;
  EXPECT_EQ(stub->PushDense(&context, request, &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);

  // A pull whose response would be over the limit is refused, not built;
  // PsClient splits the same pull into requests under the limit.
  PsClient::Options options;
  options.max_request_bytes = 256 << 10;
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(AddressesOf(*tasks), options);
  ASSERT_TRUE(client.ok());
  absl::StatusOr<VariablePlacement> big = (*client)->CreateVariable(
      ConstantVariableSpec("big", {1 << 10, 1 << 9}, 2.0f));  // 2 MiB
  ASSERT_TRUE(big.ok()) << big.status();
  ps::PullDenseRequest pull;
  pull.set_name("big");
  grpc::ClientContext pull_context;
  ps::PullDenseResponse pulled;
  grpc::Status s = stub->PullDense(&pull_context, pull, &pulled);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("message limit"));
  std::vector<float> values(1 << 19);
  ASSERT_TRUE((*client)->Pull(*big, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ::testing::Each(2.0f));
}

TEST(PsServerLimitsTest, HashTablesStayWithinTheMemoryLimit) {
  absl::StatusOr<std::vector<PsProcess>> tasks =
      StartPsProcesses(1, {"--max_memory_mb=1"});
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(AddressesOf(*tasks), PsClient::Options());
  ASSERT_TRUE(client.ok());
  HashEmbeddingSpec table;
  table.name = "ids";
  table.dim = 64;
  table.optimizer.kind = OptimizerKind::kAdam;  // 768 bytes per row
  ASSERT_TRUE((*client)->CreateHashTable(table).ok());
  std::vector<int64_t> ids(1000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
  std::vector<float> rows(ids.size() * 64);
  ASSERT_TRUE((*client)->PullHash(table, ids, absl::MakeSpan(rows)).ok());
  for (int64_t& id : ids) id += 1000;  // 1000 more rows: past 1 MiB
  absl::Status s = (*client)->PullHash(table, ids, absl::MakeSpan(rows));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("memory limit"));
  absl::StatusOr<std::vector<ps::GetStatusResponse>> stats = (*client)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ((*stats)[0].hash_table_rows(), 1000);
}

TEST(PsClientWaitTest, NamesTheTaskThatDoesNotAnswer) {
  absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(2);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  const std::string gone = (*tasks)[1].address();
  (*tasks)[1].process.reset();  // killed: nothing listens there now
  std::vector<std::string> log;
  PsClient::Options options;
  options.log = [&log](absl::string_view line) { log.emplace_back(line); };
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(AddressesOf(*tasks), options);
  ASSERT_TRUE(client.ok());
  absl::Status s = (*client)->WaitForServers(absl::Seconds(6));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("ps task 1 (" + gone + ")"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("ps task 0")));
  ASSERT_FALSE(log.empty());  // after the first 5 s round
  EXPECT_THAT(log[0], HasSubstr("waiting for ps task 1 (" + gone + ")"));
}

}  // namespace
}  // namespace distrt

namespace distrt {
namespace {

// A ps task that goes away and comes back (or not) while a client uses it.
class PsFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(1);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    tasks_ = *std::move(tasks);
  }

  std::unique_ptr<PsClient> NewClient(absl::Duration failure_timeout) {
    PsClient::Options options;
    options.ps_failure_timeout = failure_timeout;
    options.log = [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      log_.emplace_back(line);
      if (absl::StrContains(line, "retrying") && !retrying_.HasBeenNotified()) {
        retrying_.Notify();
      }
    };
    absl::StatusOr<std::unique_ptr<PsClient>> client =
        PsClient::Create(AddressesOf(tasks_), options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  std::vector<PsProcess> tasks_;
  absl::Mutex mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
  absl::Notification retrying_;
};

TEST_F(PsFailureTest, RequestsWaitForATaskThatRestarts) {
  std::unique_ptr<PsClient> client = NewClient(absl::Seconds(60));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(
      client->CreateVariable(ConstantVariableSpec("w", {4}, 1.0f)).ok());
  const int port = tasks_[0].port;
  tasks_[0].process.reset();  // SIGKILL: gone, with what it held

  absl::Status created;
  std::thread creator([&] {
    created =
        client->CreateVariable(ConstantVariableSpec("v", {2}, 3.0f)).status();
  });
  // Back at the same address once the client has started retrying.
  ASSERT_TRUE(retrying_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::StatusOr<PsProcess> restarted =
      testing::StartPsProcess(0, 1, {absl::StrCat("--port=", port)});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  creator.join();
  EXPECT_TRUE(created.ok()) << created;
  absl::StatusOr<VariablePlacement> v = client->LookupVariable("v");
  ASSERT_TRUE(v.ok()) << v.status();
  std::vector<float> values(2);
  ASSERT_TRUE(client->Pull(*v, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ElementsAre(3.0f, 3.0f));
  absl::MutexLock lock(&mu_);
  EXPECT_THAT(log_[0], HasSubstr("to ps task 0 (127.0.0.1:"));
  EXPECT_THAT(log_[0], HasSubstr("--ps_failure_timeout"));
}

TEST_F(PsFailureTest, GivesUpOnAKilledTaskAfterTheTimeout) {
  std::unique_ptr<PsClient> client = NewClient(absl::Seconds(2));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(
      client->CreateVariable(ConstantVariableSpec("w", {4}, 1.0f)).ok());
  absl::StatusOr<VariablePlacement> w = client->LookupVariable("w");
  ASSERT_TRUE(w.ok());
  const std::string address = tasks_[0].address();
  tasks_[0].process.reset();
  std::vector<float> values(4);
  const absl::Time start = absl::Now();
  absl::Status s = client->Pull(*w, absl::MakeSpan(values));
  EXPECT_GE(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(),
              HasSubstr(absl::StrCat("ps task 0 (", address,
                                     ") did not answer PullDense")));
  EXPECT_THAT(s.message(), HasSubstr("for 2s (--ps_failure_timeout)"));
}

TEST_F(PsFailureTest, GivesUpOnAStoppedTaskAfterTheTimeout) {
  std::unique_ptr<PsClient> client = NewClient(absl::Seconds(2));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(
      client->CreateVariable(ConstantVariableSpec("w", {4}, 1.0f)).ok());
  absl::StatusOr<VariablePlacement> w = client->LookupVariable("w");
  ASSERT_TRUE(w.ok());
  // Stopped, not dead: its connections stay open and nothing answers.
  ASSERT_TRUE(tasks_[0].process->Stop().ok());
  std::vector<float> gradient(4, 1.0f);
  absl::Status s = client->Push(*w, absl::MakeConstSpan(gradient));
  tasks_[0].process->Signal(SIGCONT);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("did not answer PushDense"));
  EXPECT_THAT(s.message(), HasSubstr("Deadline Exceeded"));
}

}  // namespace
}  // namespace distrt
