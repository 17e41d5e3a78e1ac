#include "runtime/cluster/slurm_cluster_resolver.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cluster/task_role.h"

namespace distrt {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using Environment = std::map<std::string, std::string>;

EnvironmentLookup Lookup(Environment env) {
  return [env = std::move(env)](
             absl::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

// The step of `srun -n 5` over node[01-02], three tasks on node01.
Environment Step(int procid) {
  return {{"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_STEP_NUM_TASKS", "5"},
          {"SLURM_STEP_NODELIST", "node[01-02]"},
          {"SLURM_STEP_TASKS_PER_NODE", "3,2"}};
}

SlurmClusterOptions PsAndWorkers() {
  SlurmClusterOptions options;
  options.jobs = *ParseSlurmJobs("worker:3,ps:2");
  options.port_base = 9000;
  return options;
}

TEST(SlurmClusterResolverTest, PlacesJobsInNameOrderOverHostsBlockByBlock) {
  // Ranks 0-1 are ps (first by name), 2-4 workers; ports count up per host.
  const SlurmClusterResolver resolver(PsAndWorkers(), Lookup(Step(3)));
  absl::StatusOr<TfConfig> config = resolver.Resolve();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(*config->cluster.TaskAddress("ps", 0), "node01:9000");
  EXPECT_EQ(*config->cluster.TaskAddress("ps", 1), "node01:9001");
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 0), "node01:9002");
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 1), "node02:9000");
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 2), "node02:9001");
  ASSERT_TRUE(config->task.has_value());
  EXPECT_EQ(*config->task, (TaskId{"worker", 1}));
  // No chief job: the first worker is the chief, as TF's rules have it.
  EXPECT_FALSE(ResolveTaskRole(*config).is_chief);
  const SlurmClusterResolver first_worker(PsAndWorkers(), Lookup(Step(2)));
  EXPECT_TRUE(ResolveTaskRole(*first_worker.Resolve()).is_chief);
}

TEST(SlurmClusterResolverTest, EveryTaskAWorkerByDefaultAtTfsPortBase) {
  const SlurmClusterResolver resolver({}, Lookup(Step(0)));
  absl::StatusOr<TfConfig> config = resolver.Resolve();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster.NumTasks("worker"), 5);
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 0), "node01:8888");
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 4), "node02:8889");
}

TEST(SlurmClusterResolverTest, ChiefAndEvaluatorJobs) {
  SlurmClusterOptions options;
  options.jobs = *ParseSlurmJobs("chief:1,evaluator:1,ps:1,worker:2");
  // Rank 1 is the evaluator (chief < evaluator < ps < worker), outside the
  // cluster as in TF_CONFIG.
  absl::StatusOr<TfConfig> evaluator =
      SlurmClusterResolver(options, Lookup(Step(1))).Resolve();
  ASSERT_TRUE(evaluator.ok()) << evaluator.status();
  EXPECT_EQ(*evaluator->task, (TaskId{"evaluator", 0}));
  EXPECT_FALSE(evaluator->cluster.HasJob("evaluator"));
  EXPECT_EQ(evaluator->cluster.NumTasks(), 4);
  absl::StatusOr<TfConfig> chief =
      SlurmClusterResolver(options, Lookup(Step(0))).Resolve();
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_TRUE(ResolveTaskRole(*chief).is_chief);
  EXPECT_EQ(*chief->cluster.TaskAddress("worker", 1), "node02:8889");
}

// Slurm numbers a block distribution's ranks in the step's node order,
// node9 before node10 (a sort by name would put node10 first, and rank 0's
// address on the wrong host).
TEST(SlurmClusterResolverTest, HostsTakenInTheStepsOrder) {
  Environment env = Step(0);
  env["SLURM_STEP_NODELIST"] = "node[9-10]";
  env["SLURM_STEP_TASKS_PER_NODE"] = "1,4";
  env["SLURMD_NODENAME"] = "node9";
  env["SLURM_LOCALID"] = "0";
  absl::StatusOr<TfConfig> config =
      SlurmClusterResolver({}, Lookup(env)).Resolve();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 0), "node9:8888");
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 1), "node10:8888");
  EXPECT_EQ(*config->cluster.TaskAddress("worker", 4), "node10:8891");
}

TEST(SlurmClusterResolverTest, InSlurmStepNeedsTheStepVariables) {
  EXPECT_TRUE(SlurmClusterResolver::InSlurmStep(Lookup(Step(0))));
  Environment batch_script = Step(0);
  batch_script.erase("SLURM_STEP_NODELIST");
  EXPECT_FALSE(SlurmClusterResolver::InSlurmStep(Lookup(batch_script)));
  EXPECT_FALSE(SlurmClusterResolver::InSlurmStep(Lookup({})));
}

void ExpectRefused(const Environment& env, const SlurmClusterOptions& options,
                   absl::string_view message) {
  absl::StatusOr<TfConfig> config =
      SlurmClusterResolver(options, Lookup(env)).Resolve();
  ASSERT_FALSE(config.ok()) << message;
  EXPECT_THAT(config.status().message(), HasSubstr(message));
  EXPECT_THAT(std::string(config.status().message()), StartsWith("Slurm: "));
}

