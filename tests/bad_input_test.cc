// Malformed input as a user meets it, end to end through the real binaries:
//
//  * TF_CONFIGs given to ps_server and worker;
//  * flags given to ps_server and worker (TLS and token files included);
//  * data files given to a worker that trains alone (no TF_CONFIG);
//  * damaged copies of a real checkpoint of two ps_server processes, given
//    to PsClient::Restore and to a restarted ps_server (--checkpoint_dir).
//
// A process must exit with its status for bad input and say why in one line
// on stderr that names the input and the place (the TF_CONFIG part, the
// flag, the file and line); never crash (no signal, no "terminate called").
// A refused restore must return its code naming the file, and leave every
// value on the ps tasks as it was, bit for bit.

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/ps_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/checkpoint.pb.h"
#include "rpc/tls_certificates.h"
#include "runtime/util/crc32c.h"
#include "runtime/util/test_dir.h"
#include "tests/util/checkpoint_model.h"
#include "tests/util/ps_processes.h"
#include "tests/util/subprocess.h"

namespace distrt {
namespace {

using ::distrt::testing::CheckpointModel;
using ::distrt::testing::ClientOf;
using ::distrt::testing::CreateCheckpointModel;
using ::distrt::testing::kPsServerBinary;
using ::distrt::testing::ModelSnapshot;
using ::distrt::testing::PsProcess;
using ::distrt::testing::PsTfConfig;
using ::distrt::testing::PullModel;
using ::distrt::testing::RunSubprocess;
using ::distrt::testing::SubprocessOptions;
using ::distrt::testing::SubprocessResult;
using ::distrt::testing::TrainCheckpointModel;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kWorkerBinary[] = "worker/worker";
// A process that does not refuse its input in this long has accepted it.
const absl::Duration kRunTimeout = absl::Seconds(20);

// Runs `options` to its end (a test failure when it cannot be run or
// outlives kRunTimeout).
SubprocessResult RunToEnd(SubprocessOptions options) {
  options.timeout = kRunTimeout;
  absl::StatusOr<SubprocessResult> result = RunSubprocess(options);
  EXPECT_TRUE(result.ok()) << result.status() << " (" << options.argv[0]
                           << " did not refuse its input)";
  return result.ok() ? *result : SubprocessResult{};
}

// Checks that `result` is a refusal: exit status `exit_code`, not a signal,
// and exactly one line on stderr that starts with `prefix` and contains
// every one of `parts`.
void ExpectRefused(const SubprocessResult& result, int exit_code,
                   const std::string& prefix,
                   const std::vector<std::string>& parts) {
  const std::string& err = result.stderr_text;
  EXPECT_EQ(result.term_signal, 0) << "killed by a signal; stderr: " << err;
  EXPECT_EQ(result.exit_code, exit_code) << "stderr: " << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1)
      << "not one line on stderr: " << err;
  EXPECT_TRUE(absl::EndsWith(err, "\n")) << err;
  EXPECT_TRUE(absl::StartsWith(err, prefix)) << err;
  EXPECT_THAT(err, Not(HasSubstr("terminate called")));
  for (const std::string& part : parts) EXPECT_THAT(err, HasSubstr(part));
}

// "$DIR" in `text` replaced by `dir`.
std::string InDir(const std::string& text, const std::string& dir) {
  return absl::StrReplaceAll(text, {{"$DIR", dir}});
}

std::vector<std::string> InDir(const std::vector<std::string>& texts,
                               const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& text : texts) out.push_back(InDir(text, dir));
  return out;
}

// `depth` nested JSON lists, closed or not. (An environment variable holds
// at most 128 KiB.)
std::string Nested(int depth, bool closed) {
  return std::string(depth, '[') + (closed ? std::string(depth, ']') : "");
}

// ---------------------------------------------------------------------------
// TF_CONFIG

struct TfConfigCase {
  std::string name;
  std::string tf_config;
  std::string error;  // part of the stderr line
};

void PrintTo(const TfConfigCase& c, std::ostream* os) { *os << c.name; }

std::string CaseName(const ::testing::TestParamInfo<TfConfigCase>& info) {
  return info.param.name;
}

// A TF_CONFIG whose task is ps task `index` of `cluster`.
std::string PsTask(const std::string& cluster, const std::string& index = "0") {
  return absl::StrCat(R"({"cluster":)", cluster,
                      R"(,"task":{"type":"ps","index":)", index, "}}");
}

constexpr char kTwoPs[] =
    R"({"worker":["127.0.0.1:1"],"ps":["127.0.0.1:2","127.0.0.1:3"]})";

class PsServerTfConfigTest : public ::testing::TestWithParam<TfConfigCase> {};

