// Family "ps_memory": what a real ps_server process costs in memory per
// byte it stores, against the raw bytes of what it stores.
//
//   value     the growth of the ps_server's peak resident memory: VmHWM
//             after the case's work minus VmRSS when idle (just started and
//             having answered one request), both from /proc/<pid>/status;
//   baseline  "raw_bytes": 4 bytes per stored float, of the values and of
//             the optimizer's slots (runtime/optimizer's SlotNames).
//
// The work is what training does to the variable, through PsClient with
// its default Options: create it, then pull and push all of it a few
// times. So the peak includes what the server holds while requests are in
// flight (their messages, decoded gradients, pulled copies), not only the
// variable: that is the memory a ps task must be given.
//
// Each case runs in a ps_server process of its own (tests/util's
// StartPsProcess, whose PsProcess kills it when destroyed), so no case's
// peak or fragmentation is counted in another's.

#include "bench/ps_memory_bench.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "client/ps_client.h"
#include "proto/ps_service.pb.h"
#include "runtime/optimizer/optimizer.h"
#include "runtime/ps/hash_embedding_table.h"
#include "runtime/ps/initializer.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/variable_spec.h"
#include "runtime/util/status_macros.h"
#include "tests/util/ps_processes.h"

namespace distrt::bench {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Dense variables are [rows, kDenseWidth]: 4 KiB rows, so that PsClient's
// 32 MiB requests hold whole rows.
constexpr int64_t kDenseWidth = 1024;
// Pull-then-push rounds over the whole variable, as training steps make.
constexpr int kDenseRounds = 3;

// Hash tables: ids 0..rows-1 are pulled in batches of kHashBatch (16 MiB of
// dim-64 rows: one request with the default max_request_bytes), which
// creates every row; then kHashRounds rounds of pull-then-push per batch.
constexpr int64_t kHashBatch = 65536;
constexpr int kHashRounds = 2;

// A fresh ps_server must answer within this.
constexpr absl::Duration kServerWait = absl::Seconds(30);

struct MemoryCase {
  std::string name;  // the figure's, e.g. "ps_memory/dense_adam/256MiB"
  OptimizerKind optimizer = OptimizerKind::kSgd;
  bool hash = false;
  // Dense: the variable's bytes. Hash: rows of `dim` floats.
  int64_t dense_bytes = 0;
  int64_t hash_rows = 0;
  int64_t hash_dim = 0;

  int64_t floats() const {
    return hash ? hash_rows * hash_dim
                : dense_bytes / static_cast<int64_t>(sizeof(float));
  }
  // Values and slots, 4 bytes per float.
  int64_t raw_bytes() const {
    const int64_t slots = static_cast<int64_t>(SlotNames(optimizer).size());
    return floats() * static_cast<int64_t>(sizeof(float)) * (1 + slots);
  }
};

struct ProcessMemory {
  int64_t rss_bytes = 0;  // VmRSS: resident now
  int64_t hwm_bytes = 0;  // VmHWM: the most ever resident
};

// From /proc/<pid>/status, whose lines read "VmRSS:\t  123456 kB".
absl::StatusOr<ProcessMemory> ReadProcessMemory(int pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/status");
  std::ifstream file(path);
  if (!file) {
    return absl::UnavailableError(absl::StrCat("ps_memory: cannot read ", path,
                                               " (needs Linux's /proc)"));
  }
  ProcessMemory memory;
  bool have_rss = false;
  bool have_hwm = false;
  std::string line;
  // /proc/<pid>/status is a few dozen lines; the file bounds the loop.
  while (std::getline(file, line)) {
    absl::string_view rest = line;
    int64_t* field = nullptr;
    if (absl::ConsumePrefix(&rest, "VmRSS:")) {
      field = &memory.rss_bytes;
      have_rss = true;
    } else if (absl::ConsumePrefix(&rest, "VmHWM:")) {
      field = &memory.hwm_bytes;
      have_hwm = true;
    } else {
      continue;
    }
    rest = absl::StripAsciiWhitespace(rest);
    int64_t kib = 0;
    if (!absl::ConsumeSuffix(&rest, " kB") ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kib)) {
      return absl::InternalError(
          absl::StrCat("ps_memory: unexpected line in ", path, ": ", line));
    }
    *field = kib * 1024;
  }
  if (!have_rss || !have_hwm) {
    return absl::InternalError(
        absl::StrCat("ps_memory: ", path, " has no VmRSS or VmHWM line"));
  }
  return memory;
}

