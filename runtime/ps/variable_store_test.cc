#include "runtime/ps/variable_store.h"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;

VariableSpec Spec(const std::string& name, std::vector<int64_t> shape,
                  float learning_rate = 1.0f) {
  VariableSpec spec;
  spec.name = name;
  spec.shape = std::move(shape);
  spec.optimizer.learning_rate = learning_rate;
  return spec;
}

TEST(VariableStoreTest, CreateIsIdempotentForTheSameSpec) {
  VariableStore store;
  VariableSpec spec = Spec("w", {4, 3});
  absl::StatusOr<VariableInfo> first = store.Create(spec, {0, 4});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->bytes, 4 * 3 * 4);
  ASSERT_TRUE(store.PushRows("w", {0, 4}, std::vector<float>(12, 1.0f)).ok());
  absl::StatusOr<VariableInfo> again = store.Create(spec, {0, 4});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->step, 1);  // the existing variable, not a new one
  std::vector<float> values(12);
  ASSERT_TRUE(store.PullRows("w", {0, 4}, absl::MakeSpan(values)).ok());
  EXPECT_EQ(values[0], -1.0f);
}

TEST(VariableStoreTest, CreateWithADifferentSpecIsAnError) {
  VariableStore store;
  ASSERT_TRUE(store.Create(Spec("w", {10, 4}), {0, 10}).ok());
  absl::StatusOr<VariableInfo> other =
      store.Create(Spec("w", {10, 8}), {0, 10});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(other.status().message(),
            "variable \"w\" already exists with a different spec: shape [10, "
            "4] vs [10, 8]");
  VariableSpec adam = Spec("w", {10, 4});
  adam.optimizer.kind = OptimizerKind::kAdam;
  EXPECT_EQ(store.Create(adam, {0, 5}).status().message(),
            "variable \"w\" already exists with a different spec: optimizer "
            "sgd vs adam, rows [0, 10) vs [0, 5)");
}

TEST(VariableStoreTest, BadSpecsAreRefusedBeforeAllocating) {
  VariableStore store({/*max_bytes=*/1 << 20});
  EXPECT_EQ(store.Create(Spec("neg", {-1, 4}), {0, 0}).status().message(),
            "variable \"neg\": shape [-1, 4] has a negative dimension");
  EXPECT_EQ(
      store.Create(Spec("huge", {int64_t{1} << 30, int64_t{1} << 20}), {0, 1})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  absl::StatusOr<VariableInfo> big =
      store.Create(Spec("big", {1024, 1024}), {0, 1024});
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store.Create(Spec("w", {4}), {2, 6}).status().message(),
            "variable \"w\": rows [2, 6) are not within the rows held here "
            "[0, 4)");
  EXPECT_EQ(store.TotalBytes(), 0);
  EXPECT_TRUE(store.List().empty());
}

TEST(VariableStoreTest, PartitionsStartWithTheWholeVariablesValues) {
  VariableSpec spec = Spec("emb", {10, 3});
  spec.initializer.kind = InitializerSpec::Kind::kTruncatedNormal;
  spec.initializer.seed = 11;
  VariableStore whole, part;
  ASSERT_TRUE(whole.Create(spec, {0, 10}).ok());
  ASSERT_TRUE(part.Create(spec, {6, 10}).ok());
  std::vector<float> a(12), b(12);
  ASSERT_TRUE(whole.PullRows("emb", {6, 10}, absl::MakeSpan(a)).ok());
  ASSERT_TRUE(part.PullRows("emb", {6, 10}, absl::MakeSpan(b)).ok());
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[1]);
}

TEST(VariableStoreTest, DenseErrorsNameTheVariableAndSizes) {
  VariableStore store;
  ASSERT_TRUE(store.Create(Spec("w", {4, 3}), {0, 4}).ok());
  std::vector<float> five(5);
  EXPECT_EQ(store.PullRows("w", {0, 2}, absl::MakeSpan(five)).message(),
            "variable \"w\": the pull buffer has 5 values, expected 6 (row "
            "width 3)");
  EXPECT_EQ(store.PushRows("w", {3, 5}, std::vector<float>(6)).message(),
            "variable \"w\": rows [3, 5) are not within the rows held here "
            "[0, 4)");
  EXPECT_EQ(store.PushRows("nope", {0, 1}, std::vector<float>(3)).code(),
            absl::StatusCode::kNotFound);
  std::vector<int64_t> ints(3);
  EXPECT_EQ(store.PullInt64("w", {0, 1}, absl::MakeSpan(ints)).message(),
            "variable \"w\" is float32, not int64");
}