TEST_P(PsServerTfConfigTest, ExitsTwoNamingTheProblem) {
  SubprocessOptions options;
  options.argv = {kPsServerBinary, "--port=0", "--bind_host=127.0.0.1"};
  options.env["TF_CONFIG"] = GetParam().tf_config;
  const SubprocessResult result = RunToEnd(options);
  ExpectRefused(result, 2, "ps_server: ", {"TF_CONFIG", GetParam().error});
  EXPECT_THAT(result.stdout_text, Not(HasSubstr("serving")));
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, PsServerTfConfigTest,
    ::testing::Values(
        // Not JSON, or not an object.
        TfConfigCase{"NotJson", "{",
                     "TF_CONFIG: not valid JSON: at line 1, column 2: syntax "
                     "error while parsing object key"},
        TfConfigCase{"Words", "not json",
                     "TF_CONFIG: not valid JSON: at line 1, column 2"},
        TfConfigCase{"TextAfterTheObject", PsTask(kTwoPs) + " trailing",
                     "expected end of input"},
        TfConfigCase{"Empty", "",
                     "TF_CONFIG: is set but empty; unset it, or set it to {} "
                     "for local mode"},
        TfConfigCase{"Blank", " \t\n", "TF_CONFIG: is set but empty"},
        TfConfigCase{"List", "[]",
                     "TF_CONFIG: must be a JSON object, got a list"},
        TfConfigCase{"Number", "42",
                     "TF_CONFIG: must be a JSON object, got the number 42"},
        TfConfigCase{"String", "\"ps\"",
                     "TF_CONFIG: must be a JSON object, got the string \"ps\""},
        TfConfigCase{"NonUtf8Address",
                     PsTask(R"({"ps":["127.0.0.1)"
                            "\xff"
                            R"(:2"]})"),
                     "TF_CONFIG: not valid JSON: at line 1, column 29: syntax "
                     "error while parsing value - invalid string: ill-formed "
                     "UTF-8 byte"},
        TfConfigCase{"NonUtf8JobName",
                     PsTask("{\"p\xc3\x28\":[\"127.0.0.1:2\"]}"),
                     "ill-formed UTF-8 byte"},
        TfConfigCase{"BinaryBytes", "\xff\xfe{}",
                     "TF_CONFIG: not valid JSON: at line 1, column 1"},
        // Nested deeper than json_util's limit: refused before parsing,
        // as nlohmann::json copies values recursively (50000 deep once
        // overflowed ps_server's stack under ASan).
        TfConfigCase{"DeepNestingUnclosed", Nested(100000, false),
                     "TF_CONFIG: not valid JSON: at line 1, column 101: lists "
                     "and objects nested deeper than 100"},
        TfConfigCase{"DeepNesting", Nested(50000, true),
                     "TF_CONFIG: not valid JSON: at line 1, column 101: lists "
                     "and objects nested deeper than 100"},
        TfConfigCase{"DeepNestingInside",
                     PsTask(kTwoPs).insert(1, "\"environment\":" +
                                                  Nested(50000, true) + ","),
                     "TF_CONFIG: not valid JSON: at line 1, column 115: lists "
                     "and objects nested deeper than 100"},
        TfConfigCase{"NestedAsDeepAsAllowed",
                     PsTask(kTwoPs).insert(1, "\"environment\":" +
                                                  Nested(99, true) + ","),
                     "TF_CONFIG: \"environment\" must be a string, got a list"},
        // The cluster.
        TfConfigCase{"ClusterIsAList", PsTask("[]"),
                     "TF_CONFIG: \"cluster\" must be an object from task type "
                     "to task addresses, got a list"},
        TfConfigCase{"JobIsAString", PsTask(R"({"ps":"127.0.0.1:2"})"),
                     "TF_CONFIG: job \"ps\" must be a list of \"host:port\" "
                     "addresses or an object from task index to address, got "
                     "the string \"127.0.0.1:2\""},
        TfConfigCase{"AddressIsANumber", PsTask(R"({"ps":[2222]})"),
                     "TF_CONFIG: job \"ps\" task 0: address must be a "
                     "\"host:port\" string, got the number 2222"},
        TfConfigCase{"MasterJob",
                     PsTask(R"({"master":["a:1"],"ps":["127.0.0.1:2"]})"),
                     "TF_CONFIG: job \"master\" is not a task type of "
                     "multi-worker training; use \"chief\" instead (\"master\" "
                     "is TF1's name for it)"},
        TfConfigCase{"EmptyJobName",
                     PsTask(R"({"":["a:1"],"ps":["127.0.0.1:2"]})"),
                     "TF_CONFIG: job \"\" is not a task type of multi-worker "
                     "training (allowed: chief, worker, ps, evaluator)"},
        TfConfigCase{"TwoChiefs",
                     PsTask(R"({"chief":["a:1","b:1"],"ps":["127.0.0.1:2"]})"),
                     "TF_CONFIG: job \"chief\" has 2 tasks; there may be at "
                     "most one chief task"},
        TfConfigCase{"TwoEvaluators",
                     PsTask(R"({"evaluator":["a:1","b:1"],"ps":["c:1"]})"),
                     "TF_CONFIG: job \"evaluator\" has 2 tasks; there may be "
                     "at most one evaluator task"},
        TfConfigCase{"DuplicateAddress",
                     PsTask(R"({"ps":["127.0.0.1:5","127.0.0.1:5"]})"),
                     "TF_CONFIG: address \"127.0.0.1:5\" is used by both ps "
                     "task 0 and ps task 1"},
        TfConfigCase{"DuplicateAddressAcrossJobs",
                     PsTask(R"({"worker":["h:5"],"ps":["h:5"]})"),
                     "TF_CONFIG: address \"h:5\" is used by both worker task "
                     "0 and ps task 0"},
        TfConfigCase{"NoPort", PsTask(R"({"ps":["ps0"]})"),
                     "TF_CONFIG: job \"ps\" task 0: address \"ps0\" has no "
                     "port; write it as \"host:port\""},
        TfConfigCase{"EmptyPort", PsTask(R"({"ps":["ps0:"]})"),
                     "TF_CONFIG: job \"ps\" task 0: address \"ps0:\" has port "
                     "\"\"; a port is a number from 1 to 65535"},
        TfConfigCase{"PortZero", PsTask(R"({"ps":["ps0:0"]})"),
                     "TF_CONFIG: job \"ps\" task 0: address \"ps0:0\" has port "
                     "\"0\"; a port is a number from 1 to 65535"},
        TfConfigCase{"Port70000", PsTask(R"({"ps":["ps0:70000"]})"),
                     "address \"ps0:70000\" has port \"70000\"; a port is a "
                     "number from 1 to 65535"},
        TfConfigCase{"NegativePort", PsTask(R"({"ps":["ps0:-1"]})"),
                     "address \"ps0:-1\" has port \"-1\""},
        TfConfigCase{"NamedPort", PsTask(R"({"ps":["ps0:http"]})"),
                     "address \"ps0:http\" has port \"http\""},
        TfConfigCase{"PortBeyondInt64",
                     PsTask(R"({"ps":["ps0:99999999999999999999"]})"),
                     "has port \"99999999999999999999\"; a port is a number "
                     "from 1 to 65535"},
        TfConfigCase{"NoHost", PsTask(R"({"ps":[":22"]})"),
                     "TF_CONFIG: job \"ps\" task 0: address \":22\" has no "
                     "host"},
        TfConfigCase{"EmptyAddress", PsTask(R"({"ps":[""]})"),
                     "TF_CONFIG: job \"ps\" task 0: address is empty"},
        TfConfigCase{"Ipv6WithoutPort", PsTask(R"({"ps":["[::1]"]})"),
                     "address \"[::1]\" has no port"},
        // Kubeflow-style jobs: objects from task index to address.
        TfConfigCase{"SparseJobWithAGap",
                     PsTask(R"({"ps":{"0":"a:1","2":"b:1"}})", "1"),
                     "TF_CONFIG: task index 1 is not in job \"ps\" (its "
                     "indices: 0, 2)"},
        TfConfigCase{"SparseJobIndexNotANumber",
                     PsTask(R"({"ps":{"0":"a:1","x":"b:1"}})"),
                     "TF_CONFIG: job \"ps\": task index \"x\" is not an "
                     "integer"},
        TfConfigCase{"SparseJobNegativeIndex",
                     PsTask(R"({"ps":{"0":"a:1","-3":"b:1"}})"),
                     "TF_CONFIG: job \"ps\": task index -3 is negative"},
        TfConfigCase{"SparseJobIndexTwice",
                     PsTask(R"({"ps":{"0":"a:1","00":"b:1"}})"),
                     "TF_CONFIG: job \"ps\": task index 0 is given twice"},
        TfConfigCase{"SparseJobHugeIndex",
                     PsTask(R"({"ps":{"99999999999":"a:1"}})"),
                     "TF_CONFIG: job \"ps\": task index 99999999999 is too "
                     "large"},
        TfConfigCase{"SparseJobAddressIsANumber", PsTask(R"({"ps":{"0":7}})"),
                     "TF_CONFIG: job \"ps\" task 0: address must be a "
                     "\"host:port\" string, got the number 7"},
        TfConfigCase{
            "SparseClusterKey",
            R"({"sparseCluster":{"ps":["a:1"]},"task":{"type":"ps","index":0}})",
            "TF_CONFIG: \"sparseCluster\" (what Kubeflow's TFJob "
            "operator writes with enableDynamicWorker) is not "
            "supported"},
        // The task.
        TfConfigCase{
            "MasterTask",
            R"({"cluster":{"ps":["a:1"]},"task":{"type":"master","index":0}})",
            "TF_CONFIG: task type \"master\" is not a task type of "
            "multi-worker training; use \"chief\" instead"},
        TfConfigCase{
            "UpperCaseTask",
            R"({"cluster":{"ps":["a:1"]},"task":{"type":"PS","index":0}})",
            "TF_CONFIG: task type \"PS\" is not a task type of "
            "multi-worker training; use \"ps\" (task types are lower "
            "case)"},
        TfConfigCase{
            "EmptyTaskType",
            R"({"cluster":{"ps":["a:1"]},"task":{"type":"","index":0}})",
            "TF_CONFIG: task type \"\" is not a task type"},
        TfConfigCase{
            "TaskTypeIsANumber",
            R"({"cluster":{"ps":["a:1"]},"task":{"type":7,"index":0}})",
            "TF_CONFIG: task \"type\" must be a string, got the "
            "number 7"},
        TfConfigCase{"TaskIsAString",
                     R"({"cluster":{"ps":["a:1"]},"task":"ps"})",
                     "TF_CONFIG: \"task\" must be an object like {\"type\": "
                     "\"worker\", \"index\": 0}, got the string \"ps\""},
        TfConfigCase{"TaskWithoutType",
                     R"({"cluster":{"ps":["a:1"]},"task":{"index":0}})",
                     "TF_CONFIG: \"task\" has no \"type\""},
        TfConfigCase{"TaskWithoutIndex",
                     R"({"cluster":{"ps":["a:1"]},"task":{"type":"ps"}})",
                     "TF_CONFIG: \"task\" has no \"index\""},
        TfConfigCase{"IndexOutOfRange", PsTask(kTwoPs, "2"),
                     "TF_CONFIG: task index 2 is out of range for job \"ps\" "
                     "(2 tasks)"},
        TfConfigCase{"NegativeIndex", PsTask(kTwoPs, "-1"),
                     "TF_CONFIG: task index -1 is negative"},
        TfConfigCase{"HugeIndex", PsTask(kTwoPs, "99999999999"),
                     "TF_CONFIG: task index 99999999999 is too large"},
        TfConfigCase{"IndexAboveInt64", PsTask(kTwoPs, "18446744073709551615"),
                     "TF_CONFIG: task index 18446744073709551615 is too large"},
        TfConfigCase{
            "IndexAboveUint64", PsTask(kTwoPs, "100000000000000000000000"),
            "TF_CONFIG: task index must be an integer, got the number"},
        TfConfigCase{"IndexIsText", PsTask(kTwoPs, "\"x\""),
                     "TF_CONFIG: task index \"x\" is not an integer"},
        TfConfigCase{"IndexWithASpace", PsTask(kTwoPs, "\" 0\""),
                     "TF_CONFIG: task index \" 0\" is not an integer"},
        TfConfigCase{"IndexIsAFraction", PsTask(kTwoPs, "1.5"),
                     "TF_CONFIG: task index must be an integer, got the "
                     "number 1.5"},
        TfConfigCase{"IndexIsABoolean", PsTask(kTwoPs, "true"),
                     "TF_CONFIG: task index must be an integer, got the "
                     "boolean true"},
        TfConfigCase{"IndexIsNull", PsTask(kTwoPs, "null"),
                     "TF_CONFIG: task index must be an integer, got null"},
        TfConfigCase{
            "RpcLayerIsANumber",
            R"({"cluster":{"ps":["a:1"]},"task":{"type":"ps","index":0},"rpc_layer":5})",
            "TF_CONFIG: \"rpc_layer\" must be a string, got the "
            "number 5"},
        TfConfigCase{
            "EnvironmentIsAList",
            R"({"cluster":{"ps":["a:1"]},"task":{"type":"ps","index":0},"environment":[]})",
            "TF_CONFIG: \"environment\" must be a string, got a list"},
        // Valid, but not a ps task of a cluster.
        TfConfigCase{"EmptyObject", "{}",
                     "TF_CONFIG must name a ps task of a cluster"},
        TfConfigCase{"NoCluster", R"({"task":{"type":"ps","index":0}})",
                     "TF_CONFIG must name a ps task of a cluster"},
        TfConfigCase{"EmptyCluster", PsTask("{}"),
                     "TF_CONFIG must name a ps task of a cluster"},
        TfConfigCase{"EmptyPsJob", PsTask(R"({"ps":[]})"),
                     "TF_CONFIG must name a ps task of a cluster"},
        TfConfigCase{"NoTask", R"({"cluster":{"ps":["127.0.0.1:2"]}})",
                     "TF_CONFIG must name a ps task of a cluster"},
        TfConfigCase{"TaskNotInTheCluster",
                     PsTask(R"({"worker":["127.0.0.1:1"]})"),
                     "TF_CONFIG: task type \"ps\" is not a job in \"cluster\" "
                     "(jobs: worker)"},
        TfConfigCase{
            "WorkerTask",
            R"({"cluster":{"ps":["a:1"],"worker":["b:1"]},"task":{"type":"worker","index":0}})",
            "TF_CONFIG's task is worker 0, not a ps task; start a "
            "worker for it instead"},
        TfConfigCase{
            "EvaluatorTask",
            R"({"cluster":{"ps":["a:1"]},"task":{"type":"evaluator","index":0}})",
            "TF_CONFIG's task is evaluator 0, not a ps task"},
        TfConfigCase{
            "SecondEvaluator",
            R"({"cluster":{"ps":["a:1"]},"task":{"type":"evaluator","index":3}})",
            "TF_CONFIG: task index 3 is out of range for an evaluator "
            "outside the cluster (there is one evaluator, 0)"}),
    CaseName);

