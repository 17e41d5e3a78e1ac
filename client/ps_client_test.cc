// PsClient against real ps_server processes over gRPC on 127.0.0.1, with 1
// and 2 ps tasks: sparse and hash-table operations with repeated ids (sent
// once per distinct id), reads and updates of many dense variables against
// Pull / Push one by one, the checks they make before sending anything, and
// several connections per ps task.

#include "client/ps_client.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/in_process_ps_tasks.h"
#include "tests/util/ps_processes.h"
#include "tests/util/step_requests.h"

namespace distrt {
namespace {

using ::distrt::testing::AddressesOf;
using ::distrt::testing::PsProcess;
using ::distrt::testing::ReadStep;
using ::distrt::testing::StartPsProcesses;
using ::distrt::testing::UpdateStep;
using ::testing::HasSubstr;

VariableSpec Spec(std::string name, std::vector<int64_t> shape,
                  float initial_value,
                  OptimizerKind optimizer = OptimizerKind::kSgd,
                  float learning_rate = 0.5f) {
  VariableSpec spec;
  spec.name = std::move(name);
  spec.shape = std::move(shape);
  spec.initializer.kind = InitializerSpec::Kind::kConstant;
  spec.initializer.value = initial_value;
  spec.optimizer.kind = optimizer;
  spec.optimizer.learning_rate = learning_rate;
  return spec;
}

HashEmbeddingSpec Table(std::string name, int64_t dim,
                        OptimizerKind optimizer) {
  HashEmbeddingSpec table;
  table.name = std::move(name);
  table.dim = dim;
  table.initializer.kind = InitializerSpec::Kind::kConstant;
  table.initializer.value = 0.25f;
  table.optimizer.kind = optimizer;
  table.optimizer.learning_rate = 0.1f;
  return table;
}

int64_t Elements(const VariableSpec& spec) {
  return NumRows(spec) * RowWidth(spec);
}

// Gradients that differ in every element and are not exact in binary, so
// that sums in another order or grouping would show.
std::vector<float> Gradients(size_t n, float scale) {
  std::vector<float> grads(n);
  for (size_t i = 0; i < n; ++i) {
    grads[i] = scale * (0.1f + 0.37f * static_cast<float>(i % 17)) -
               0.013f * static_cast<float>(i % 5);
  }
  return grads;
}

// The distinct ids of `ids` in order of first appearance, and each one's
// gradient rows summed in float in the order they appear: what PushSparse
// of `ids` must send.
void SumRepeats(const std::vector<int64_t>& ids,
                const std::vector<float>& grads, int64_t width,
                std::vector<int64_t>* distinct, std::vector<float>* sums) {
  std::map<int64_t, size_t> index;
  distinct->clear();
  sums->clear();
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [it, inserted] = index.try_emplace(ids[i], distinct->size());
    if (inserted) {
      distinct->push_back(ids[i]);
      sums->insert(sums->end(), grads.begin() + i * width,
                   grads.begin() + (i + 1) * width);
      continue;
    }
    for (int64_t k = 0; k < width; ++k) {
      (*sums)[it->second * width + k] += grads[i * width + k];
    }
  }
}

// TCP connections established to `port` on this host, counted on the
// server's side; -1 when /proc/net cannot be read.
int ConnectionsTo(int port) {
  int count = 0;
  bool read_any = false;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    if (!in) continue;
    read_any = true;
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const size_t colon = local.rfind(':');
      if (colon == std::string::npos || state != "01") continue;  // ESTABLISHED
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) ++count;
    }
  }
  return read_any ? count : -1;
}

// Requests of `rpc` all tasks served.
int64_t Requests(const std::vector<ps::GetStatusResponse>& stats,
                 const std::string& rpc) {
  const std::vector<int64_t> per_task = rpc::RequestsPerTask(stats, rpc);
  return std::accumulate(per_task.begin(), per_task.end(), int64_t{0});
}

