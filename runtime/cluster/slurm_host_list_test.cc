#include "runtime/cluster/slurm_host_list.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/util/test_dir.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// Lists Slurm expands, each with what `scontrol show hostnames` printed for
// it (slurm-client 22.05); the scontrol case below checks them again live.
struct Expansion {
  const char* list;
  std::vector<std::string> hosts;
};

const std::vector<Expansion>& RecordedExpansions() {
  static const auto* expansions = new std::vector<Expansion>{
      {"node[01-04,07]", {"node01", "node02", "node03", "node04", "node07"}},
      {"a[1-2],b", {"a1", "a2", "b"}},
      {"n[008-10]", {"n008", "n009", "n010"}},
      {"n[9-011]", {"n9", "n10", "n11"}},
      {"rack[1-2]-n[1-2]", {"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
      {"n[1-2]-[3-4]", {"n1-3", "n1-4", "n2-3", "n2-4"}},
      {"host.example.com,localhost", {"host.example.com", "localhost"}},
      {"gpu[7]", {"gpu7"}},
  };
  return *expansions;
}

// Lists scontrol refuses ("Invalid hostlist").
const std::vector<const char*>& RefusedLists() {
  static const auto* lists = new std::vector<const char*>{
      "n[3-1]", "n[a-b]", "n[1,,2]", "n[01-02]x", "n[1-2", "n]x", "a,,b"};
  return *lists;
}

TEST(SlurmHostListTest, ExpandsAsSlurmDoes) {
  for (const Expansion& expansion : RecordedExpansions()) {
    absl::StatusOr<std::vector<std::string>> hosts =
        ExpandSlurmHostList(expansion.list);
    ASSERT_TRUE(hosts.ok()) << expansion.list << ": " << hosts.status();
    EXPECT_EQ(*hosts, expansion.hosts) << expansion.list;
  }
  EXPECT_THAT(*ExpandSlurmHostList(""), IsEmpty());
}

TEST(SlurmHostListTest, RefusesWhatSlurmRefusesNamingThePart) {
  for (const char* list : RefusedLists()) {
    absl::StatusOr<std::vector<std::string>> hosts = ExpandSlurmHostList(list);
    ASSERT_FALSE(hosts.ok()) << list;
    EXPECT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument);
    // The caller names the list (SlurmClusterResolver: the variable).
    EXPECT_THAT(std::string(hosts.status().message()), Not(StartsWith("Slurm")))
        << list;
  }
  EXPECT_EQ(ExpandSlurmHostList("n[3-1]").status().message(),
            "the range \"3-1\" descends");
  EXPECT_EQ(ExpandSlurmHostList("n[01-02]x").status().message(),
            "\"n[01-02]x\" has text after its last bracket");
  EXPECT_THAT(ExpandSlurmHostList("n[1-99999999]").status().message(),
              HasSubstr("more than"));
  EXPECT_THAT(ExpandSlurmHostList("a[1-2000]b[1-2000]").status().message(),
              HasSubstr("more than"));
}

// Runs `scontrol show hostnames LIST` with a configuration of its own (no
// controller is needed to expand a list); nullopt where scontrol is absent.
std::optional<std::string> Scontrol(const std::string& conf,
                                    const std::string& list) {
  if (access("/usr/bin/scontrol", X_OK) != 0) return std::nullopt;
  const std::string command =
      absl::StrCat("SLURM_CONF='", conf, "' /usr/bin/scontrol show hostnames '",
                   list, "' 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output.append(buffer, n);
  }
  pclose(pipe);
  return output;
}

TEST(SlurmHostListTest, AgreesWithScontrol) {
  TestDir dir;
  const std::string conf =
      dir.WriteFile("slurm.conf",
                    "ClusterName=hostlist\nSlurmctldHost=localhost\n"
                    "NodeName=localhost CPUs=1 State=UNKNOWN\n"
                    "PartitionName=p Nodes=localhost Default=YES\n");
  if (!Scontrol(conf, "n1").has_value()) {
    GTEST_SKIP() << "scontrol is not installed (tools/setup.sh installs "
                    "slurm-client); the recorded expansions were checked";
  }
  for (const Expansion& expansion : RecordedExpansions()) {
    const std::string printed = *Scontrol(conf, expansion.list);
    std::vector<std::string> lines =
        absl::StrSplit(printed, '\n', absl::SkipEmpty());
    EXPECT_EQ(lines, expansion.hosts) << "scontrol on " << expansion.list;
    EXPECT_EQ(*ExpandSlurmHostList(expansion.list), lines) << expansion.list;
  }
  for (const char* list : {"n[3-1]", "n[a-b]", "n[1,,2]", "n[01-02]x"}) {
    EXPECT_THAT(*Scontrol(conf, list), HasSubstr("Invalid hostlist")) << list;
    EXPECT_FALSE(ExpandSlurmHostList(list).ok()) << list;
  }
}

TEST(SlurmHostListTest, TasksPerNode) {
  EXPECT_THAT(*ExpandSlurmTasksPerNode("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(*ExpandSlurmTasksPerNode("5"), ElementsAre(5));
  EXPECT_THAT(*ExpandSlurmTasksPerNode("1,3(x2)"), ElementsAre(1, 3, 3));
  for (const char* bad : {"", "x", "2(x)", "2(3)", "0", "2(x0)", "-1", "2,,1",
                          "2(x3", "2(x99999999)"}) {
    absl::StatusOr<std::vector<int>> counts = ExpandSlurmTasksPerNode(bad);
    ASSERT_FALSE(counts.ok()) << bad;
    EXPECT_THAT(counts.status().message(),
                HasSubstr("is not a task count such as 2 or 2(x3)"))
        << bad;
  }
}

}  // namespace
}  // namespace distrt