class WorkerTfConfigTest : public ::testing::TestWithParam<TfConfigCase> {};

TEST_P(WorkerTfConfigTest, ExitsTwoNamingTheProblem) {
  SubprocessOptions options;
  // TF_CONFIG is read before the data: a TF_CONFIG that is wrongly accepted
  // fails at once on the missing file, with status 1.
  options.argv = {kWorkerBinary, "--train_data=/nonexistent/train.svm",
                  "--train_steps=1"};
  options.env["TF_CONFIG"] = GetParam().tf_config;
  ExpectRefused(RunToEnd(options), 2,
                "worker: ", {"TF_CONFIG", GetParam().error});
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, WorkerTfConfigTest,
    ::testing::Values(
        TfConfigCase{"NotJson", "{", "TF_CONFIG: not valid JSON: at line 1"},
        TfConfigCase{"Empty", "", "TF_CONFIG: is set but empty"},
        TfConfigCase{"NonUtf8", "{\"cluster\":{\"worker\":[\"\xfe:1\"]}}",
                     "ill-formed UTF-8 byte"},
        TfConfigCase{
            "MasterTask",
            R"({"cluster":{"worker":["a:1"]},"task":{"type":"master","index":0}})",
            "TF_CONFIG: task type \"master\" is not a task type of "
            "multi-worker training; use \"chief\" instead"},
        TfConfigCase{
            "DuplicateAddress",
            R"({"cluster":{"chief":["a:1"],"worker":["a:1"]},"task":{"type":"worker","index":0}})",
            "TF_CONFIG: address \"a:1\" is used by both chief task 0 "
            "and worker task 0"},
        TfConfigCase{
            "PortZero",
            R"({"cluster":{"worker":["a:0"]},"task":{"type":"worker","index":0}})",
            "TF_CONFIG: job \"worker\" task 0: address \"a:0\" has "
            "port \"0\"; a port is a number from 1 to 65535"},
        TfConfigCase{
            "IndexOutOfRange",
            R"({"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":3}})",
            "TF_CONFIG: task index 3 is out of range for job "
            "\"worker\" (1 tasks)"},
        TfConfigCase{
            "SparseJobWithAGap",
            R"({"cluster":{"worker":{"0":"a:1","2":"b:1"}},"task":{"type":"worker","index":1}})",
            "TF_CONFIG: task index 1 is not in job \"worker\" (its "
            "indices: 0, 2)"},
        TfConfigCase{
            "SparseClusterKey",
            R"({"sparseCluster":{"worker":["a:1"]},"task":{"type":"worker","index":0}})",
            "TF_CONFIG: \"sparseCluster\""},
        TfConfigCase{
            "TwoChiefs",
            R"({"cluster":{"chief":["a:1","b:1"]},"task":{"type":"chief","index":0}})",
            "TF_CONFIG: job \"chief\" has 2 tasks"},
        TfConfigCase{
            "SecondEvaluator",
            R"({"cluster":{"worker":["a:1"]},"task":{"type":"evaluator","index":2}})",
            "TF_CONFIG: task index 2 is out of range for an evaluator "
            "outside the cluster"},
        TfConfigCase{
            "PsTask",
            R"({"cluster":{"worker":["a:1"],"ps":["b:1"]},"task":{"type":"ps","index":0}})",
            "TF_CONFIG's task is ps 0; training runs on chief and "
            "worker tasks (ps tasks run ps_server)"}),
    CaseName);

// ---------------------------------------------------------------------------
// Flags

struct FlagCase {
  std::string name;
  std::string binary;
  std::vector<std::string> flags;  // "$DIR": the test's directory
  int exit_code;
  std::string prefix;              // how the stderr line starts
  std::vector<std::string> error;  // parts of the stderr line; "$DIR" too
};

// Files for the flags to name, in `dir`: a valid TLS set (ca.pem, cert.pem,
// key.pem), another certificate's key, and files that are not what they
// should be.
void WriteFlagFiles(const TestDir& dir) {
  absl::StatusOr<rpc::PemKeyPair> ca =
      rpc::GenerateCertificateAuthority("bad_input_test CA", absl::Hours(1));
  ASSERT_TRUE(ca.ok()) << ca.status();
  absl::StatusOr<rpc::PemKeyPair> cert =
      rpc::IssueCertificate(*ca, "task", {"127.0.0.1"}, absl::Hours(1));
  ASSERT_TRUE(cert.ok()) << cert.status();
  absl::StatusOr<rpc::PemKeyPair> other =
      rpc::IssueCertificate(*ca, "other", {"127.0.0.1"}, absl::Hours(1));
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(rpc::WriteTlsFiles(dir.path(), *ca, *cert).ok());
  // Each may stand for a key or a token, so each is private (0600) as a
  // secret must be, except loose_token.
  for (const auto& [name, text] :
       std::vector<std::pair<std::string, std::string>>{
           {"other_key.pem", other->private_key_pem},
           {"garbage.pem", "this is not PEM\n"},
           {"empty", ""},
           {"short_token", "tooshort\n"},
           {"spaced_token", "0123456789 abcdefghijklmnop\n"}}) {
    ASSERT_EQ(chmod(dir.WriteFile(name, text).c_str(), 0600), 0) << name;
  }
  ASSERT_EQ(
      chmod(dir.WriteFile("loose_token", "0123456789abcdefghij\n").c_str(),
            0644),
      0);
  dir.WriteFile("train.svm", "1 1:1 3:0.5\n0 2:1\n1 1:1 2:1\n0 3:1\n");
}

void PrintTo(const FlagCase& c, std::ostream* os) { *os << c.name; }

std::string FlagCaseName(const ::testing::TestParamInfo<FlagCase>& info) {
  return info.param.name;
}

class BadFlagTest : public ::testing::TestWithParam<FlagCase> {};

TEST_P(BadFlagTest, IsRefusedNamingTheFlag) {
  TestDir dir;
  ASSERT_NO_FATAL_FAILURE(WriteFlagFiles(dir));
  const FlagCase& c = GetParam();
  SubprocessOptions options;
  if (c.binary == kPsServerBinary) {
    options.argv = {kPsServerBinary, "--port=0", "--bind_host=127.0.0.1"};
    options.env["TF_CONFIG"] = PsTfConfig(0, 1);
  } else {
    // Good flags, which the case's flags then override: alone, they train.
    options.argv = {kWorkerBinary,
                    InDir("--train_data=$DIR/train.svm", dir.path()),
                    "--train_steps=1", "--global_batch_size=2"};
    options.env["TF_CONFIG"] = std::nullopt;
    // No visible GPU, so that a case asking for one is refused by a worker
    // built with --config=cuda on a GPU machine too.
    options.env["CUDA_VISIBLE_DEVICES"] = "";
  }
  for (const std::string& flag : c.flags) {
    options.argv.push_back(InDir(flag, dir.path()));
  }
  const SubprocessResult result = RunToEnd(options);
  ExpectRefused(result, c.exit_code, c.prefix, InDir(c.error, dir.path()));
  EXPECT_THAT(result.stdout_text, Not(HasSubstr("serving")));
}

// The one line of ps_server and worker on a flag they refuse.
FlagCase PsServer(std::string name, std::vector<std::string> flags,
                  std::vector<std::string> error) {
  return {std::move(name), kPsServerBinary, std::move(flags), 2,
          "ps_server: ",   std::move(error)};
}

FlagCase Worker(std::string name, std::vector<std::string> flags,
                std::vector<std::string> error, int exit_code = 2) {
  return {std::move(name), kWorkerBinary, std::move(flags),
          exit_code,       "worker: ",    std::move(error)};
}

// A flag value that Abseil cannot parse: its parser prints its own line and
// exits with status 1 (not 2) before main() sees the flags.
FlagCase Unparsable(std::string name, const char* binary,
                    std::vector<std::string> flags, std::string error) {
  return {std::move(name),   binary, std::move(flags), 1, "ERROR: ",
          {std::move(error)}};
}

const std::vector<std::string> kTls = {"--tls_cert=$DIR/cert.pem",
                                       "--tls_key=$DIR/key.pem",
                                       "--tls_ca=$DIR/ca.pem"};