// Parameter: the number of ps tasks.
class PsClientTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(GetParam());
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    tasks_ = *std::move(tasks);
    client_ = NewClient(DefaultOptions());
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(client_->WaitForServers(absl::Seconds(30)).ok());
  }

  static PsClient::Options DefaultOptions() {
    PsClient::Options options;
    options.rpc_timeout = absl::Seconds(30);
    return options;
  }

  std::unique_ptr<PsClient> NewClient(PsClient::Options options) {
    absl::StatusOr<std::unique_ptr<PsClient>> client =
        PsClient::Create(AddressesOf(tasks_), std::move(options));
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  std::vector<float> PullAll(PsClient& client, const VariablePlacement& v) {
    std::vector<float> values(Elements(v.spec));
    absl::Status s = client.Pull(v, absl::MakeSpan(values));
    EXPECT_TRUE(s.ok()) << s;
    return values;
  }

  std::vector<PsProcess> tasks_;
  std::unique_ptr<PsClient> client_;
};

INSTANTIATE_TEST_SUITE_P(PsTasks, PsClientTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat(info.param, "Ps");
                         });

TEST_P(PsClientTest, SparsePushWithRepeatsEqualsPushOfSums) {
  // Adagrad, so that applying a repeated id's gradients as one update or as
  // several would differ (and not Adam, whose updates depend on the order
  // in which the ps receives requests to one part: its step counts them);
  // small requests, so that the ids are cut into several requests per part
  // (repeats in different requests included).
  PsClient::Options options = DefaultOptions();
  options.max_request_bytes = 2 * 3 * sizeof(float);  // 2 rows
  std::unique_ptr<PsClient> client = NewClient(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<VariablePlacement> a = client->CreateVariable(
      Spec("a", {10, 3}, 1.0f, OptimizerKind::kAdagrad, 0.1f),
      PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<VariablePlacement> b = client->CreateVariable(
      Spec("b", {10, 3}, 1.0f, OptimizerKind::kAdagrad, 0.1f),
      PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(b.ok()) << b.status();

  const std::vector<int64_t> ids = {3, 9, 3, 5, 9, 3, 0, 7, 5};
  const std::vector<float> grads = Gradients(ids.size() * 3, 1.0f);
  std::vector<int64_t> distinct;
  std::vector<float> sums;
  SumRepeats(ids, grads, 3, &distinct, &sums);
  ASSERT_EQ(distinct, (std::vector<int64_t>{3, 9, 5, 0, 7}));
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(client->PushSparse(*a, ids, grads).ok());
    ASSERT_TRUE(client->PushSparse(*b, distinct, sums).ok());
  }
  const std::vector<float> a_values = PullAll(*client, *a);
  EXPECT_EQ(a_values, PullAll(*client, *b));
  EXPECT_NE(a_values[3 * 3], 1.0f);  // pushed
  EXPECT_EQ(a_values[1 * 3], 1.0f);  // not pushed

  // The ps sums repeats in the same order: pushing {3, 3, 5} with g1, g2,
  // g3 equals pushing {3, 5} with g1 + g2, g3.
  absl::StatusOr<VariablePlacement> c =
      client->CreateVariable(Spec("c", {6, 2}, 0.0f));
  absl::StatusOr<VariablePlacement> d =
      client->CreateVariable(Spec("d", {6, 2}, 0.0f));
  ASSERT_TRUE(c.ok() && d.ok());
  const std::vector<float> g = {0.1f, 0.2f, 0.3f, 0.7f, 1.1f, 1.3f};
  ASSERT_TRUE(client->PushSparse(*c, {3, 3, 5}, g).ok());
  ASSERT_TRUE(
      client
          ->PushSparse(*d, {3, 5},
                       std::vector<float>{g[0] + g[2], g[1] + g[3], g[4], g[5]})
          .ok());
  EXPECT_EQ(PullAll(*client, *c), PullAll(*client, *d));
}

TEST_P(PsClientTest, SparsePullWithRepeatsCopiesEachRow) {
  absl::StatusOr<VariablePlacement> w = client_->CreateVariable(
      Spec("w", {10, 4}, 0.0f, OptimizerKind::kSgd, 1.0f),
      PartitionPolicy::FixedShards(2));
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<float> grad = Gradients(Elements(w->spec), 1.0f);
  ASSERT_TRUE(client_->Push(*w, grad).ok());
  const std::vector<float> all = PullAll(*client_, *w);

  // Repeats next to each other, apart, on both parts, and a run of
  // distinct ids before the first repeat.
  for (const std::vector<int64_t>& ids :
       {std::vector<int64_t>{1, 2, 8, 8}, std::vector<int64_t>{9, 1, 9, 6, 1},
        std::vector<int64_t>{4, 4, 4},
        std::vector<int64_t>{7, 3, 0, 5, 3, 7}}) {
    std::vector<float> rows(ids.size() * 4, -1.0f);
    ASSERT_TRUE(client_->PullSparse(*w, ids, absl::MakeSpan(rows)).ok());
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(rows[i * 4 + k], all[ids[i] * 4 + k])
            << "id " << ids[i] << " at " << i;
      }
    }
  }

  // An id that is not a row is refused as before, repeated or not.
  std::vector<float> rows(3 * 4);
  absl::Status bad = client_->PullSparse(*w, {2, 10, 10}, absl::MakeSpan(rows));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("variable \"w\": id 10 is not one"));
  bad = client_->PushSparse(*w, {-1, 2, -1}, rows);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("id -1 is not one of its rows"));

  // The same of a variable in one part (its ids grouped without a search).
  absl::StatusOr<VariablePlacement> whole =
      client_->CreateVariable(Spec("whole", {10, 4}, 0.0f));
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->parts.size(), 1u);
  ASSERT_TRUE(client_->Push(*whole, grad).ok());
  const std::vector<float> whole_all = PullAll(*client_, *whole);
  const std::vector<int64_t> whole_ids = {9, 0, 9, 4};
  std::vector<float> whole_rows(whole_ids.size() * 4);
  ASSERT_TRUE(
      client_->PullSparse(*whole, whole_ids, absl::MakeSpan(whole_rows)).ok());
  for (size_t i = 0; i < whole_ids.size(); ++i) {
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(whole_rows[i * 4 + k], whole_all[whole_ids[i] * 4 + k])
          << "id " << whole_ids[i] << " at " << i;
    }
  }
  bad = client_->PullSparse(*whole, {2, 10, 10}, absl::MakeSpan(rows));
  EXPECT_THAT(bad.message(), HasSubstr("variable \"whole\": id 10 is not one"));
  bad = client_->PushSparse(*whole, {3, -1, 2}, rows);
  EXPECT_THAT(bad.message(), HasSubstr("id -1 is not one of its rows"));
}

