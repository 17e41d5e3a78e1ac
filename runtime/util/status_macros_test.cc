#include "runtime/util/status_macros.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace distrt {
namespace {

absl::Status Fails(int* calls) {
  ++*calls;
  return absl::NotFoundError("missing");
}
absl::Status Succeeds(int* calls) {
  ++*calls;
  return absl::OkStatus();
}

absl::Status TwoSteps(bool first_fails, int* calls, bool* reached_end) {
  RETURN_IF_ERROR(first_fails ? Fails(calls) : Succeeds(calls));
  RETURN_IF_ERROR(Succeeds(calls));
  *reached_end = true;
  return absl::OkStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheFirstErrorAndEvaluatesOnce) {
  int calls = 0;
  bool reached_end = false;
  absl::Status s = TwoSteps(/*first_fails=*/true, &calls, &reached_end);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "missing");
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(reached_end);

  calls = 0;
  EXPECT_TRUE(TwoSteps(/*first_fails=*/false, &calls, &reached_end).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(reached_end);
}

absl::StatusOr<std::unique_ptr<std::string>> Make(bool ok) {
  if (!ok) return absl::InvalidArgumentError("no");
  return std::make_unique<std::string>("made");
}

// Move-only values, two uses on one line's neighbours, an existing variable,
// and a StatusOr-returning caller.
absl::StatusOr<std::string> Join(bool first_ok, bool second_ok) {
  ASSIGN_OR_RETURN(std::unique_ptr<std::string> a, Make(first_ok));
  std::unique_ptr<std::string> b;
  ASSIGN_OR_RETURN(b, Make(second_ok));
  RETURN_IF_ERROR(absl::OkStatus());
  return *a + "+" + *b;
}

TEST(StatusMacrosTest, AssignOrReturnMovesTheValueOrReturnsTheStatus) {
  absl::StatusOr<std::string> joined = Join(true, true);
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(*joined, "made+made");
  EXPECT_EQ(Join(false, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Join(true, false).status().message(), "no");
}

}  // namespace
}  // namespace distrt