std::vector<std::string> TlsAnd(std::vector<std::string> more) {
  std::vector<std::string> flags = kTls;
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

INSTANTIATE_TEST_SUITE_P(
    PsServer, BadFlagTest,
    ::testing::Values(
        PsServer("NegativePort", {"--port=-5"},
                 {"ps_server: --port=-5 is not a port (0 to 65535)"}),
        PsServer("PortTooLarge", {"--port=65536"},
                 {"--port=65536 is not a port (0 to 65535)"}),
        PsServer("ZeroMessageSize", {"--max_message_mb=0"},
                 {"--max_message_mb=0 is not in 1..2047 (gRPC's limit is 2 "
                  "GiB)"}),
        PsServer("MessageSizeOverGrpcsLimit", {"--max_message_mb=4096"},
                 {"--max_message_mb=4096 is not in 1..2047"}),
        PsServer("ZeroMemory", {"--max_memory_mb=0"},
                 {"--max_memory_mb=0 is not in 1..2^30"}),
        PsServer("NegativeMemory", {"--max_memory_mb=-1"},
                 {"--max_memory_mb=-1 is not in 1..2^30"}),
        PsServer("MetricsPort70000", {"--metrics_port=70000"},
                 {"--metrics_port=70000 is not a port (0 to 65535, or -1 for "
                  "none)"}),
        PsServer("MetricsPortBelowMinusOne", {"--metrics_port=-2"},
                 {"--metrics_port=-2 is not a port"}),
        PsServer("NegativeStopGrace", {"--stop_grace_secs=-1"},
                 {"--stop_grace_secs must not be negative"}),
        PsServer("PositionalArgument", {"serve"},
                 {"unexpected argument \"serve\" (configuration comes from "
                  "TF_CONFIG and flags)"}),
        PsServer("CertWithoutKeyAndCa", {"--tls_cert=$DIR/cert.pem"},
                 {"TLS needs --tls_cert, --tls_key and --tls_ca together; "
                  "missing --tls_key, --tls_ca"}),
        PsServer("KeyWithoutCertAndCa", {"--tls_key=$DIR/key.pem"},
                 {"missing --tls_cert, --tls_ca"}),
        PsServer("CertAndKeyWithoutCa",
                 {"--tls_cert=$DIR/cert.pem", "--tls_key=$DIR/key.pem"},
                 {"missing --tls_ca"}),
        PsServer("TokenWithoutTls", {"--cluster_token_file=$DIR/short_token"},
                 {"--cluster_token_file needs TLS (--tls_cert, --tls_key, "
                  "--tls_ca): without it the token would cross the network "
                  "in clear text"}),
        PsServer("MissingCertFile",
                 {"--tls_cert=$DIR/nope.pem", "--tls_key=$DIR/key.pem",
                  "--tls_ca=$DIR/ca.pem"},
                 {"--tls_cert=$DIR/nope.pem: cannot read the file"}),
        PsServer("EmptyKeyFile",
                 {"--tls_cert=$DIR/cert.pem", "--tls_key=$DIR/empty",
                  "--tls_ca=$DIR/ca.pem"},
                 {"--tls_key=$DIR/empty: the file is empty"}),
        PsServer("CertNotPem",
                 {"--tls_cert=$DIR/garbage.pem", "--tls_key=$DIR/key.pem",
                  "--tls_ca=$DIR/ca.pem"},
                 {"--tls_cert=$DIR/garbage.pem: not a PEM certificate"}),
        PsServer("CaNotPem",
                 {"--tls_cert=$DIR/cert.pem", "--tls_key=$DIR/key.pem",
                  "--tls_ca=$DIR/garbage.pem"},
                 {"--tls_ca=$DIR/garbage.pem: not a PEM certificate"}),
        PsServer("KeyNotPem",
                 {"--tls_cert=$DIR/cert.pem", "--tls_key=$DIR/garbage.pem",
                  "--tls_ca=$DIR/ca.pem"},
                 {"--tls_key=$DIR/garbage.pem: not a PEM private key (or one "
                  "with a passphrase)"}),
        PsServer("KeyOfAnotherCertificate",
                 {"--tls_cert=$DIR/cert.pem", "--tls_key=$DIR/other_key.pem",
                  "--tls_ca=$DIR/ca.pem"},
                 {"--tls_key=$DIR/other_key.pem is not the key of "
                  "--tls_cert=$DIR/cert.pem"}),
        PsServer("MissingTokenFile",
                 TlsAnd({"--cluster_token_file=$DIR/no_token"}),
                 {"--cluster_token_file=$DIR/no_token: cannot read the file"}),
        PsServer("EmptyTokenFile", TlsAnd({"--cluster_token_file=$DIR/empty"}),
                 {"--cluster_token_file=$DIR/empty: the file is empty"}),
        PsServer("ShortToken",
                 TlsAnd({"--cluster_token_file=$DIR/short_token"}),
                 {"--cluster_token_file=$DIR/short_token: the token must have "
                  "at least 16 characters"}),
        PsServer("TokenReadableByOthers",
                 TlsAnd({"--cluster_token_file=$DIR/loose_token"}),
                 {"--cluster_token_file=$DIR/loose_token: the file is open to "
                  "group or others (mode 0644); a secret must be readable by "
                  "its owner only: chmod 600 $DIR/loose_token"}),
        // In a job with TLS the metrics (plain HTTP) stay on loopback.
        PsServer("MetricsOffLoopbackUnderTls",
                 TlsAnd({"--metrics_port=0", "--metrics_host=0.0.0.0"}),
                 {"--metrics_host=0.0.0.0: the metrics endpoint is plain HTTP "
                  "without authentication, so in a job with TLS it listens "
                  "on loopback only"}),
        PsServer("TokenWithASpace",
                 TlsAnd({"--cluster_token_file=$DIR/spaced_token"}),
                 {"--cluster_token_file=$DIR/spaced_token: the token must be "
                  "printable ASCII without spaces"}),
        Unparsable("PortNotANumber", kPsServerBinary, {"--port=abc"},
                   "ERROR: Illegal value 'abc' specified for flag 'port'"),
        Unparsable("UnknownFlag", kPsServerBinary, {"--prot=1"},
                   "ERROR: Unknown command line flag 'prot'")),
    FlagCaseName);

INSTANTIATE_TEST_SUITE_P(
    Worker, BadFlagTest,
    ::testing::Values(
        Worker("NoTrainData", {"--train_data="},
               {"worker: --train_data: required: files, globs or "
                "directories"}),
        Worker("NeitherStepsNorEpochs", {"--train_steps=0"},
               {"worker: --train_steps: set exactly one of --train_steps and "
                "--epochs (positive)"}),
        Worker("BothStepsAndEpochs", {"--epochs=1"},
               {"--train_steps: set exactly one of --train_steps and "
                "--epochs"}),
        Worker("NegativeEpochs", {"--train_steps=0", "--epochs=-1"},
               {"--train_steps: set exactly one of --train_steps and "
                "--epochs (positive)"}),
        Worker("NegativeStepsWithEpochs", {"--train_steps=-3", "--epochs=1"},
               {"worker: --train_steps: must be positive"}),
        Worker("ZeroBatch", {"--global_batch_size=0"},
               {"worker: --global_batch_size: must be at least 1"}),
        Worker("NegativeLearningRate", {"--learning_rate=-1"},
               {"worker: --learning_rate: must be positive"}),
        Worker("NanLearningRate", {"--learning_rate=nan"},
               {"worker: --learning_rate: must be positive"}),
        Worker("UnknownOptimizer", {"--optimizer=nope"},
               {"worker: --optimizer: unknown optimizer \"nope\" (known: sgd, "
                "momentum, adagrad, adam, ftrl)"}),
        Worker("HiddenUnitsNotNumbers", {"--hidden_units=a,b"},
               {"worker: --hidden_units: \"a\" is not a positive integer "
                "(e.g. 64,32)"}),
        Worker("ZeroHiddenUnits", {"--hidden_units=64,0"},
               {"--hidden_units: \"0\" is not a positive integer"}),
        // Found before training, not when writing at the end.
        Worker("MetricsOutInAMissingDirectory",
               {"--metrics_out=$DIR/missing/m.json"},
               {"worker: --metrics_out: cannot write $DIR/missing/m.json: "
                "$DIR/missing: No such file or directory"}),
        Worker("MetricsOutIsADirectory", {"--metrics_out=$DIR"},
               {"worker: --metrics_out: cannot write $DIR: it is a "
                "directory"}),
        Worker("ZeroPsFailureTimeout", {"--ps_failure_timeout=0s"},
               {"worker: --ps_failure_timeout: must be positive"}),
        Worker("NoReplicas", {"--num_cpu_replicas=0"},
               {"worker: --num_cpu_replicas: must be in 1..256"}),
        Worker("TooManyReplicas", {"--num_cpu_replicas=1000"},
               {"--num_cpu_replicas: must be in 1..256"}),
        Worker(
            "UnknownDevices", {"--devices=tpu"},
            {"worker: --devices: \"tpu\" is not auto, cpu, gpu or gpu:<ids>"}),
        Worker("BadGpuNumber", {"--devices=gpu:0,x"},
               {"worker: --devices: \"x\" in \"gpu:0,x\" is not a GPU "
                "number"}),
        // This machine has no GPU: asking for one is an error, not a quiet
        // fallback to CPUs.
        Worker("GpuRequestedWhereThereIsNone", {"--devices=gpu"},
               {"GPUs were requested, but there is no usable GPU: "},
               /*exit_code=*/1),
        Worker(
            "UnknownDataFormat", {"--data_format=json"},
            {"worker: --data_format: \"json\" is not libsvm, csv or tfrecord"}),
        Worker("UnknownStrategy", {"--strategy=tpu"},
               {"worker: --strategy: unknown strategy \"tpu\"; known: auto, "
                "one_device, mirrored, central_storage, parameter_server, "
                "multi_worker_mirrored"}),
        Worker("NegativeFeatures", {"--num_features=-1"},
               {"worker: --num_features: must not be negative"}),
        Worker("NegativeClasses", {"--num_classes=-1"},
               {"worker: --num_classes: must not be negative"}),
        Worker("NegativeCheckpointSteps", {"--checkpoint_every_steps=-1"},
               {"worker: --checkpoint_every_steps: must not be negative"}),
        Worker("NegativeCheckpointSecs", {"--checkpoint_every_secs=-1"},
               {"worker: --checkpoint_every_secs: must not be negative"}),
        Worker("NegativeKeep", {"--keep_checkpoints=-1"},
               {"worker: --keep_checkpoints: must not be negative"}),
        Worker("ZeroLogInterval", {"--log_every_secs=0"},
               {"worker: --log_every_secs: must be positive"}),
        Worker("ZeroWait", {"--wait_secs=0"},
               {"worker: --wait_secs: must be positive"}),
        Worker("ZeroCollectiveTimeout", {"--collective_timeout_secs=0"},
               {"worker: --collective_timeout_secs: must be positive"}),
        Worker("ReadAheadWithoutParameterServers",
               {"--read_ahead", "--strategy=mirrored"},
               {"worker: --read_ahead: needs parameter servers"}),
        Worker("PushInBackgroundWithoutParameterServers",
               {"--push_in_background", "--strategy=mirrored"},
               {"worker: --push_in_background: needs parameter servers"}),
        Worker("BucketSmallerThanAFloat", {"--all_reduce_bucket_bytes=3"},
               {"worker: --all_reduce_bucket_bytes: must be at least 4 (one "
                "float)"}),
        Worker("MetricsPort70000", {"--metrics_port=70000"},
               {"worker: --metrics_port: metrics server on 127.0.0.1:70000: "
                "port is not in [0, 65535]"}),
        Worker("PositionalArgument", {"train"},
               {"worker: unexpected argument \"train\" (see --help)"}),
        Worker("TokenWithoutTls", {"--cluster_token_file=$DIR/short_token"},
               {"worker: --cluster_token_file needs TLS"}),
        Worker("KeyOfAnotherCertificate",
               {"--tls_cert=$DIR/cert.pem", "--tls_key=$DIR/other_key.pem",
                "--tls_ca=$DIR/ca.pem"},
               {"worker: --tls_key=$DIR/other_key.pem is not the key of "
                "--tls_cert=$DIR/cert.pem"}),
        Worker("MissingTokenFile",
               TlsAnd({"--cluster_token_file=$DIR/no_token"}),
               {"worker: --cluster_token_file=$DIR/no_token: cannot read the "
                "file"}),
        // Checked once the model is built from the data.
        Worker(
            "UnknownModel", {"--model=resnet"},
            {"worker: INVALID_ARGUMENT: model config: unknown model name "
             "\"resnet\"; known: linear, logreg, mlp, torchscript, wide_deep"}),
        Worker("ZeroEmbeddingDim", {"--model=wide_deep", "--embedding_dim=0"},
               {"worker: INVALID_ARGUMENT: model config: embedding_dim must be "
                "in [1, 2^20], got 0"}),
        Worker("OneClass", {"--model=mlp", "--num_classes=1"},
               {"worker: INVALID_ARGUMENT: model config: num_classes must be "
                ">= 2 for mlp, got 1"}),
        Worker("UnknownCrossDeviceOps", {"--cross_device_ops=nccl2"},
               {"worker: INVALID_ARGUMENT: unknown cross-device ops "
                "\"nccl2\"; known: auto, reduction_to_one_device, "
                "hierarchical_copy, cpu_all_reduce"}),
        // On CPU devices (this machine has no GPU).
        Worker("NcclWithoutGpus", {"--devices=cpu", "--cross_device_ops=nccl"},
               {"worker: INVALID_ARGUMENT: cross-device ops \"nccl\" needs "
                "GPU devices"}),
        Unparsable("DurationNotADuration", kWorkerBinary,
                   {"--ps_failure_timeout=banana"},
                   "ERROR: Illegal value 'banana' specified for flag "
                   "'ps_failure_timeout'")),
    FlagCaseName);

// ---------------------------------------------------------------------------
// Data files

struct DataCase {
  std::string name;
  std::string file;      // written in the test's directory; "" for none
  std::string contents;  // of `file`
  std::vector<std::string> flags;  // "$DIR": the test's directory
  int exit_code;
  std::vector<std::string> error;  // parts of the stderr line; "$DIR" too
};

void PrintTo(const DataCase& c, std::ostream* os) { *os << c.name; }

std::string DataCaseName(const ::testing::TestParamInfo<DataCase>& info) {
  return info.param.name;
}

// 64 good LIBSVM lines of a binary problem, with features 1..20.
std::string GoodLibsvm() {
  std::string text;
  for (int i = 0; i < 64; ++i) {
    absl::StrAppend(&text, i % 2, " ", 1 + i % 7, ":1 ", 8 + i % 13, ":0.5\n");
  }
  return text;
}

// Bytes that are no text at all: none of them whitespace, '#' or a newline,
// so the whole run is one token of line 1.
std::string BinaryGarbage() {
  std::string bytes;
  for (int i = 0; i < 256; ++i) {
    bytes.push_back(static_cast<char>(0x80 + i % 128));
  }
  return bytes + "\n";
}

// The good file with line `line` (1-based) replaced.
std::string GoodLibsvmWithLine(int line, const std::string& replacement) {
  std::string text;
  int number = 0;
  for (absl::string_view l : absl::StrSplit(GoodLibsvm(), '\n')) {
    if (l.empty()) continue;
    ++number;
    absl::StrAppend(&text, number == line ? replacement : std::string(l), "\n");
  }
  return text;
}

class BadDataTest : public ::testing::TestWithParam<DataCase> {};

TEST_P(BadDataTest, IsRefusedNamingTheFileAndLine) {
  const DataCase& c = GetParam();
  TestDir dir;
  dir.WriteFile("good.svm", GoodLibsvm());
  dir.WriteFile("good.csv", "1,0.5,0.25\n0,0.125,1\n2,1,1\n");
  ASSERT_TRUE(std::filesystem::create_directory(dir.path() + "/empty_dir"));
  if (!c.file.empty()) dir.WriteFile(c.file, c.contents);
  SubprocessOptions options;
  options.argv = {kWorkerBinary, "--train_steps=2", "--global_batch_size=8",
                  "--log_every_secs=60"};
  for (const std::string& flag : c.flags) {
    options.argv.push_back(InDir(flag, dir.path()));
  }
  options.env["TF_CONFIG"] = std::nullopt;  // trains alone
  ExpectRefused(RunToEnd(options), c.exit_code,
                "worker: ", InDir(c.error, dir.path()));
}

DataCase Libsvm(std::string name, std::string contents, std::string error) {
  return {std::move(name),
          "bad.svm",
          std::move(contents),
          {"--train_data=$DIR/bad.svm"},
          2,
          {"worker: INVALID_ARGUMENT: $DIR/bad.svm:" + std::move(error)}};
}

DataCase Csv(std::string name, std::string contents, std::string error) {
  return {std::move(name),
          "bad.csv",
          std::move(contents),
          {"--train_data=$DIR/bad.csv", "--model=mlp"},
          2,
          {"worker: INVALID_ARGUMENT: $DIR/bad.csv:" + std::move(error)}};
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, BadDataTest,
    ::testing::Values(
        Libsvm("LabelNotANumber", "1 1:1 2:1\nx 1:1\n",
               "2: label \"x\" is not a number"),
        Libsvm("ValueNotANumber", "1 1:1 2:1\n0 3:abc\n",
               "2: feature \"3:abc\": value \"abc\" is not a number"),
        Libsvm("NegativeIndex", "1 1:1\n0 -2:1\n",
               "2: feature \"-2:1\": index -2 is negative"),
        Libsvm("RepeatedIndex", "1 1:1 2:1\n0 3:1 3:2\n",
               "2: feature \"3:2\": index 3 is not greater than the previous "
               "index 3; indices must be strictly increasing"),
        Libsvm("DecreasingIndex", "1 1:1 2:1\n0 3:1 2:2\n",
               "2: feature \"2:2\": index 2 is not greater than the previous "
               "index 3"),
        Libsvm("FeatureWithoutColon", "1 1:1\n1 1\n",
               "2: feature \"1\" has no ':' (expected index:value)"),
        Libsvm("NanValue", "1 1:nan\n",
               "1: feature \"1:nan\": value \"nan\" is not finite"),
        Libsvm("OverflowingValue", "1 1:1e400\n",
               "1: feature \"1:1e400\": value \"1e400\" is not finite"),
        Libsvm("IndexBeyondInt64", "1 99999999999999999999:1\n",
               "1: feature \"99999999999999999999:1\": index "
               "\"99999999999999999999\" is not an integer"),
        Libsvm("QueryIdNotANumber", "1 1:1\n1 qid:x 2:1\n",
               "2: \"qid:x\": query id \"x\" is not an integer"),
        Libsvm("BadLineFarDown", GoodLibsvmWithLine(50, "1 4:1 5:one"),
               "50: feature \"5:one\": value \"one\" is not a number"),
        Libsvm("BinaryGarbage", BinaryGarbage(), "1: label \""),
        // The line's bytes from the NUL on are lost from the message (the
        // worker prints it with %s), but the file and line are there.
        Libsvm("NulByte", std::string("1 1:1\n\x01\x00\x02 3:1\n", 14),
               "2: label \"\\x01\\x00\\x02\" is not a number"),
        // A 1 MiB token is cut to 64 bytes in the message.
        Libsvm("HugeToken", "1 1:1\n" + std::string(1 << 20, 'x') + " 3:1\n",
               absl::StrCat("2: label \"", std::string(64, 'x'),
                            "...\" (1048576 bytes) is not a number")),
        Csv("RaggedRow", "1,2,3\n0,1\n", "2: 2 columns, expected 3"),
        Csv("CellNotANumber", "1,2,3\n0,abc,1\n",
            "2: column 2: \"abc\" is not a number"),
        Csv("QuotedCell", "1,\"2\",3\n",
            "1: column 2: quoted fields are not "
            "supported"),
        Csv("InfiniteCell", "1,2,3\n0,inf,1\n", "2: column 2:"),
        DataCase{"LibsvmReadAsCsv",
                 "",
                 "",
                 {"--train_data=$DIR/good.svm", "--data_format=csv"},
                 2,
                 {"worker: INVALID_ARGUMENT: $DIR/good.svm:1: column 1: "
                  "\"0 1:1 8:0.5\" is not a number"}},
        DataCase{"CsvReadAsLibsvm",
                 "",
                 "",
                 {"--train_data=$DIR/good.csv", "--data_format=libsvm",
                  "--model=mlp"},
                 2,
                 {"worker: INVALID_ARGUMENT: $DIR/good.csv:1: label "
                  "\"1,0.5,0.25\" is not a number"}},
        DataCase{"SecondFileBad",
                 "bad.svm",
                 "1 1:1\n0 2:x\n",
                 {"--train_data=$DIR/good.svm,$DIR/bad.svm"},
                 2,
                 {"$DIR/bad.svm:2: feature \"2:x\": value \"x\" is not a "
                  "number"}},
        DataCase{"EmptyFile",
                 "bad.svm",
                 "",
                 {"--train_data=$DIR/bad.svm"},
                 2,
                 {"worker: INVALID_ARGUMENT: --train_data holds no features; "
                  "check the files and --data_format"}},
        DataCase{"OnlyComments",
                 "bad.svm",
                 "# nothing\n\n   \n",
                 {"--train_data=$DIR/bad.svm"},
                 2,
                 {"--train_data holds no features"}},
        DataCase{"EmptyCsv",
                 "bad.csv",
                 "",
                 {"--train_data=$DIR/bad.csv", "--model=mlp"},
                 2,
                 {"--train_data holds no features"}},
        // Not there at all: NOT_FOUND, which the worker exits with as 1.
        DataCase{"MissingFile",
                 "",
                 "",
                 {"--train_data=$DIR/missing.svm"},
                 1,
                 {"worker: NOT_FOUND: --train_data: input \"$DIR/missing.svm\" "
                  "does not exist"}},
        DataCase{"GlobMatchingNothing",
                 "",
                 "",
                 {"--train_data=$DIR/x*.svm"},
                 1,
                 {"worker: NOT_FOUND: --train_data: no input files match "
                  "\"$DIR/x*.svm\""}},
        DataCase{"EmptyDirectory",
                 "",
                 "",
                 {"--train_data=$DIR/empty_dir"},
                 1,
                 {"worker: NOT_FOUND: --train_data: no input files in "
                  "\"$DIR/empty_dir\""}},
        // Well-formed lines that the model cannot take.
        DataCase{"LabelNotBinary",
                 "bad.svm",
                 GoodLibsvmWithLine(50, "5 1:1 2:1"),
                 {"--train_data=$DIR/bad.svm", "--shuffle=false",
                  "--train_steps=20"},
                 2,
                 {"worker: INVALID_ARGUMENT: ", "label 5 is not 0 or 1"}},
        DataCase{
            "ClassOutOfRange",
            "bad.csv",
            "1,0.5\n0,0.25\n7,1\n",
            {"--train_data=$DIR/bad.csv", "--model=mlp", "--num_classes=3"},
            2,
            {"worker: INVALID_ARGUMENT: ",
             "label 7 is not a class id in [0, 3)"}},
        DataCase{"FeatureBeyondNumFeatures",
                 "",
                 "",
                 {"--train_data=$DIR/good.svm", "--model=linear",
                  "--num_features=5"},
                 2,
                 {"worker: INVALID_ARGUMENT: $DIR/good.svm:1: feature id 8 "
                  "(1-based) but the model has 5 features (--num_features, or "
                  "the training data's largest id)"}},
        DataCase{"HugeFeatureIndex",
                 "bad.svm",
                 "1 9223372036854775806:1\n",
                 {"--train_data=$DIR/bad.svm"},
                 2,
                 {"worker: INVALID_ARGUMENT: model config: variable "
                  "\"logreg/weights\": shape [9223372036854775806, 1] has "
                  "more than 2^40 elements"}},
        // Evaluation data.
        DataCase{
            "EvalDataBadLine",
            "bad.svm",
            "1 1:1\nx 1:1\n",
            {"--train_data=$DIR/good.svm", "--eval_data=$DIR/bad.svm"},
            2,
            {"worker: INVALID_ARGUMENT: --eval_data: $DIR/bad.svm:2: label "
             "\"x\" is "
             "not a number"}},
        DataCase{"EvalDataMissing",
                 "",
                 "",
                 {"--train_data=$DIR/good.svm", "--eval_data=$DIR/missing.svm"},
                 1,
                 {"worker: NOT_FOUND: --eval_data: input \"$DIR/missing.svm\" "
                  "does not exist"}}),
    DataCaseName);

// Bad evaluation data is found before training: the chief reads
// --eval_data up front (worker/training_job.cc), not after training (and
// checkpointing) to the end.
TEST(BadDataFoundEarlyTest, BadEvalDataIsFoundBeforeTraining) {
  TestDir dir;
  dir.WriteFile("good.svm", GoodLibsvm());
  SubprocessOptions options;
  options.argv = {kWorkerBinary,
                  "--train_steps=20000",
                  "--global_batch_size=8",
                  "--log_every_secs=60",
                  "--train_data=" + dir.path() + "/good.svm",
                  "--eval_data=" + dir.path() + "/missing.svm"};
  options.env["TF_CONFIG"] = std::nullopt;
  const SubprocessResult result = RunToEnd(options);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.stderr_text, HasSubstr("--eval_data"));
  // "training from global step 0 on N examples" starts the training loop.
  EXPECT_THAT(result.stdout_text, Not(HasSubstr("training from global step")));
}