InitializerSpec Uniform() {
  // Not zeros: every page of the values is written, whatever the server's
  // allocator would leave untouched for a zero fill.
  InitializerSpec init;
  init.kind = InitializerSpec::Kind::kUniform;
  init.seed = 7;
  return init;
}

// Creates the dense variable and pulls and pushes all of it kDenseRounds
// times, each a whole-variable PsClient::Pull / Push, which the client
// splits into max_request_bytes requests sent at once.
absl::Status DenseWork(PsClient& client, const MemoryCase& c) {
  VariableSpec spec;
  spec.name = "ps_memory_dense";
  spec.shape = {c.dense_bytes / (kDenseWidth * int64_t{sizeof(float)}),
                kDenseWidth};
  spec.initializer = Uniform();
  spec.optimizer.kind = c.optimizer;
  ASSIGN_OR_RETURN(VariablePlacement variable, client.CreateVariable(spec));
  std::vector<float> values(c.floats());
  const std::vector<float> grads(c.floats(), 1e-3f);
  for (int round = 0; round < kDenseRounds; ++round) {
    RETURN_IF_ERROR(client.Pull(variable, absl::MakeSpan(values)));
    RETURN_IF_ERROR(client.Push(variable, grads));
  }
  return absl::OkStatus();
}

// Creates the table's rows by pulling every id once, in batches, then makes
// kHashRounds rounds of pull-then-push of every batch.
absl::Status HashWork(PsClient& client, const MemoryCase& c) {
  HashEmbeddingSpec spec;
  spec.name = "ps_memory_hash";
  spec.dim = c.hash_dim;
  spec.initializer = Uniform();
  spec.optimizer.kind = c.optimizer;
  RETURN_IF_ERROR(client.CreateHashTable(spec));
  std::vector<int64_t> ids;
  std::vector<float> rows;
  const std::vector<float> grads(kHashBatch * c.hash_dim, 1e-3f);
  for (int round = 0; round <= kHashRounds; ++round) {
    const bool push = round > 0;  // round 0 creates the rows
    for (int64_t begin = 0; begin < c.hash_rows; begin += kHashBatch) {
      const int64_t end = std::min(c.hash_rows, begin + kHashBatch);
      ids.resize(end - begin);
      for (int64_t id = begin; id < end; ++id) ids[id - begin] = id;
      rows.resize(ids.size() * c.hash_dim);
      RETURN_IF_ERROR(client.PullHash(spec, ids, absl::MakeSpan(rows)));
      if (!push) continue;
      RETURN_IF_ERROR(client.PushHash(
          spec, ids, absl::MakeConstSpan(grads).first(rows.size())));
    }
  }
  return absl::OkStatus();
}