TEST(VariableStoreTest, RowRangePushAppliesOnlyThere) {
  VariableStore store;
  ASSERT_TRUE(store.Create(Spec("w", {3, 2}, 0.5f), {0, 3}).ok());
  ASSERT_TRUE(store.PushRows("w", {1, 2}, {2.0f, -4.0f}).ok());
  std::vector<float> values(6);
  ASSERT_TRUE(store.PullRows("w", {0, 3}, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ElementsAre(0, 0, -1, 2, 0, 0));
}

// A gradient pushed as bytes in pieces of any length and alignment (as
// received) updates exactly as the same gradient pushed as floats, for
// optimizers with and without slots.
TEST(VariableStoreTest, PushInPiecesEqualsPushOfTheWholeGradient) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    VariableSpec spec = Spec("w", {5000, 3}, 0.1f);  // over one 4096 stage
    spec.optimizer.kind = kind;
    VariableStore whole;
    VariableStore pieces;
    ASSERT_TRUE(whole.Create(spec, {0, 5000}).ok());
    ASSERT_TRUE(pieces.Create(spec, {0, 5000}).ok());
    std::vector<float> grad(4000 * 3);
    for (size_t i = 0; i < grad.size(); ++i)
      grad[i] = 0.001f * (i % 97) - 0.03f;
    // One byte of padding first, so that the gradient's bytes are not
    // aligned for floats; pieces of 1 to 4999 bytes.
    std::string bytes(1, '\0');
    bytes.append(reinterpret_cast<const char*>(grad.data()),
                 grad.size() * sizeof(float));
    std::vector<absl::Span<const char>> cut;
    size_t at = 1;
    for (size_t size = 1; at < bytes.size(); size = size * 7 % 4999 + 1) {
      const size_t n = std::min(size, bytes.size() - at);
      cut.emplace_back(bytes.data() + at, n);
      at += n;
    }
    for (int step = 0; step < 2; ++step) {
      ASSERT_TRUE(whole.PushRows("w", {1000, 5000}, grad).ok());
      ASSERT_TRUE(pieces.PushRows("w", {1000, 5000}, cut).ok());
    }
    std::vector<float> want(5000 * 3);
    std::vector<float> got(5000 * 3);
    ASSERT_TRUE(whole.PullRows("w", {0, 5000}, absl::MakeSpan(want)).ok());
    ASSERT_TRUE(pieces.PullRows("w", {0, 5000}, absl::MakeSpan(got)).ok());
    EXPECT_EQ(got, want);
    EXPECT_NE(want[3000 * 3 + 1], 0.0f);  // the push did something
  }
}