// A label the model cannot take is found while the data is fitted to the
// model (worker/job_model.cc), before training, and named by its file and
// line rather than its place in a batch.
TEST(BadDataFoundEarlyTest, ALabelTheModelCannotTakeNamesItsFileAndLine) {
  TestDir dir;
  const std::string path =
      dir.WriteFile("bad.svm", GoodLibsvmWithLine(50, "5 1:1 2:1"));
  SubprocessOptions options;
  options.argv = {kWorkerBinary, "--train_steps=20", "--global_batch_size=8",
                  "--shuffle=false", "--train_data=" + path};
  options.env["TF_CONFIG"] = std::nullopt;
  ExpectRefused(RunToEnd(options), 2, "worker: ", {path + ":50:", "label"});
}

// ---------------------------------------------------------------------------
// Checkpoints

// The files of a checkpoint root copied for one case, and of the other
// saves a case may take files from.
struct CheckpointFiles {
  std::string root;    // a copy of a root holding one committed checkpoint
  std::string ckpt;    // root/ckpt-000000000010
  std::string shard0;  // ckpt/shard-00000-of-00002.ckpt
  std::string shard1;  // ckpt/shard-00001-of-00002.ckpt
  std::string one_task_shard;  // of a save of the model by one ps task
  std::string step20_shard1;   // shard 1 of a later save (step 20)
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  EXPECT_TRUE(out.good()) << path;
}