absl::Status RunCase(const MemoryCase& c, BenchReport* report) {
  // Killed when this returns, whichever way.
  absl::StatusOr<distrt::testing::PsProcess> ps =
      distrt::testing::StartPsProcess(0, 1);
  RETURN_IF_ERROR(ps.status());
  ASSIGN_OR_RETURN(std::unique_ptr<PsClient> client,
                   PsClient::Create({ps->address()}, PsClient::Options()));
  RETURN_IF_ERROR(client->WaitForServers(kServerWait));
  const int pid = ps->process->pid();
  ASSIGN_OR_RETURN(ProcessMemory idle, ReadProcessMemory(pid));

  if (absl::Status s = c.hash ? HashWork(*client, c) : DenseWork(*client, c);
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(c.name, ": ", s.message()));
  }

  ASSIGN_OR_RETURN(ProcessMemory after, ReadProcessMemory(pid));
  // The server's own count of what it stores, to show that the raw bytes
  // here are what it holds.
  ASSIGN_OR_RETURN(std::vector<ps::GetStatusResponse> stats, client->Stats());
  const ps::GetStatusResponse& st = stats.front();

  const int64_t grown = after.hwm_bytes - idle.rss_bytes;
  report->Add(c.name, static_cast<double>(grown), "bytes", "raw_bytes",
              static_cast<double>(c.raw_bytes()));
  report->Note(absl::StrCat(
      c.name, ": idle VmRSS ", idle.rss_bytes / kMiB, " MiB, VmHWM after ",
      after.hwm_bytes / kMiB, " MiB, VmRSS after ", after.rss_bytes / kMiB,
      " MiB; the server counts ", st.variable_bytes() + st.hash_table_bytes(),
      " bytes stored",
      c.hash ? absl::StrCat(" in ", st.hash_table_rows(), " rows") : ""));
  return absl::OkStatus();
}

}  // namespace

absl::Status RunPsMemoryBench(const BenchConfig& config, BenchReport* report) {
  report->BeginFamily(
      "ps_memory: peak memory of a ps_server process per stored byte",
      "value: VmHWM after creating, pulling and pushing minus VmRSS idle, in "
      "bytes; baseline: raw bytes of values + optimizer slots (4 per float); "
      "ratio = memory per stored byte, lower is better, the target is <= "
      "1.3");
  // StartPsProcess runs ps_server/ps_server from the working directory: the
  // runfiles tree under `bazel run` (//bench has //ps_server in its data).
  if (!std::filesystem::exists(distrt::testing::kPsServerBinary)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ps_memory: no ", distrt::testing::kPsServerBinary, " under ",
        std::filesystem::current_path().string(), " (binaries_dir ",
        config.binaries_dir, "); run it as `bazel run //bench`"));
  }

  std::vector<MemoryCase> cases;
  const int64_t dense_bytes = (config.quick ? 64 : 256) * kMiB;
  const std::string dense_size = absl::StrCat(dense_bytes / kMiB, "MiB");
  auto dense = [&](absl::string_view optimizer_name, OptimizerKind kind) {
    MemoryCase c;
    c.name = absl::StrCat("ps_memory/dense_", optimizer_name, "/", dense_size);
    c.optimizer = kind;
    c.dense_bytes = dense_bytes;
    return c;
  };
  cases.push_back(dense("sgd", OptimizerKind::kSgd));
  if (!config.quick) {
    cases.push_back(dense("adam", OptimizerKind::kAdam));
    MemoryCase hash;
    hash.name = "ps_memory/hash_adagrad/1Mx64";
    hash.optimizer = OptimizerKind::kAdagrad;
    hash.hash = true;
    hash.hash_rows = 1 << 20;
    hash.hash_dim = 64;
    cases.push_back(hash);
  }
  // What the pushes were, since the peak depends on them.
  const PsClient::Options defaults;
  const int64_t max_request_bytes = defaults.max_request_bytes;
  std::string work = absl::StrCat(
      "one fresh ps_server per case; PsClient with default Options (",
      max_request_bytes / kMiB, " MiB max_request_bytes, ",
      defaults.max_requests_in_flight_per_task,
      " max_requests_in_flight_per_task). Dense [rows, ", kDenseWidth,
      "]: ", kDenseRounds,
      " rounds of a whole-variable Pull then Push, each split into ",
      (dense_bytes + max_request_bytes - 1) / max_request_bytes, " requests, ",
      defaults.max_requests_in_flight_per_task, " in flight at a time");
  if (!config.quick) {
    absl::StrAppend(&work, ". Hash: every id pulled once in batches of ",
                    kHashBatch, " ids to create the rows, then ", kHashRounds,
                    " rounds of PullHash then PushHash per batch");
  }
  report->Note(work);

  for (const MemoryCase& c : cases) {
    RETURN_IF_ERROR(RunCase(c, report));
  }
  return absl::OkStatus();
}

}  // namespace distrt::bench
