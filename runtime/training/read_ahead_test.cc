// ReadAhead on its own: a read is taken only for the ids it read and only
// when it succeeded; a read not taken is counted as dropped.

#include "runtime/training/read_ahead.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace distrt {
namespace {

// Slices for variables with these ids.
std::vector<VariableSlice> Slices(std::vector<std::vector<int64_t>> ids) {
  std::vector<VariableSlice> values(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) values[i].ids = ids[i];
  return values;
}

// A read that writes each slice's first id + 0.5 as its one dense value.
absl::Status FakeRead(std::vector<VariableSlice>& values) {
  for (VariableSlice& v : values) {
    v.dense = {v.ids.empty() ? 0.0f : static_cast<float>(v.ids[0]) + 0.5f};
  }
  return absl::OkStatus();
}

TEST(ReadAheadTest, GivesWhatItReadForTheSameIds) {
  ReadAhead read_ahead(2);
  read_ahead.Start(1, Slices({{7, 8}, {}}), FakeRead);
  std::optional<std::vector<VariableSlice>> values =
      read_ahead.Take(1, {{7, 8}, {}});
  ASSERT_TRUE(values.has_value());
  ASSERT_EQ(values->size(), 2u);
  EXPECT_EQ((*values)[0].dense, std::vector<float>{7.5f});
  EXPECT_EQ((*values)[0].ids, (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(read_ahead.num_taken(), 1);
  EXPECT_EQ(read_ahead.num_dropped(), 0);
  // Taken once: nothing is left for the next step.
  EXPECT_FALSE(read_ahead.Take(1, {{7, 8}, {}}).has_value());
  // Replica 0 never started one.
  EXPECT_FALSE(read_ahead.Take(0, {{7, 8}, {}}).has_value());
  EXPECT_EQ(read_ahead.num_dropped(), 0);
}

// Values read elsewhere (with the step's push) are Put: taken as a read's
// would be. A Put over a result not taken, or over a read still under way
// (waited for), drops that one; a failed read before does not fail it.
TEST(ReadAheadTest, TakesWhatWasPut) {
  ReadAhead read_ahead(1);
  std::vector<VariableSlice> put = Slices({{3}});
  put[0].dense = {9.0f};
  read_ahead.Put(0, put);
  std::optional<std::vector<VariableSlice>> values = read_ahead.Take(0, {{3}});
  ASSERT_TRUE(values.has_value());
  EXPECT_EQ((*values)[0].dense, std::vector<float>{9.0f});

  read_ahead.Start(0, Slices({{4}}), [](std::vector<VariableSlice>&) {
    return absl::UnavailableError("ps task 0 went away");
  });
  read_ahead.Put(0, Slices({{5}}));
  read_ahead.Put(0, put);
  values = read_ahead.Take(0, {{3}});
  ASSERT_TRUE(values.has_value());
  EXPECT_EQ((*values)[0].dense, std::vector<float>{9.0f});
  EXPECT_EQ(read_ahead.num_taken(), 2);
  EXPECT_EQ(read_ahead.num_dropped(), 2);
}

TEST(ReadAheadTest, DropsAReadOfOtherIds) {
  ReadAhead read_ahead(1);
  read_ahead.Start(0, Slices({{1, 2}}), FakeRead);
  EXPECT_FALSE(read_ahead.Take(0, {{1, 3}}).has_value());
  read_ahead.Start(0, Slices({{1, 2}}), FakeRead);
  EXPECT_FALSE(read_ahead.Take(0, {{1, 2}, {}}).has_value());  // count
  EXPECT_EQ(read_ahead.num_taken(), 0);
  EXPECT_EQ(read_ahead.num_dropped(), 2);
}

TEST(ReadAheadTest, DropsAFailedRead) {
  ReadAhead read_ahead(1);
  read_ahead.Start(0, Slices({{4}}), [](std::vector<VariableSlice>&) {
    return absl::UnavailableError("ps task 0 went away");
  });
  EXPECT_FALSE(read_ahead.Take(0, {{4}}).has_value());
  EXPECT_EQ(read_ahead.num_dropped(), 1);
}

TEST(ReadAheadTest, ANewStartDropsTheReadNotTaken) {
  ReadAhead read_ahead(1);
  read_ahead.Start(0, Slices({{1}}), FakeRead);
  read_ahead.Start(0, Slices({{2}}), FakeRead);
  std::optional<std::vector<VariableSlice>> values = read_ahead.Take(0, {{2}});
  ASSERT_TRUE(values.has_value());
  EXPECT_EQ((*values)[0].dense, std::vector<float>{2.5f});
  EXPECT_EQ(read_ahead.num_dropped(), 1);
  EXPECT_EQ(read_ahead.num_taken(), 1);
}

TEST(ReadAheadTest, WaitsForAReadNotTakenWhenDestroyed) {
  bool finished = false;
  {
    ReadAhead read_ahead(1);
    read_ahead.Start(0, Slices({{1}}), [&](std::vector<VariableSlice>&) {
      finished = true;
      return absl::OkStatus();
    });
  }
  EXPECT_TRUE(finished);
}

}  // namespace
}  // namespace distrt