TEST_P(PsClientTest, HashTableRepeatsEqualDistinctIds) {
  // Adam: a hash table counts the pushes of each row, so a row updated
  // once per push with the sum of its gradients shows.
  const HashEmbeddingSpec a = Table("ha", 5, OptimizerKind::kAdam);
  const HashEmbeddingSpec b = Table("hb", 5, OptimizerKind::kAdam);
  ASSERT_TRUE(client_->CreateHashTable(a).ok());
  ASSERT_TRUE(client_->CreateHashTable(b).ok());
  const std::vector<int64_t> ids = {int64_t{1} << 40, 17, -3, 17, 17,
                                    int64_t{1} << 40, 99, -3};
  const std::vector<float> grads = Gradients(ids.size() * 5, 0.5f);
  std::vector<int64_t> distinct;
  std::vector<float> sums;
  SumRepeats(ids, grads, 5, &distinct, &sums);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(client_->PushHash(a, ids, grads).ok());
    ASSERT_TRUE(client_->PushHash(b, distinct, sums).ok());
  }
  std::vector<float> a_rows(ids.size() * 5), b_rows(distinct.size() * 5);
  ASSERT_TRUE(client_->PullHash(a, ids, absl::MakeSpan(a_rows)).ok());
  ASSERT_TRUE(client_->PullHash(b, distinct, absl::MakeSpan(b_rows)).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    const size_t d =
        std::find(distinct.begin(), distinct.end(), ids[i]) - distinct.begin();
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ(a_rows[i * 5 + k], b_rows[d * 5 + k]) << "id " << ids[i];
    }
  }
  EXPECT_NE(a_rows[0], 0.25f);

  // Each distinct id became one row, however often it was asked for.
  std::vector<DistributedHashTableInfo> tables;
  ASSERT_TRUE(client_->List(nullptr, &tables).ok());
  ASSERT_EQ(tables.size(), 2u);
  int64_t rows = 0;
  for (int64_t n : tables[0].rows_per_task) rows += n;
  EXPECT_EQ(rows, 4);
}