TEST(SlurmClusterResolverTest, BadStepsAreNamed) {
  Environment env = Step(0);
  env.erase("SLURM_PROCID");
  ExpectRefused(env, {}, "SLURM_PROCID is not set");
  env = Step(0);
  env["SLURM_PROCID"] = "x";
  ExpectRefused(env, {}, "SLURM_PROCID=\"x\" is not a non-negative integer");
  ExpectRefused(Step(7), {}, "SLURM_PROCID=7 is not below");
  env = Step(0);
  env["SLURM_STEP_TASKS_PER_NODE"] = "3";
  ExpectRefused(env, {}, "names 2 hosts but SLURM_STEP_TASKS_PER_NODE");
  env["SLURM_STEP_TASKS_PER_NODE"] = "3,3";
  ExpectRefused(env, {}, "adds up to 6 tasks but SLURM_STEP_NUM_TASKS is 5");
  env = Step(0);
  env["SLURM_STEP_NODELIST"] = "a,a";
  ExpectRefused(env, {}, "names a twice");
  // What the host-list expansion refuses names the variable it came from.
  env = Step(0);
  env["SLURM_STEP_NODELIST"] = "node[5-3]";
  ExpectRefused(env, {},
                "Slurm: SLURM_STEP_NODELIST=\"node[5-3]\": the range \"5-3\" "
                "descends");
  env = Step(0);
  env["SLURM_STEP_TASKS_PER_NODE"] = "3,2(x)";
  ExpectRefused(env, {},
                "Slurm: SLURM_STEP_TASKS_PER_NODE=\"3,2(x)\": \"2(x)\" is not "
                "a task count");
  SlurmClusterOptions too_many;
  too_many.jobs = *ParseSlurmJobs("ps:2,worker:4");
  ExpectRefused(Step(0), too_many,
                "--slurm_jobs=ps:2,worker:4 asks for 6 tasks but the step "
                "has 5");
  SlurmClusterOptions high;
  high.port_base = 65534;
  ExpectRefused(Step(0), high, "leaves no port for the 3 tasks on node01");
}

TEST(SlurmClusterResolverTest, CyclicDistributionIsRefused) {
  Environment env = Step(1);
  env["SLURM_LOCALID"] = "0";  // cyclic: rank 1 is node02's first task
  env["SLURMD_NODENAME"] = "node02";
  absl::StatusOr<TfConfig> config =
      SlurmClusterResolver({}, Lookup(env)).Resolve();
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(config.status().message(), HasSubstr("--distribution=block"));
  env["SLURM_LOCALID"] = "1";
  env["SLURMD_NODENAME"] = "node01";
  EXPECT_TRUE(SlurmClusterResolver({}, Lookup(env)).Resolve().ok());
}

TEST(SlurmClusterResolverTest, JobsFlag) {
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSlurmJobs("ps:2, worker:3");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[1].name, "worker");
  EXPECT_EQ((*jobs)[1].num_tasks, 3);
  for (const auto& [text, message] : std::map<std::string, std::string>{
           {"ps", "\"ps\" is not JOB:COUNT"},
           {"ps:0", "\"ps:0\" is not JOB:COUNT"},
           {"ps:two", "is not JOB:COUNT"},
           {"master:1", "\"master\" is not a task type"},
           {"chief:2",
            "\"chief:2\" asks for 2 chief tasks; a job has one "
            "chief at most"},
           {"evaluator:3", "a job has one evaluator at most"},
           {"ps:1,ps:2", "\"ps\" is given twice"},
           {"", "no jobs"}}) {
    absl::StatusOr<std::vector<SlurmJob>> bad = ParseSlurmJobs(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(bad.status().message(), HasSubstr(message)) << text;
    // As docs/tf_config.md promises of every Slurm error.
    EXPECT_THAT(std::string(bad.status().message()),
                StartsWith("Slurm: --slurm_jobs: "))
        << text;
  }
}

TEST(SlurmClusterResolverTest, GpusSharedByTheHostsTasksThatAreNotPs) {
  // node01: ps 0, ps 1, worker 0; node02: workers 1 and 2.
  Environment env = Step(2);
  env["CUDA_VISIBLE_DEVICES"] = "0,1,2,3";
  EXPECT_EQ(*SlurmClusterResolver(PsAndWorkers(), Lookup(env)).TaskGpus(),
            "0,1,2,3");
  env = Step(4);
  env["SLURM_STEP_GPUS"] = "0,1,2,3";
  EXPECT_EQ(*SlurmClusterResolver(PsAndWorkers(), Lookup(env)).TaskGpus(),
            "2,3");
  env["SLURM_GPUS_PER_TASK"] = "gpu:1";
  EXPECT_EQ(*SlurmClusterResolver(PsAndWorkers(), Lookup(env)).TaskGpus(), "1");
  env = Step(0);
  env["CUDA_VISIBLE_DEVICES"] = "0,1";
  EXPECT_EQ(*SlurmClusterResolver(PsAndWorkers(), Lookup(env)).TaskGpus(), "");
  // Slurm bound the task's GPU itself: kept.
  env = Step(3);
  env["CUDA_VISIBLE_DEVICES"] = "5";
  env["SLURM_GPUS_PER_TASK"] = "1";
  EXPECT_EQ(*SlurmClusterResolver(PsAndWorkers(), Lookup(env)).TaskGpus(), "5");
  // No GPUs named: nothing to set.
  EXPECT_FALSE(SlurmClusterResolver(PsAndWorkers(), Lookup(Step(3)))
                   .TaskGpus()
                   ->has_value());
  env = Step(3);
  env["CUDA_VISIBLE_DEVICES"] = "0";
  absl::StatusOr<std::optional<std::string>> too_few =
      SlurmClusterResolver(PsAndWorkers(), Lookup(env)).TaskGpus();
  ASSERT_FALSE(too_few.ok());
  EXPECT_THAT(too_few.status().message(),
              HasSubstr("node02 has 1 GPUs (CUDA_VISIBLE_DEVICES=0) for its "
                        "2 tasks"));
}

}  // namespace
}  // namespace distrt
