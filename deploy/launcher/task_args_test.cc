#include "deploy/launcher/task_args.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt::launcher {
namespace {

using ::testing::ElementsAre;

TEST(SetsFlagTest, EveryFormAbseilAccepts) {
  EXPECT_TRUE(SetsFlag({"--log_dir=/x"}, "log_dir"));
  EXPECT_TRUE(SetsFlag({"--log_dir", "/x"}, "log_dir"));
  EXPECT_TRUE(SetsFlag({"-log_dir=/x"}, "log_dir"));
  EXPECT_TRUE(SetsFlag({"-log_dir", "/x"}, "log_dir"));
  EXPECT_TRUE(SetsFlag({"--model=mlp", "--log_dir="}, "log_dir"));
}

TEST(SetsFlagTest, OtherFlagsDoNotCount) {
  EXPECT_FALSE(SetsFlag({}, "log_dir"));
  // A longer name that starts with this one, and a value that mentions it.
  EXPECT_FALSE(SetsFlag({"--log_dir_extra=1"}, "log_dir"));
  EXPECT_FALSE(SetsFlag({"--model=--log_dir"}, "log_dir"));
  EXPECT_FALSE(SetsFlag({"log_dir"}, "log_dir"));
  EXPECT_FALSE(SetsFlag({"---log_dir=1"}, "log_dir"));
  // After a bare "--" arguments are not flags.
  EXPECT_FALSE(SetsFlag({"--", "--log_dir=/x"}, "log_dir"));
}

TEST(WithDefaultFlagsTest, AddsOnlyWhatIsNotSet) {
  EXPECT_THAT(
      WithDefaultFlags({"--model=logreg", "--log_dir", "/mine"},
                       {{"checkpoint_dir", "/job/ckpt"},
                        {"log_dir", "/job/summaries"},
                        {"metrics_out", "/job/m.json"}}),
      ElementsAre("--model=logreg", "--log_dir", "/mine",
                  "--checkpoint_dir=/job/ckpt", "--metrics_out=/job/m.json"));
}

TEST(WithDefaultFlagsTest, DefaultsStayBeforeABareDoubleDash) {
  EXPECT_THAT(WithDefaultFlags({"--model=mlp", "--", "positional"},
                               {{"log_dir", "/s"}}),
              ElementsAre("--model=mlp", "--log_dir=/s", "--", "positional"));
}

}  // namespace
}  // namespace distrt::launcher

namespace distrt::launcher {
namespace {

TEST(FlagValueTest, EveryFormAndTheLastOneWins) {
  EXPECT_EQ(FlagValue({"--checkpoint_dir=/a"}, "checkpoint_dir"), "/a");
  EXPECT_EQ(FlagValue({"-checkpoint_dir", "/b"}, "checkpoint_dir"), "/b");
  EXPECT_EQ(FlagValue({"--checkpoint_dir=/a", "--checkpoint_dir", "/c"},
                      "checkpoint_dir"),
            "/c");
  EXPECT_EQ(FlagValue({"--checkpoint_dir="}, "checkpoint_dir"), "");
}

TEST(FlagValueTest, UnsetIsNullopt) {
  EXPECT_EQ(FlagValue({}, "checkpoint_dir"), std::nullopt);
  EXPECT_EQ(FlagValue({"--checkpoint_dir_x=/a"}, "checkpoint_dir"),
            std::nullopt);
  EXPECT_EQ(FlagValue({"--", "--checkpoint_dir=/a"}, "checkpoint_dir"),
            std::nullopt);
}

}  // namespace
}  // namespace distrt::launcher