// An update's global step travels with its hash-table pushes to every ps
// task they reach (PushSparseRequest.global_step), where the table ages its
// rows by it: under a ttl of 10 steps, a row last updated at step 0 is
// evicted once pushes at step 100 reach its task, and its id starts again
// from the initializer. Pushes of unknown step (-1) move each task's clock
// on by one, and the row stays.
TEST_P(PsClientTest, HashPushesCarryTheGlobalStep) {
  for (const bool with_step : {true, false}) {
    SCOPED_TRACE(with_step ? "with the global step" : "without");
    HashEmbeddingSpec table =
        Table(with_step ? "aged" : "unaged", 1, OptimizerKind::kSgd);
    table.optimizer.learning_rate = 1.0f;
    table.policy.eviction.ttl_steps = 10;
    ASSERT_TRUE(client_->CreateHashTable(table).ok());
    const auto push = [&](const std::vector<int64_t>& ids,
                          int64_t global_step) {
      const std::vector<float> grads(ids.size(), 1.0f);
      const HashTablePush item = {&table, ids, grads};
      UpdateRequest request;
      request.hash = {&item, 1};
      request.global_step = with_step ? global_step : -1;
      return client_->Update(request);
    };
    ASSERT_TRUE(push({7}, 0).ok());
    std::vector<int64_t> others(64);  // on every task
    std::iota(others.begin(), others.end(), 100);
    ASSERT_TRUE(push(others, 100).ok());
    std::vector<float> row(1);
    // Twice: a table evicts in sweeps at the end of its pulls and pushes,
    // so the first pull may still find the row.
    for (int pull = 0; pull < 2; ++pull) {
      ASSERT_TRUE(client_->PullHash(table, {7}, absl::MakeSpan(row)).ok());
    }
    EXPECT_EQ(row[0], with_step ? 0.25f : 0.25f - 1.0f);
  }
}

// Small variables (batched), a partitioned one whose parts are small, one
// whose parts are over batch_below_bytes and one split into several
// requests per part.
struct ManyVariables {
  std::vector<VariablePlacement> placements;
};

ManyVariables CreateMany(PsClient& client, absl::string_view prefix,
                         OptimizerKind optimizer) {
  ManyVariables many;
  const auto create = [&](absl::string_view name, std::vector<int64_t> shape,
                          float initial, PartitionPolicy partition) {
    absl::StatusOr<VariablePlacement> v =
        client.CreateVariable(Spec(absl::StrCat(prefix, name), std::move(shape),
                                   initial, optimizer, 0.05f),
                              partition);
    EXPECT_TRUE(v.ok()) << v.status();
    if (v.ok()) many.placements.push_back(*v);
  };
  create("scalar", {}, 0.5f, PartitionPolicy::None());
  for (int i = 0; i < 24; ++i) {  // 24 x 32 bytes: several batches per task
    create(absl::StrCat("bias", i), {8}, 0.01f * i, PartitionPolicy::None());
  }
  create("small_parts", {6, 2}, -1.0f, PartitionPolicy::FixedShards(2));
  create("medium", {100, 4}, 2.0f, PartitionPolicy::FixedShards(2));
  create("large", {300, 8}, 3.0f, PartitionPolicy::FixedShards(2));
  create("bias_last", {3}, 1.5f, PartitionPolicy::None());
  return many;
}