TEST(VariableStoreTest, APushInPiecesOfTheWrongSizeChangesNothing) {
  VariableStore store;
  ASSERT_TRUE(store.Create(Spec("w", {2, 2}), {0, 2}).ok());
  const std::string bytes(15, '\1');
  const std::vector<absl::Span<const char>> odd = {{bytes.data(), 15}};
  EXPECT_EQ(store.PushRows("w", {0, 2}, odd).message(),
            "the gradient of variable \"w\" has 15 bytes, not a whole number "
            "of float32 elements");
  const std::vector<absl::Span<const char>> short_by_one = {{bytes.data(), 12}};
  EXPECT_EQ(store.PushRows("w", {0, 2}, short_by_one).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> values(4);
  ASSERT_TRUE(store.PullRows("w", {0, 2}, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ElementsAre(0, 0, 0, 0));
}

TEST(VariableStoreTest, SparsePushSumsRepeatedIdsBeforeApplying) {
  // With Adagrad, applying 1 then 2 differs from applying 3 once.
  VariableSpec spec = Spec("emb", {5, 2}, 0.1f);
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  VariableStore store, reference;
  ASSERT_TRUE(store.Create(spec, {0, 5}).ok());
  ASSERT_TRUE(reference.Create(spec, {0, 5}).ok());
  ASSERT_TRUE(
      store.PushSparse("emb", {3, 1, 3}, {1.0f, 1.0f, 0.5f, 0.5f, 2.0f, 2.0f})
          .ok());
  ASSERT_TRUE(reference.PushRows("emb", {3, 4}, {3.0f, 3.0f}).ok());
  ASSERT_TRUE(reference.PushRows("emb", {1, 2}, {0.5f, 0.5f}).ok());
  std::vector<float> got(10), want(10);
  ASSERT_TRUE(store.PullRows("emb", {0, 5}, absl::MakeSpan(got)).ok());
  ASSERT_TRUE(reference.PullRows("emb", {0, 5}, absl::MakeSpan(want)).ok());
  EXPECT_EQ(got, want);

  std::vector<float> rows(4);
  ASSERT_TRUE(store.PullSparse("emb", {3, 0}, absl::MakeSpan(rows)).ok());
  EXPECT_EQ(rows[0], want[6]);
  EXPECT_EQ(rows[2], 0.0f);
  EXPECT_EQ(store.PullSparse("emb", {5}, absl::MakeSpan(rows)).message(),
            "variable \"emb\": row id 5 is not within the rows held here "
            "[0, 5)");
}

// An id outside the rows a task holds, among held ones, on either side:
// the error names the first such id, and a push with one changes nothing.
TEST(VariableStoreTest, SparseIdsOutsideTheHeldRowsAreNamed) {
  VariableSpec spec = Spec("emb", {10, 1}, 0.1f);
  VariableStore store;
  ASSERT_TRUE(store.Create(spec, {4, 8}).ok());
  std::vector<float> rows(4);
  EXPECT_EQ(
      store.PullSparse("emb", {5, 7, 3, 9}, absl::MakeSpan(rows)).message(),
      "variable \"emb\": row id 3 is not within the rows held here [4, 8)");
  EXPECT_EQ(store.PushSparse("emb", {4, 8}, {1.0f, 1.0f}).message(),
            "variable \"emb\": row id 8 is not within the rows held here "
            "[4, 8)");
  std::vector<float> held(4);
  ASSERT_TRUE(store.PullRows("emb", {4, 8}, absl::MakeSpan(held)).ok());
  EXPECT_EQ(held, std::vector<float>(4, 0.0f));
  EXPECT_TRUE(
      store.PullSparse("emb", {4, 7}, absl::MakeSpan(rows).first(2)).ok());
}

// Ids in increasing order (what PsClient sends) take the path without
// summing; the same rows in another order update the same way.
TEST(VariableStoreTest, SparsePushInOrderOrNotUpdatesAlike) {
  VariableSpec spec = Spec("emb", {40, 2}, 0.1f);
  spec.optimizer.kind = OptimizerKind::kAdam;
  VariableStore in_order, shuffled;
  ASSERT_TRUE(in_order.Create(spec, {0, 40}).ok());
  ASSERT_TRUE(shuffled.Create(spec, {0, 40}).ok());
  std::vector<int64_t> ids;
  std::vector<float> grads;
  for (int64_t id = 1; id < 40; id += 3) {
    ids.push_back(id);
    grads.insert(grads.end(), {0.5f * id, -1.0f});
  }
  std::vector<int64_t> reversed(ids.rbegin(), ids.rend());
  std::vector<float> reversed_grads;
  for (size_t i = ids.size(); i-- > 0;) {
    reversed_grads.insert(reversed_grads.end(), grads.begin() + 2 * i,
                          grads.begin() + 2 * i + 2);
  }
  std::vector<float> initial(80);
  ASSERT_TRUE(in_order.PullRows("emb", {0, 40}, absl::MakeSpan(initial)).ok());
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(in_order.PushSparse("emb", ids, grads).ok());
    ASSERT_TRUE(shuffled.PushSparse("emb", reversed, reversed_grads).ok());
  }
  std::vector<float> a(80), b(80);
  ASSERT_TRUE(in_order.PullRows("emb", {0, 40}, absl::MakeSpan(a)).ok());
  ASSERT_TRUE(shuffled.PullRows("emb", {0, 40}, absl::MakeSpan(b)).ok());
  EXPECT_EQ(a, b);
  EXPECT_NE(a[2 * 1], initial[2 * 1]);  // row 1 moved
  EXPECT_EQ(a[2 * 2], initial[2 * 2]);  // row 2 was not pushed
}

// A sender that made its ids distinct says so (SparseIds::kDistinct, what
// PsClient sends) and skips the summing pass: shuffled distinct ids update
// as they do without the claim. Should an id repeat all the same, its rows
// are applied one after another (for SGD, the same as their sum).
TEST(VariableStoreTest, SparsePushOfIdsSaidToBeDistinct) {
  VariableSpec spec = Spec("emb", {40, 2}, 0.1f);
  spec.optimizer.kind = OptimizerKind::kAdam;
  VariableStore said, unsaid;
  ASSERT_TRUE(said.Create(spec, {0, 40}).ok());
  ASSERT_TRUE(unsaid.Create(spec, {0, 40}).ok());
  const std::vector<int64_t> ids = {31, 4, 17, 0, 39, 8, 22, 13, 5, 36};
  std::vector<float> grads;
  for (int64_t id : ids) grads.insert(grads.end(), {0.25f * id, -1.0f});
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(said.PushSparse("emb", ids, grads, SparseIds::kDistinct).ok());
    ASSERT_TRUE(unsaid.PushSparse("emb", ids, grads).ok());
  }
  std::vector<float> a(80), b(80);
  ASSERT_TRUE(said.PullRows("emb", {0, 40}, absl::MakeSpan(a)).ok());
  ASSERT_TRUE(unsaid.PullRows("emb", {0, 40}, absl::MakeSpan(b)).ok());
  EXPECT_EQ(a, b);

  VariableStore sgd;
  ASSERT_TRUE(sgd.Create(Spec("w", {4, 1}, 0.5f), {0, 4}).ok());
  ASSERT_TRUE(
      sgd.PushSparse("w", {2, 1, 2}, {1.0f, 4.0f, 3.0f}, SparseIds::kDistinct)
          .ok());
  std::vector<float> values(4);
  ASSERT_TRUE(sgd.PullRows("w", {0, 4}, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ElementsAre(0.0f, -2.0f, -2.0f, 0.0f));
}

// TF's assign / assign_add on a ps variable: rows written without the
// optimizer, whose step stays where the pushes left it.
TEST(VariableStoreTest, AssignAndAddWriteRowsWithoutTheOptimizer) {
  VariableStore store;
  ASSERT_TRUE(store.Create(Spec("w", {3, 2}, 0.5f), {1, 3}).ok());
  ASSERT_TRUE(store.PushRows("w", {1, 2}, {2.0f, -4.0f}).ok());
  ASSERT_TRUE(store.AssignRows("w", {2, 3}, {7.0f, 8.0f}).ok());
  ASSERT_TRUE(store.AddRows("w", {1, 3}, {1.0f, 1.0f, 0.5f, -8.0f}).ok());
  std::vector<float> values(4);
  ASSERT_TRUE(store.PullRows("w", {1, 3}, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ElementsAre(0, 3, 7.5f, 0));
  EXPECT_EQ(store.Snapshot("w")->step, 1);
  // Rows not held, the wrong size or dtype: refused, nothing changed.
  EXPECT_EQ(store.AssignRows("w", {0, 1}, {1.0f, 1.0f}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.AddRows("w", {1, 2}, {1.0f}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.AssignInt64("w", {1, 2}, {1, 2}).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(store.PullRows("w", {1, 3}, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ElementsAre(0, 3, 7.5f, 0));

  VariableSpec step;
  step.name = "global_step";
  step.dtype = DType::kInt64;
  ASSERT_TRUE(store.Create(step, {0, 1}).ok());
  ASSERT_TRUE(store.AssignInt64("global_step", {0, 1}, {41}).ok());
  ASSERT_TRUE(store.AddInt64("global_step", {0, 1}, {1}).ok());
  std::vector<int64_t> count(1);
  ASSERT_TRUE(
      store.PullInt64("global_step", {0, 1}, absl::MakeSpan(count)).ok());
  EXPECT_EQ(count[0], 42);
}

TEST(VariableStoreTest, Int64VariablesAdd) {
  VariableStore store;
  VariableSpec step;
  step.name = "global_step";
  step.dtype = DType::kInt64;
  ASSERT_TRUE(store.Create(step, {0, 1}).ok());
  ASSERT_TRUE(store.AddInt64("global_step", {0, 1}, {5}).ok());
  ASSERT_TRUE(store.AddInt64("global_step", {0, 1}, {2}).ok());
  std::vector<int64_t> value(1);
  ASSERT_TRUE(
      store.PullInt64("global_step", {0, 1}, absl::MakeSpan(value)).ok());
  EXPECT_EQ(value[0], 7);
  EXPECT_EQ(store.PushRows("global_step", {0, 1}, {1.0f}).code(),
            absl::StatusCode::kInvalidArgument);
}

// An int64 vector variable of `size` elements.
VariableSpec Int64Counts(int64_t size) {
  VariableSpec counts;
  counts.name = "counts";
  counts.dtype = DType::kInt64;
  counts.shape = {size};
  return counts;
}

TEST(VariableStoreTest, AnInt64AddCanReturnTheValuesItLeft) {
  VariableStore store;
  ASSERT_TRUE(store.Create(Int64Counts(3), {0, 3}).ok());
  ASSERT_TRUE(store.AssignInt64("counts", {0, 3}, {10, 20, 30}).ok());
  std::vector<int64_t> after(2);
  ASSERT_TRUE(
      store.AddInt64("counts", {1, 3}, {1, 2}, absl::MakeSpan(after)).ok());
  EXPECT_EQ(after, (std::vector<int64_t>{21, 32}));
  // A buffer of another size is refused before anything is added.
  std::vector<int64_t> short_buffer(1);
  absl::Status s =
      store.AddInt64("counts", {1, 3}, {1, 2}, absl::MakeSpan(short_buffer));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("\"counts\""));
  std::vector<int64_t> value(3);
  ASSERT_TRUE(store.PullInt64("counts", {0, 3}, absl::MakeSpan(value)).ok());
  EXPECT_EQ(value, (std::vector<int64_t>{10, 21, 32}));
}

TEST(VariableStoreTest, AnInt64IncrementThatOverflowsChangesNothing) {
  VariableStore store;
  ASSERT_TRUE(store.Create(Int64Counts(2), {0, 2}).ok());
  const int64_t big = int64_t{1} << 62;
  ASSERT_TRUE(store.AddInt64("counts", {0, 2}, {1, big}).ok());
  absl::Status s = store.AddInt64("counts", {0, 2}, {1, big});
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("variable \"counts\" element 1: "));
  std::vector<int64_t> value(2);
  ASSERT_TRUE(store.PullInt64("counts", {0, 2}, absl::MakeSpan(value)).ok());
  EXPECT_EQ(value, (std::vector<int64_t>{1, big}));
}

TEST(VariableStoreTest, ConcurrentPushesAreNeverLost) {
  constexpr int kThreads = 8;
  constexpr int kPushes = 1000;
  VariableStore store;
  ASSERT_TRUE(store.Create(Spec("w", {16, 4}), {0, 16}).ok());
  ASSERT_TRUE(store.Create(Spec("emb", {100, 4}), {0, 100}).ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      const std::vector<float> minus_one(64, -1.0f);
      const std::vector<float> row(8, -1.0f);
      for (int i = 0; i < kPushes; ++i) {
        ASSERT_TRUE(store.PushRows("w", {0, 16}, minus_one).ok());
        // Every thread hits row 7; each also hits a row of its own.
        ASSERT_TRUE(store.PushSparse("emb", {7, 20 + t}, row).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<float> w(64), emb(400);
  ASSERT_TRUE(store.PullRows("w", {0, 16}, absl::MakeSpan(w)).ok());
  ASSERT_TRUE(store.PullRows("emb", {0, 100}, absl::MakeSpan(emb)).ok());
  for (float v : w) ASSERT_EQ(v, kThreads * kPushes);
  EXPECT_EQ(emb[7 * 4], kThreads * kPushes);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(emb[(20 + t) * 4], kPushes);
  EXPECT_EQ(store.Lookup("w")->step, kThreads * kPushes);
}

TEST(VariableStoreTest, SnapshotAndReplaceCarryValuesSlotsAndStep) {
  VariableSpec spec = Spec("w", {6, 2}, 0.1f);
  spec.optimizer.kind = OptimizerKind::kAdam;
  VariableStore store, copy;
  ASSERT_TRUE(store.Create(spec, {2, 5}).ok());
  ASSERT_TRUE(copy.Create(spec, {2, 5}).ok());
  ASSERT_TRUE(store.PushRows("w", {2, 5}, {1, 2, 3, 4, 5, 6}).ok());
  ASSERT_TRUE(store.PushSparse("w", {3}, {-1, 1}).ok());

  absl::StatusOr<VariableState> state = store.Snapshot("w");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->step, 2);
  EXPECT_EQ(state->values.size(), 6u);
  EXPECT_TRUE(state->ints.empty());
  ASSERT_EQ(state->slots.size(), 2u);  // Adam's m and v
  EXPECT_NE(state->slots[0], std::vector<float>(6, 0.0f));
  ASSERT_TRUE(copy.Replace("w", *state).ok());
  EXPECT_EQ(copy.Lookup("w")->step, 2);

  // Same state, same next update: the slots and step came along (Adam's
  // update depends on both).
  const std::vector<float> grad = {0.5f, -2, 3, 0, 1, 1};
  ASSERT_TRUE(store.PushRows("w", {2, 5}, grad).ok());
  ASSERT_TRUE(copy.PushRows("w", {2, 5}, grad).ok());
  std::vector<float> a(6), b(6);
  ASSERT_TRUE(store.PullRows("w", {2, 5}, absl::MakeSpan(a)).ok());
  ASSERT_TRUE(copy.PullRows("w", {2, 5}, absl::MakeSpan(b)).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(store.Snapshot("w")->slots, copy.Snapshot("w")->slots);
}

TEST(VariableStoreTest, SnapshotAndReplaceInt64) {
  VariableStore store;
  VariableSpec step;
  step.name = "global_step";
  step.dtype = DType::kInt64;
  ASSERT_TRUE(store.Create(step, {0, 1}).ok());
  ASSERT_TRUE(store.Replace("global_step", {3, {}, {41}, {}}).ok());
  ASSERT_TRUE(store.AddInt64("global_step", {0, 1}, {1}).ok());
  absl::StatusOr<VariableState> state = store.Snapshot("global_step");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_THAT(state->ints, ElementsAre(42));
  EXPECT_EQ(store.Replace("global_step", {0, {}, {1}, {{1.0f}}}).message(),
            "variable \"global_step\": the replacement has 1 optimizer slots, "
            "expected 0 (int64 variables have none)");
  EXPECT_EQ(state->step, 4);
  EXPECT_TRUE(state->values.empty());
  EXPECT_TRUE(state->slots.empty());
}

TEST(VariableStoreTest, ReplaceChecksSizesAndLeavesTheVariableAlone) {
  VariableSpec spec = Spec("w", {4, 3});
  spec.optimizer.kind = OptimizerKind::kMomentum;
  VariableStore store;
  ASSERT_TRUE(store.Create(spec, {0, 2}).ok());
  const std::vector<float> six(6, 1.0f);
  EXPECT_EQ(store.Replace("w", {1, std::vector<float>(5), {}, {six}}).message(),
            "variable \"w\": the replacement has 5 values, expected 6 (row "
            "width 3)");
  EXPECT_EQ(store.Replace("w", {1, six, {}, {}}).message(),
            "variable \"w\": the replacement has 0 optimizer slots, expected 1 "
            "(momentum)");
  EXPECT_EQ(
      store.Replace("w", {1, six, {}, {std::vector<float>(12)}}).message(),
      "variable \"w\": the replacement's slot \"momentum\" has 12 "
      "values, expected 6 (row width 3)");
  EXPECT_EQ(store.Replace("w", {1, six, {7}, {six}}).message(),
            "variable \"w\": the replacement's int64 part has 1 values, "
            "expected 0 (row width 3)");
  EXPECT_EQ(store.Replace("w", {-1, six, {}, {six}}).message(),
            "variable \"w\": step -1 is negative");
  EXPECT_EQ(store.Replace("nope", {}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Snapshot("nope").status().code(),
            absl::StatusCode::kNotFound);
  absl::StatusOr<VariableState> state = store.Snapshot("w");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->step, 0);
  EXPECT_EQ(state->values, std::vector<float>(6, 0.0f));
}

}  // namespace
}  // namespace distrt