void Truncate(const std::string& path, int64_t size) {
  std::filesystem::resize_file(path, size);
}

// Flips bit `bit` of the byte at `offset` (from the end when negative).
void FlipBit(const std::string& path, int64_t offset, int bit) {
  std::string bytes = ReadAll(path);
  const int64_t at = offset >= 0 ? offset : bytes.size() + offset;
  ASSERT_LT(at, static_cast<int64_t>(bytes.size()));
  bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
  WriteAll(path, bytes);
}

// Rewrites the header of the shard file at `path` with `change` applied and
// a correct CRC32C: a file whose checksums all match but whose header says
// something impossible. (The preamble's integers are little-endian, as this
// host's: rpc/tensor_codec.h asserts it.)
void RewriteHeader(
    const std::string& path,
    const std::function<void(ps::CheckpointShardHeader&)>& change) {
  const std::string bytes = ReadAll(path);
  uint32_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data() + 8, 4);
  ps::CheckpointShardHeader header;
  ASSERT_TRUE(header.ParseFromString(bytes.substr(16, header_bytes)));
  change(header);
  const std::string serialized = header.SerializeAsString();
  const uint32_t size = serialized.size();
  const uint32_t crc = Crc32c(serialized);
  std::string out = bytes.substr(0, 8);
  out.append(reinterpret_cast<const char*>(&size), 4);
  out.append(reinterpret_cast<const char*>(&crc), 4);
  out += serialized;
  out += bytes.substr(16 + header_bytes);
  WriteAll(path, out);
}

struct CheckpointCase {
  std::string name;
  std::function<void(const CheckpointFiles&)> damage;
  absl::StatusCode code;
  // Parts of PsClient::Restore's message; "$ROOT" and "$CKPT" stand for
  // the paths.
  std::vector<std::string> error;
  // The ps tasks that, restarted with --checkpoint_dir=root, refuse to serve
  // (exit 2, naming `restart_error`, or `error` when it is empty). A task
  // whose own shard is sound takes it back; none does where the root has no
  // committed checkpoint (it starts empty, as in a new job).
  std::vector<int> restart_refused_by = {0, 1};
  std::vector<std::string> restart_error = {};
};

void PrintTo(const CheckpointCase& c, std::ostream* os) { *os << c.name; }