// Batches of parts of at most 128 bytes, requests (and batches) of at most
// 256 bytes: "large" goes in requests of 8 rows, at least 19 per part.
PsClient::Options ManyOptions() {
  PsClient::Options options;
  options.rpc_timeout = absl::Seconds(30);
  options.max_request_bytes = 256;
  options.batch_below_bytes = 128;
  options.max_requests_in_flight = 5;
  return options;
}

TEST_P(PsClientTest, ManyDenseItemsEqualPushAndPullOneByOne) {
  for (int64_t batch_below_bytes : {int64_t{128}, int64_t{0}}) {
    SCOPED_TRACE(absl::StrCat("batch_below_bytes ", batch_below_bytes));
    PsClient::Options options = ManyOptions();
    options.batch_below_bytes = batch_below_bytes;
    std::unique_ptr<PsClient> client = NewClient(options);
    ASSERT_NE(client, nullptr);
    const std::string round = absl::StrCat("b", batch_below_bytes, "_");
    // Adagrad: each push is one update, so pushes lost, doubled or merged
    // would show.
    const ManyVariables many =
        CreateMany(*client, round + "many_", OptimizerKind::kAdagrad);
    const ManyVariables one =
        CreateMany(*client, round + "one_", OptimizerKind::kAdagrad);
    ASSERT_EQ(many.placements.size(), one.placements.size());
    const size_t n = many.placements.size();
    absl::StatusOr<std::vector<ps::GetStatusResponse>> before = client->Stats();
    ASSERT_TRUE(before.ok());

    for (int step = 0; step < 2; ++step) {
      std::vector<std::vector<float>> grads(n);
      std::vector<DenseVariablePush> pushes;
      for (size_t v = 0; v < n; ++v) {
        grads[v] = Gradients(Elements(many.placements[v].spec),
                             1.0f + v + 0.5f * step);
        pushes.push_back({&many.placements[v], grads[v]});
        ASSERT_TRUE(client->Push(one.placements[v], grads[v]).ok());
      }
      absl::Status pushed = UpdateStep(*client, pushes);
      ASSERT_TRUE(pushed.ok()) << pushed;
    }

    std::vector<std::vector<float>> pulled(n);
    std::vector<DenseVariablePull> pulls;
    for (size_t v = 0; v < n; ++v) {
      pulled[v].assign(Elements(many.placements[v].spec), -7.0f);
      pulls.push_back({&many.placements[v], absl::MakeSpan(pulled[v])});
    }
    absl::Status s = ReadStep(*client, pulls);
    ASSERT_TRUE(s.ok()) << s;
    for (size_t v = 0; v < n; ++v) {
      SCOPED_TRACE(many.placements[v].spec.name);
      // A Read of many reads what Pull reads ...
      EXPECT_EQ(pulled[v], PullAll(*client, many.placements[v]));
      // ... and an Update of many did what Push did.
      EXPECT_EQ(pulled[v], PullAll(*client, one.placements[v]));
      EXPECT_NE(pulled[v][0], many.placements[v].spec.initializer.value);
    }

    absl::StatusOr<std::vector<ps::GetStatusResponse>> after = client->Stats();
    ASSERT_TRUE(after.ok());
    const int64_t batches = Requests(*after, "PullDenseBatch") +
                            Requests(*after, "PushDenseBatch") -
                            Requests(*before, "PullDenseBatch") -
                            Requests(*before, "PushDenseBatch");
    if (batch_below_bytes == 0) {
      EXPECT_EQ(batches, 0);
    } else {
      // Two Updates and a Read, each of 27 or 28 small parts (at most
      // 8 in one batch, and a batch of one goes as PullDense / PushDense).
      EXPECT_GE(batches, 3 * 4);
      EXPECT_LE(batches, 3 * 14);
    }
  }
}