std::string CheckpointCaseName(
    const ::testing::TestParamInfo<CheckpointCase>& info) {
  return info.param.name;
}

class CorruptCheckpointTest : public ::testing::TestWithParam<CheckpointCase> {
 protected:
  // Two ps tasks train a little, save at step 10 (the checkpoint the cases
  // damage) and at step 20 (to another root), and train on, so that what
  // they hold is in neither checkpoint: a restore that loaded anything
  // would show. One ps task saves the same model at step 10 too.
  static void SetUpTestSuite() {
    saves_ = new TestDir();
    absl::StatusOr<std::vector<PsProcess>> tasks = testing::StartPsProcesses(2);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    tasks_ = new std::vector<PsProcess>(*std::move(tasks));
    client_ = ClientOf(*tasks_).release();
    ASSERT_NE(client_, nullptr);
    model_ = new CheckpointModel(CreateCheckpointModel(*client_, 2));
    for (int seed = 1; seed <= 3; ++seed)
      TrainCheckpointModel(*client_, *model_, seed);
    ASSERT_TRUE(client_->Save(saves_->path() + "/step10", 10, 0).ok());
    TrainCheckpointModel(*client_, *model_, 4);
    ASSERT_TRUE(client_->Save(saves_->path() + "/step20", 20, 0).ok());
    TrainCheckpointModel(*client_, *model_, 5);

    absl::StatusOr<std::vector<PsProcess>> one = testing::StartPsProcesses(1);
    ASSERT_TRUE(one.ok()) << one.status();
    std::unique_ptr<PsClient> one_client = ClientOf(*one);
    ASSERT_NE(one_client, nullptr);
    const CheckpointModel one_model = CreateCheckpointModel(*one_client, 2);
    TrainCheckpointModel(*one_client, one_model, 1);
    ASSERT_TRUE(one_client->Save(saves_->path() + "/one_task", 10, 0).ok());
    ready_ = true;
  }

  static void TearDownTestSuite() {
    delete model_;
    delete client_;
    delete tasks_;  // kills the ps tasks
    delete saves_;
    model_ = nullptr;
    client_ = nullptr;
    tasks_ = nullptr;
    saves_ = nullptr;
    ready_ = false;
  }

  void SetUp() override { ASSERT_TRUE(ready_) << "the suite's set-up failed"; }

  static bool ready_;
  static TestDir* saves_;
  static std::vector<PsProcess>* tasks_;
  static PsClient* client_;
  static CheckpointModel* model_;
};

bool CorruptCheckpointTest::ready_ = false;
TestDir* CorruptCheckpointTest::saves_ = nullptr;
std::vector<PsProcess>* CorruptCheckpointTest::tasks_ = nullptr;
PsClient* CorruptCheckpointTest::client_ = nullptr;
CheckpointModel* CorruptCheckpointTest::model_ = nullptr;

TEST_P(CorruptCheckpointTest, IsRefusedNamingTheFileAndChangesNothing) {
  const CheckpointCase& c = GetParam();
  TestDir dir;
  CheckpointFiles files;
  files.root = dir.path() + "/root";
  std::filesystem::copy(saves_->path() + "/step10", files.root,
                        std::filesystem::copy_options::recursive);
  files.ckpt = files.root + "/ckpt-000000000010";
  files.shard0 = files.ckpt + "/shard-00000-of-00002.ckpt";
  files.shard1 = files.ckpt + "/shard-00001-of-00002.ckpt";
  files.one_task_shard =
      saves_->path() + "/one_task/ckpt-000000000010/shard-00000-of-00001.ckpt";
  files.step20_shard1 =
      saves_->path() + "/step20/ckpt-000000000020/shard-00001-of-00002.ckpt";
  ASSERT_TRUE(std::filesystem::exists(files.shard1));
  ASSERT_NO_FATAL_FAILURE(c.damage(files));
  auto paths = [&files](const std::vector<std::string>& texts) {
    std::vector<std::string> out;
    for (const std::string& text : texts) {
      out.push_back(absl::StrReplaceAll(
          text, {{"$ROOT", files.root}, {"$CKPT", files.ckpt}}));
    }
    return out;
  };

  const ModelSnapshot before = PullModel(*client_, *model_);
  absl::StatusOr<CheckpointRestored> restored = client_->Restore(files.root);
  ASSERT_FALSE(restored.ok()) << "restored " << restored->checkpoint;
  EXPECT_EQ(restored.status().code(), c.code) << restored.status();
  for (const std::string& part : paths(c.error)) {
    EXPECT_THAT(restored.status().message(), HasSubstr(part));
  }
  EXPECT_TRUE(PullModel(*client_, *model_).BitwiseEquals(before))
      << "a refused restore changed what the ps tasks hold";

  // A ps task restarted with the job's --checkpoint_dir refuses to serve
  // from it, and says why in one line.
  for (int index : c.restart_refused_by) {
    SCOPED_TRACE(absl::StrCat("ps task ", index, " restarted"));
    SubprocessOptions options;
    options.argv = {kPsServerBinary, "--port=0", "--bind_host=127.0.0.1",
                    "--checkpoint_dir=" + files.root};
    options.env["TF_CONFIG"] = PsTfConfig(index, 2);
    const SubprocessResult result = RunToEnd(options);
    ExpectRefused(result, 2, "ps_server: ",
                  paths(c.restart_error.empty() ? c.error : c.restart_error));
    EXPECT_THAT(result.stdout_text, Not(HasSubstr("serving")));
  }
}

constexpr absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;
constexpr absl::StatusCode kNotFound = absl::StatusCode::kNotFound;
constexpr absl::StatusCode kFailedPrecondition =
    absl::StatusCode::kFailedPrecondition;
constexpr char kShard1[] = "$CKPT/shard-00001-of-00002.ckpt";

std::string Shard1(const std::string& message) {
  return absl::StrCat(kShard1, message);
}