TEST_P(PsClientTest, ReadOfTheSameVariableTwiceAndOfNothing) {
  std::unique_ptr<PsClient> client = NewClient(ManyOptions());
  ASSERT_NE(client, nullptr);
  const ManyVariables many = CreateMany(*client, "", OptimizerKind::kSgd);
  EXPECT_TRUE(ReadStep(*client, {}).ok());
  EXPECT_TRUE(UpdateStep(*client, {}).ok());

  const VariablePlacement& bias = many.placements[1];
  std::vector<float> first(8), second(8);
  ASSERT_TRUE(ReadStep(*client, {{&bias, absl::MakeSpan(first)},
                                 {&bias, absl::MakeSpan(second)}})
                  .ok());
  EXPECT_EQ(first, PullAll(*client, bias));
  EXPECT_EQ(second, first);
  // Pushed twice in one batch: both applied (SGD, learning rate 0.05).
  const std::vector<float> ones(8, 1.0f);
  ASSERT_TRUE(UpdateStep(*client, {{&bias, ones}, {&bias, ones}}).ok());
  const std::vector<float> now = PullAll(*client, bias);
  for (int k = 0; k < 8; ++k) {
    EXPECT_FLOAT_EQ(now[k], first[k] - 0.1f);
  }
}

TEST_P(PsClientTest, ReadAndUpdateCheckEveryItemBeforeSending) {
  std::unique_ptr<PsClient> client = NewClient(ManyOptions());
  ASSERT_NE(client, nullptr);
  const ManyVariables many = CreateMany(*client, "", OptimizerKind::kSgd);
  const VariablePlacement& scalar = many.placements[0];
  const VariablePlacement& large = many.placements[many.placements.size() - 2];
  absl::StatusOr<VariablePlacement> step = client->CreateVariable(
      VariableSpec{"global_step", DType::kInt64, {}, {}, {}});
  ASSERT_TRUE(step.ok()) << step.status();
  const std::vector<float> before = PullAll(*client, scalar);

  std::vector<float> one(1), short_buffer(Elements(large.spec) - 1);
  absl::Status s = ReadStep(*client, {{&scalar, absl::MakeSpan(one)},
                                      {&large, absl::MakeSpan(short_buffer)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("variable \"large\": the buffer has"));
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat(Elements(large.spec))));

  // Nothing is pushed when any item is wrong, even a later one.
  const std::vector<float> grad(1, 1.0f);
  s = UpdateStep(*client, {{&scalar, grad}, {&large, short_buffer}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("variable \"large\": the pushed tensor"));
  EXPECT_EQ(PullAll(*client, scalar), before);

  s = ReadStep(*client, {{&*step, absl::MakeSpan(one)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("variable \"global_step\" is int64"));
  s = UpdateStep(*client, {{&scalar, grad}, {&*step, grad}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"global_step\""));
  EXPECT_EQ(PullAll(*client, scalar), before);

  // A variable that no ps task has: the ps's NOT_FOUND, naming it.
  VariablePlacement gone = scalar;
  gone.spec.name = "gone";
  s = ReadStep(*client, {{&gone, absl::MakeSpan(one)}});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("\"gone\""));
}

TEST(PsClientOptionsTest, CountsAndSizesMustBePositive) {
  PsClient::Options options;
  options.connections_per_task = 0;
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(std::vector<std::string>{"127.0.0.1:1"}, options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("connections_per_task"));

  options = PsClient::Options();
  options.batch_below_bytes = -1;
  client = PsClient::Create(std::vector<std::string>{"127.0.0.1:1"}, options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("batch_below_bytes"));

  options = PsClient::Options();
  options.max_requests_in_flight_per_task = 0;
  client = PsClient::Create(std::vector<std::string>{"127.0.0.1:1"}, options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(),
              HasSubstr("max_requests_in_flight_per_task"));

  options = PsClient::Options();
  options.data_plane_max_request_bytes = -1;
  client = PsClient::Create(std::vector<std::string>{"127.0.0.1:1"}, options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(),
              HasSubstr("data_plane_max_request_bytes"));

  options = PsClient::Options();
  options.bundle_below_bytes = -1;
  client = PsClient::Create(std::vector<std::string>{"127.0.0.1:1"}, options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("bundle_below_bytes"));
}

// The same operations over 1 and 3 connections per ps task give the same
// values, and open that many connections to each task.
TEST(PsClientConnectionsTest, ResultsDoNotDependOnTheConnections) {
  std::vector<std::vector<std::vector<float>>> results;
  for (int connections : {1, 3}) {
    SCOPED_TRACE(absl::StrCat(connections, " connections per task"));
    absl::StatusOr<std::vector<PsProcess>> tasks = StartPsProcesses(2);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    PsClient::Options options = ManyOptions();
    options.connections_per_task = connections;
    absl::StatusOr<std::unique_ptr<PsClient>> created =
        PsClient::Create(AddressesOf(*tasks), options);
    ASSERT_TRUE(created.ok()) << created.status();
    PsClient& client = **created;
    ASSERT_TRUE(client.WaitForServers(absl::Seconds(30)).ok());

    const ManyVariables many = CreateMany(client, "", OptimizerKind::kAdagrad);
    std::vector<std::vector<float>> grads;
    std::vector<DenseVariablePush> pushes;
    for (const VariablePlacement& v : many.placements) {
      grads.push_back(Gradients(Elements(v.spec), 0.75f));
    }
    for (size_t v = 0; v < many.placements.size(); ++v) {
      pushes.push_back({&many.placements[v], grads[v]});
    }
    ASSERT_TRUE(UpdateStep(client, pushes).ok());
    const VariablePlacement& large =
        many.placements[many.placements.size() - 2];
    ASSERT_TRUE(client.Push(large, grads[many.placements.size() - 2]).ok());
    const std::vector<int64_t> ids = {299, 3, 150, 3, 0, 151, 299};
    ASSERT_TRUE(
        client.PushSparse(large, ids, Gradients(ids.size() * 8, 2.0f)).ok());
    const HashEmbeddingSpec table = Table("h", 16, OptimizerKind::kAdam);
    ASSERT_TRUE(client.CreateHashTable(table).ok());
    std::vector<int64_t> hash_ids;
    for (int i = 0; i < 200; ++i) hash_ids.push_back((i * 7919) % 150);
    ASSERT_TRUE(
        client.PushHash(table, hash_ids, Gradients(hash_ids.size() * 16, 1.0f))
            .ok());

    std::vector<std::vector<float>> values;
    for (const VariablePlacement& v : many.placements) {
      values.emplace_back(Elements(v.spec));
      ASSERT_TRUE(client.Pull(v, absl::MakeSpan(values.back())).ok());
    }
    values.emplace_back(hash_ids.size() * 16);
    ASSERT_TRUE(
        client.PullHash(table, hash_ids, absl::MakeSpan(values.back())).ok());
    results.push_back(std::move(values));

    // "large" went in at least 19 requests per part: every connection of
    // every task was used. (At least: a channel that checked the task was
    // up may still be connected.)
    for (const PsProcess& task : *tasks) {
      const int open = ConnectionsTo(task.port);
      if (open < 0) {
        std::fprintf(stderr, "cannot read /proc/net/tcp: not counted\n");
        continue;
      }
      EXPECT_GE(open, connections) << "ps task " << task.index;
    }
  }
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], results[1]);
}

}  // namespace
}  // namespace distrt