INSTANTIATE_TEST_SUITE_P(
    Damaged, CorruptCheckpointTest,
    ::testing::Values(
        // Truncated.
        CheckpointCase{"ShardCutToHalf",
                       [](const CheckpointFiles& f) {
                         Truncate(f.shard1,
                                  std::filesystem::file_size(f.shard1) / 2);
                       },
                       kDataLoss,
                       {kShard1, "(truncated or corrupt)"}},
        CheckpointCase{"ShardWithoutItsLastByte",
                       [](const CheckpointFiles& f) {
                         Truncate(f.shard1,
                                  std::filesystem::file_size(f.shard1) - 1);
                       },
                       kDataLoss,
                       {kShard1, "lies outside the data section",
                        "(truncated or corrupt)"}},
        CheckpointCase{"ShardCutTo10Bytes",
                       [](const CheckpointFiles& f) { Truncate(f.shard1, 10); },
                       kDataLoss,
                       {Shard1(" is not a checkpoint shard: it has 10 bytes, "
                               "fewer than the 16-byte preamble "
                               "(truncated?)")}},
        CheckpointCase{"ShardEmpty",
                       [](const CheckpointFiles& f) { Truncate(f.shard0, 0); },
                       kDataLoss,
                       {"$CKPT/shard-00000-of-00002.ckpt is not a checkpoint "
                        "shard: it has 0 bytes"}},
        // Bit flips.
        CheckpointCase{
            "BitFlippedInTheMagic",
            [](const CheckpointFiles& f) { FlipBit(f.shard1, 2, 0); },
            kDataLoss,
            {Shard1(" is not a checkpoint shard: it starts with "
                    "\"DTBKPT01\", not \"DTCKPT01\"")}},
        CheckpointCase{"BitFlippedInTheHeaderLength",
                       [](const CheckpointFiles& f) {
                         FlipBit(f.shard1, 11, 6);  // + 2^30
                       },
                       kDataLoss,
                       {Shard1(": the header length "),
                        "bytes after the preamble (truncated or corrupt)"}},
        CheckpointCase{
            "BitFlippedInTheHeaderChecksum",
            [](const CheckpointFiles& f) { FlipBit(f.shard1, 12, 0); },
            kDataLoss,
            {Shard1(": the header is corrupt: its CRC32C is 0x"),
             ", the preamble says 0x"}},
        CheckpointCase{
            "BitFlippedInTheHeader",
            [](const CheckpointFiles& f) { FlipBit(f.shard1, 40, 3); },
            kDataLoss,
            {Shard1(": the header is corrupt: its CRC32C is 0x")}},
        CheckpointCase{
            "BitFlippedInTheLastTensor",
            [](const CheckpointFiles& f) { FlipBit(f.shard1, -3, 6); },
            kDataLoss,
            {Shard1(": "), "is corrupt: its CRC32C is 0x",
             ", the header says 0x"}},
        CheckpointCase{"ShardReplacedByGarbage",
                       [](const CheckpointFiles& f) {
                         WriteAll(
                             f.shard0,
                             std::string(std::filesystem::file_size(f.shard0),
                                         '\xa5'));
                       },
                       kDataLoss,
                       {"$CKPT/shard-00000-of-00002.ckpt is not a checkpoint "
                        "shard: it starts with \"\\xa5\\xa5\\xa5"}},
        // Checksums that match headers that lie, with huge sizes.
        CheckpointCase{
            "TensorLengthOf2To62Bytes",
            [](const CheckpointFiles& f) {
              RewriteHeader(f.shard1, [](ps::CheckpointShardHeader& h) {
                h.mutable_variables(0)->mutable_values()->set_length(int64_t{1}
                                                                     << 62);
              });
            },
            kDataLoss,
            {Shard1(": "), "has 4611686018427387904 bytes, expected"},
            /*restart_refused_by=*/{1}},
        CheckpointCase{
            "TensorOffsetPastTheEnd",
            [](const CheckpointFiles& f) {
              RewriteHeader(f.shard1, [](ps::CheckpointShardHeader& h) {
                h.mutable_variables(0)->mutable_values()->set_offset(int64_t{1}
                                                                     << 40);
              });
            },
            kDataLoss,
            {Shard1(": "), "lies outside the data section"},
            /*restart_refused_by=*/{1}},
        CheckpointCase{
            "HashTableOf2To62Rows",
            [](const CheckpointFiles& f) {
              RewriteHeader(f.shard1, [](ps::CheckpointShardHeader& h) {
                h.mutable_hash_tables(0)->set_num_rows(int64_t{1} << 62);
              });
            },
            kDataLoss,
            {Shard1(": "),
             "has 4611686018427387904 rows, more than "
             "the"}},
        CheckpointCase{
            "RowsPastTheVariablesEnd",
            [](const CheckpointFiles& f) {
              RewriteHeader(f.shard1, [](ps::CheckpointShardHeader& h) {
                for (ps::SavedVariable& v : *h.mutable_variables()) {
                  if (v.spec().name() == "emb") {
                    v.mutable_rows()->set_end(int64_t{1} << 50);
                  }
                }
              });
            },
            kDataLoss,
            {Shard1(": variable \"emb\" rows [5, 1125899906842624) "
                    "are not within its 9 rows")},
            // Task 1 re-creates the part from its header first.
            {0, 1},
            {Shard1(": variable \"emb\""),
             "rows [5, 1125899906842624) are not within"}},
        CheckpointCase{"NegativeStep",
                       [](const CheckpointFiles& f) {
                         for (const std::string& shard : {f.shard0, f.shard1}) {
                           RewriteHeader(shard,
                                         [](ps::CheckpointShardHeader& h) {
                                           h.set_step(-10);
                                         });
                         }
                       },
                       kDataLoss,
                       {"$CKPT/shard-00000-of-00002.ckpt: its header says step "
                        "-10; steps are never negative"}},
        // Shard files missing, or of other saves.
        CheckpointCase{
            "ShardMissing",
            [](const CheckpointFiles& f) { std::filesystem::remove(f.shard1); },
            kFailedPrecondition,
            {"checkpoint $CKPT is missing shard-00001-of-00002.ckpt "
             "(1 of 2 shard files missing; did every ps task "
             "save?)"}},
        CheckpointCase{"AllShardsMissing",
                       [](const CheckpointFiles& f) {
                         std::filesystem::remove(f.shard0);
                         std::filesystem::remove(f.shard1);
                       },
                       kNotFound,
                       {"checkpoint $CKPT holds no shard files "
                        "(shard-*-of-*.ckpt)"}},
        CheckpointCase{"CheckpointDirectoryMissing",
                       [](const CheckpointFiles& f) {
                         std::filesystem::remove_all(f.ckpt);
                       },
                       kNotFound,
                       {"the latest checkpoint listed in $ROOT/checkpoints, "
                        "ckpt-000000000010, does not exist"}},
        CheckpointCase{"ShardOfAOneTaskSaveBeside",
                       [](const CheckpointFiles& f) {
                         std::filesystem::copy_file(
                             f.one_task_shard,
                             f.ckpt + "/shard-00000-of-00001.ckpt");
                       },
                       kFailedPrecondition,
                       {"checkpoint $CKPT holds shard files of saves by "
                        "different numbers of ps tasks: "
                        "shard-00000-of-00001.ckpt and "
                        "shard-00000-of-00002.ckpt"}},
        CheckpointCase{"ShardOfAOneTaskSaveInstead",
                       [](const CheckpointFiles& f) {
                         WriteAll(f.shard1, ReadAll(f.one_task_shard));
                       },
                       kDataLoss,
                       {Shard1(": its header says shard 0 of 1 at step 10, "
                               "expected shard 1 of 2 at step 10")}},
        CheckpointCase{"ShardOfALaterSave",
                       [](const CheckpointFiles& f) {
                         WriteAll(f.shard1, ReadAll(f.step20_shard1));
                       },
                       kDataLoss,
                       {Shard1(": its header says shard 1 of 2 at step 20, "
                               "expected shard 1 of 2 at step 10")}},
        CheckpointCase{"ShardsSwapped",
                       [](const CheckpointFiles& f) {
                         const std::string zero = ReadAll(f.shard0);
                         WriteAll(f.shard0, ReadAll(f.shard1));
                         WriteAll(f.shard1, zero);
                       },
                       kDataLoss,
                       {"$CKPT/shard-00000-of-00002.ckpt: its header says "
                        "shard 1 of 2 at step 10, expected shard 0 of 2 at "
                        "step 10"}},
        CheckpointCase{"ShardsRenamedToThreeTasks",
                       [](const CheckpointFiles& f) {
                         std::filesystem::rename(
                             f.shard0, f.ckpt + "/shard-00000-of-00003.ckpt");
                         std::filesystem::rename(
                             f.shard1, f.ckpt + "/shard-00001-of-00003.ckpt");
                       },
                       kFailedPrecondition,
                       {"checkpoint $CKPT is missing shard-00002-of-00003.ckpt "
                        "(1 of 3 shard files missing"}},
        CheckpointCase{"ShardIsADirectory",
                       [](const CheckpointFiles& f) {
                         std::filesystem::remove(f.shard1);
                         std::filesystem::create_directory(f.shard1);
                       },
                       absl::StatusCode::kFailedPrecondition,
                       {Shard1(" is not a regular file")}},
        CheckpointCase{"ShardIsALinkToDevZero",
                       [](const CheckpointFiles& f) {
                         std::filesystem::remove(f.shard1);
                         std::filesystem::create_symlink("/dev/zero", f.shard1);
                       },
                       absl::StatusCode::kFailedPrecondition,
                       {Shard1(" is not a regular file")}},
        // The index.
        CheckpointCase{"IndexMissing",
                       [](const CheckpointFiles& f) {
                         std::filesystem::remove(f.root + "/checkpoints");
                       },
                       kNotFound,
                       {"$ROOT holds no checkpoint: neither shard files "
                        "(shard-*-of-*.ckpt) nor committed checkpoints (an "
                        "index file \"checkpoints\" listing them); its 1 "
                        "ckpt-* directories were never committed"},
                       /*restart_refused_by=*/{}},
        CheckpointCase{"IndexListsNothing",
                       [](const CheckpointFiles& f) {
                         WriteAll(f.root + "/checkpoints", "# nothing yet\n");
                       },
                       kNotFound,
                       {"$ROOT/checkpoints lists no committed checkpoint"},
                       /*restart_refused_by=*/{}},
        CheckpointCase{"IndexWithAGarbageLine",
                       [](const CheckpointFiles& f) {
                         WriteAll(
                             f.root + "/checkpoints",
                             ReadAll(f.root + "/checkpoints") + "garbage\n");
                       },
                       kDataLoss,
                       {"$ROOT/checkpoints line ",
                        ": \"garbage\" is not a checkpoint directory name "
                        "(ckpt-<12-digit step>)"}},
        CheckpointCase{"IndexOfBinaryBytes",
                       [](const CheckpointFiles& f) {
                         WriteAll(f.root + "/checkpoints",
                                  std::string("\x00\xff\x01\n", 4));
                       },
                       kDataLoss,
                       {"$ROOT/checkpoints line 1: \"\\x00\\xff\\x01\" is not "
                        "a checkpoint directory name"}},
        CheckpointCase{"IndexNamingAPathOutside",
                       [](const CheckpointFiles& f) {
                         WriteAll(f.root + "/checkpoints",
                                  "../step10/ckpt-000000000010\n");
                       },
                       kDataLoss,
                       {"$ROOT/checkpoints line 1: "
                        "\"../step10/ckpt-000000000010\" is not a checkpoint "
                        "directory name"}},
        CheckpointCase{"IndexNamingAMissingCheckpoint",
                       [](const CheckpointFiles& f) {
                         WriteAll(f.root + "/checkpoints",
                                  "ckpt-000000000010\nckpt-000000000099\n");
                       },
                       kNotFound,
                       {"the latest checkpoint listed in $ROOT/checkpoints, "
                        "ckpt-000000000099, does not exist"}}),
    CheckpointCaseName);

// A named pipe where a file should be: ReadOnlyFile::Open
// (runtime/util/file_system.cc) opens with O_NONBLOCK so that it can
// refuse it instead of waiting for a writer forever (which once hung a
// Restore RPC, and a restarted ps_server's start-up with SIGTERM blocked).
INSTANTIATE_TEST_SUITE_P(
    NamedPipes, CorruptCheckpointTest,
    ::testing::Values(CheckpointCase{"ShardIsANamedPipe",
                                     [](const CheckpointFiles& f) {
                                       std::filesystem::remove(f.shard1);
                                       ASSERT_EQ(mkfifo(f.shard1.c_str(), 0600),
                                                 0);
                                     },
                                     absl::StatusCode::kFailedPrecondition,
                                     {Shard1(" is not a regular file")}},
                      CheckpointCase{
                          "IndexIsANamedPipe",
                          [](const CheckpointFiles& f) {
                            const std::string index = f.root + "/checkpoints";
                            std::filesystem::remove(index);
                            ASSERT_EQ(mkfifo(index.c_str(), 0600), 0);
                          },
                          absl::StatusCode::kFailedPrecondition,
                          {"$ROOT/checkpoints is not a regular file"}}),
    CheckpointCaseName);

}  // namespace
}  // namespace distrt
