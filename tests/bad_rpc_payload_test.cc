// Malformed requests to a real ps_server process: every RPC of the
// ParameterServer service with one thing wrong (an unknown name, a wrong
// dtype, shape, length, row range or id, a negative or huge size), sent
// through the generated stub; and message bytes that no client library would
// write (truncated, garbage, a tensor claiming more bytes than it carries),
// sent through grpc::GenericStub to the methods that decode their tensors
// themselves (rpc/wire_message.h).
//
// Each must be answered with its code and a message naming the variable,
// table or field; afterwards the task still serves (GetStatus, from the same
// incarnation), counted the request as failed, and holds exactly what it
// held before: the same variables and tables, the same values bit for bit.
// One ps task serves the whole suite, so it also survives all of them in a
// row.

#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps_service.grpc.pb.h"
#include "rpc/tensor_codec.h"
#include "rpc/wire_message.h"
#include "tests/util/byte_buffers.h"
#include "tests/util/ps_processes.h"

namespace distrt {
namespace {

using ::distrt::testing::PsProcess;
using ::testing::HasSubstr;
using Stub = ps::ParameterServer::Stub;

constexpr auto kDeadline = std::chrono::seconds(30);

// What the suite's ps task holds (created in SetUpTestSuite):
//   "w"     float32 [4, 2], SGD, all rows
//   "part"  float32 [6, 2], SGD, rows [2, 4) only (as one part of a
//           partitioned variable)
//   "step"  int64 scalar
//   "ids"   hash embedding table, dim 2, SGD
constexpr int64_t kHashIds[] = {1, -5, int64_t{1} << 40};

// ---------------------------------------------------------------------------
// Protobuf wire bytes by hand, for messages the generated code cannot write.

std::string Varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

constexpr int kVarint = 0;
constexpr int kLengthDelimited = 2;

std::string Tag(int field, int wire_type) {
  return Varint((static_cast<uint64_t>(field) << 3) | wire_type);
}

std::string VarintField(int field, uint64_t value) {
  return Tag(field, kVarint) + Varint(value);
}

std::string BytesField(int field, const std::string& bytes) {
  return Tag(field, kLengthDelimited) + Varint(bytes.size()) + bytes;
}

std::string FloatBytes(int n, float value) {
  std::vector<float> values(n, value);
  return std::string(reinterpret_cast<const char*>(values.data()),
                     values.size() * sizeof(float));
}

std::string Int64Bytes(const std::vector<int64_t>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()),
                     values.size() * sizeof(int64_t));
}

// A ps::Tensor: dtype, packed shape, and the elements' bytes.
std::string TensorBytes(ps::DataType dtype, const std::vector<int64_t>& shape,
                        const std::string& data) {
  std::string packed;
  for (int64_t dim : shape) packed += Varint(static_cast<uint64_t>(dim));
  return VarintField(1, dtype) + BytesField(2, packed) + BytesField(3, data);
}

// A well-formed PushDense request for "w" (8 float32s), as bytes.
std::string GoodPushDenseBytes() {
  return BytesField(1, "w") +
         BytesField(3, TensorBytes(ps::FLOAT32, {4, 2}, FloatBytes(8, 1)));
}

// ---------------------------------------------------------------------------
// Requests: a good one of each kind, which a case changes in one place.

ps::Tensor Float32Tensor(std::vector<int64_t> shape, int n, float value = 1) {
  ps::Tensor tensor;
  rpc::EncodeFloat32(std::vector<float>(n, value), std::move(shape), &tensor);
  return tensor;
}

ps::Tensor Int64Tensor(std::vector<int64_t> values) {
  ps::Tensor tensor;
  const int64_t n = static_cast<int64_t>(values.size());
  rpc::EncodeInt64(values, {n}, &tensor);
  return tensor;
}

ps::RowRange Rows(int64_t begin, int64_t end) {
  ps::RowRange rows;
  rows.set_begin(begin);
  rows.set_end(end);
  return rows;
}

ps::PushDenseRequest PushDense(std::string name = "w") {
  ps::PushDenseRequest request;
  request.set_name(std::move(name));
  *request.mutable_values() = Float32Tensor({4, 2}, 8);
  return request;
}

ps::PullDenseRequest PullDense(std::string name, ps::RowRange rows) {
  ps::PullDenseRequest request;
  request.set_name(std::move(name));
  *request.mutable_rows() = rows;
  return request;
}

ps::PullSparseRequest PullRows(std::string name, std::vector<int64_t> ids) {
  ps::PullSparseRequest request;
  request.set_name(std::move(name));
  *request.mutable_ids() = Int64Tensor(std::move(ids));
  return request;
}

// `ids` and a gradient row of two values for each.
ps::PushSparseRequest PushRows(std::string name, std::vector<int64_t> ids) {
  ps::PushSparseRequest request;
  request.set_name(std::move(name));
  const int n = static_cast<int>(ids.size());
  *request.mutable_ids() = Int64Tensor(std::move(ids));
  *request.mutable_gradients() = Float32Tensor({n, 2}, 2 * n);
  return request;
}

ps::CreateVariableRequest CreateVariable(std::string name,
                                         std::vector<int64_t> shape) {
  ps::CreateVariableRequest request;
  request.mutable_spec()->set_name(std::move(name));
  request.mutable_spec()->mutable_shape()->Assign(shape.begin(), shape.end());
  return request;
}

ps::CreateHashTableRequest CreateHashTable(std::string name, int64_t dim) {
  ps::CreateHashTableRequest request;
  request.mutable_spec()->set_name(std::move(name));
  request.mutable_spec()->set_dim(dim);
  return request;
}

// ---------------------------------------------------------------------------
// Calls.

template <typename Request, typename Response>
using StubMethod = grpc::Status (Stub::*)(grpc::ClientContext*, const Request&,
                                          Response*);

template <typename Request, typename Response>
grpc::Status Call(Stub& stub, StubMethod<Request, Response> method,
                  const Request& request, Response* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kDeadline);
  return (stub.*method)(&context, request, response);
}

// The ps task of the suite and its two ways in.
struct PsConnection {
  PsProcess ps;
  std::unique_ptr<Stub> stub;
  std::unique_ptr<grpc::GenericStub> generic;

  // `bytes` as the whole request message of `method` (e.g. "PushDense").
  grpc::Status CallRaw(const std::string& method, const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kDeadline);
    grpc::Status status;
    absl::Notification done;
    generic->UnaryCall(
        &context, absl::StrCat("/distrt.ps.ParameterServer/", method),
        grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
          status = std::move(s);
          done.Notify();
        });
    done.WaitForNotification();  // the deadline bounds the wait
    return status;
  }
};

// One malformed request and the answer it must get.
struct RpcCase {
  std::string name;
  std::function<grpc::Status(PsConnection&)> send;
  grpc::StatusCode code;
  std::vector<std::string> message;  // substrings of the error message
  // Whether the service itself sees the request (and counts it as failed):
  // false for bytes that gRPC cannot parse for a protobuf method.
  bool reaches_service = true;
};

void PrintTo(const RpcCase& c, std::ostream* os) { *os << c.name; }

template <typename Request, typename Response>
RpcCase StubCase(std::string name, StubMethod<Request, Response> method,
                 Request request, grpc::StatusCode code,
                 std::vector<std::string> message) {
  return {std::move(name),
          [method, request](PsConnection& c) {
            Response response;
            return Call(*c.stub, method, request, &response);
          },
          code, std::move(message)};
}

RpcCase RawCase(std::string name, std::string method, std::string bytes,
                grpc::StatusCode code, std::vector<std::string> message,
                bool reaches_service = true) {
  return {std::move(name),
          [method, bytes](PsConnection& c) { return c.CallRaw(method, bytes); },
          code, std::move(message), reaches_service};
}

// ---------------------------------------------------------------------------
// What the task holds, to compare before and after each request.

struct Holdings {
  uint64_t incarnation = 0;
  int64_t failed_requests = 0;
  int64_t num_variables = 0;
  int64_t variable_bytes = 0;
  int64_t variable_rows = 0;
  int64_t num_hash_tables = 0;
  int64_t hash_table_rows = 0;
  std::vector<std::string> variables;  // "name rows [b, e) step s bytes n"
  std::vector<std::string> hash_tables;
  // The raw bytes of every value: "w", "part", "step", the rows kHashIds.
  std::vector<std::string> values;
};

Holdings ReadHoldings(Stub& stub) {
  Holdings h;
  ps::GetStatusResponse status;
  grpc::Status s =
      Call(stub, &Stub::GetStatus, ps::GetStatusRequest(), &status);
  EXPECT_TRUE(s.ok()) << "the ps task no longer answers GetStatus: "
                      << s.error_message();
  h.incarnation = status.incarnation();
  h.failed_requests = status.failed_requests();
  h.num_variables = status.num_variables();
  h.variable_bytes = status.variable_bytes();
  h.variable_rows = status.variable_rows();
  h.num_hash_tables = status.num_hash_tables();
  h.hash_table_rows = status.hash_table_rows();

  ps::ListVariablesResponse list;
  EXPECT_TRUE(
      Call(stub, &Stub::ListVariables, ps::ListVariablesRequest(), &list).ok());
  for (const ps::VariableInfo& v : list.variables()) {
    h.variables.push_back(absl::StrCat(
        v.spec().name(), " rows [", v.rows_held().begin(), ", ",
        v.rows_held().end(), ") step ", v.step(), " bytes ", v.bytes()));
  }
  for (const ps::HashTableInfo& t : list.hash_tables()) {
    h.hash_tables.push_back(absl::StrCat(
        t.spec().name(), " dim ", t.spec().dim(), " rows ", t.num_rows()));
  }
  for (const char* name : {"w", "part", "step"}) {
    ps::PullDenseRequest pull;
    pull.set_name(name);
    ps::PullDenseResponse pulled;
    EXPECT_TRUE(Call(stub, &Stub::PullDense, pull, &pulled).ok()) << name;
    h.values.push_back(pulled.values().data());
  }
  ps::PullSparseResponse rows;
  EXPECT_TRUE(Call(stub, &Stub::PullHash,
                   PullRows("ids", {std::begin(kHashIds), std::end(kHashIds)}),
                   &rows)
                  .ok());
  h.values.push_back(rows.values().data());
  return h;
}

class BadRpcPayloadTest : public ::testing::TestWithParam<RpcCase> {
 protected:
  // One ps task for the suite, holding a little of everything, with values
  // moved away from their initial ones by good pushes.
  static void SetUpTestSuite() {
    absl::StatusOr<PsProcess> ps = testing::StartPsProcess(0, 1);
    ASSERT_TRUE(ps.ok()) << ps.status();
    connection_ = new PsConnection;
    connection_->ps = *std::move(ps);
    std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
        connection_->ps.address(), grpc::InsecureChannelCredentials());
    connection_->stub = ps::ParameterServer::NewStub(channel);
    connection_->generic = std::make_unique<grpc::GenericStub>(channel);
    Stub& stub = *connection_->stub;

    ps::VariableInfo info;
    ps::CreateVariableRequest w = CreateVariable("w", {4, 2});
    w.mutable_spec()->mutable_initializer()->set_kind(
        ps::InitializerConfig::CONSTANT);
    w.mutable_spec()->mutable_initializer()->set_value(0.5f);
    w.mutable_spec()->mutable_optimizer()->set_learning_rate(0.5f);
    ASSERT_TRUE(Call(stub, &Stub::CreateVariable, w, &info).ok());
    ps::CreateVariableRequest part = CreateVariable("part", {6, 2});
    part.mutable_spec()->mutable_initializer()->set_kind(
        ps::InitializerConfig::UNIFORM);
    *part.mutable_rows() = Rows(2, 4);
    ASSERT_TRUE(Call(stub, &Stub::CreateVariable, part, &info).ok());
    ps::CreateVariableRequest step = CreateVariable("step", {});
    step.mutable_spec()->set_dtype(ps::INT64);
    ASSERT_TRUE(Call(stub, &Stub::CreateVariable, step, &info).ok());
    ps::HashTableInfo table;
    ps::CreateHashTableRequest ids = CreateHashTable("ids", 2);
    ids.mutable_spec()->mutable_initializer()->set_kind(
        ps::InitializerConfig::UNIFORM);
    ASSERT_TRUE(Call(stub, &Stub::CreateHashTable, ids, &table).ok());

    // The good versions of the requests the cases break: each works.
    ps::PushDenseResponse pushed;
    ASSERT_TRUE(Call(stub, &Stub::PushDense, PushDense(), &pushed).ok());
    ps::PushDenseRequest add = PushDense("step");
    *add.mutable_values() = Int64Tensor({7});
    add.mutable_values()->clear_shape();
    ASSERT_TRUE(Call(stub, &Stub::PushDense, add, &pushed).ok());
    ps::PushSparseResponse sparse;
    ASSERT_TRUE(
        Call(stub, &Stub::PushSparse, PushRows("part", {3, 2}), &sparse).ok());
    ASSERT_TRUE(
        Call(stub, &Stub::PushHash, PushRows("ids", {1, -5}), &sparse).ok());
    ASSERT_TRUE(connection_->CallRaw("PushDense", GoodPushDenseBytes()).ok());
    // Hash-table rows are created when first pulled: these exist from now
    // on, so that reading them does not change what the task holds.
    ps::PullSparseResponse rows;
    ASSERT_TRUE(
        Call(stub, &Stub::PullHash,
             PullRows("ids", {std::begin(kHashIds), std::end(kHashIds)}), &rows)
            .ok());
  }

  static void TearDownTestSuite() {
    delete connection_;  // kills the ps task
    connection_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(connection_, nullptr);
    ASSERT_NE(connection_->stub, nullptr) << "the suite's set-up failed";
  }

  static PsConnection* connection_;
};

PsConnection* BadRpcPayloadTest::connection_ = nullptr;

TEST_P(BadRpcPayloadTest, IsRefusedNamingWhatIsWrongAndChangesNothing) {
  const RpcCase& c = GetParam();
  Stub& stub = *connection_->stub;
  const Holdings before = ReadHoldings(stub);

  const grpc::Status status = c.send(*connection_);
  EXPECT_EQ(status.error_code(), c.code) << status.error_message();
  for (const std::string& part : c.message) {
    EXPECT_THAT(status.error_message(), HasSubstr(part));
  }

  const Holdings after = ReadHoldings(stub);
  EXPECT_EQ(after.incarnation, before.incarnation) << "the ps task restarted";
  EXPECT_EQ(after.failed_requests,
            before.failed_requests + (c.reaches_service ? 1 : 0));
  EXPECT_EQ(after.num_variables, before.num_variables);
  EXPECT_EQ(after.variable_bytes, before.variable_bytes);
  EXPECT_EQ(after.variable_rows, before.variable_rows);
  EXPECT_EQ(after.num_hash_tables, before.num_hash_tables);
  EXPECT_EQ(after.hash_table_rows, before.hash_table_rows);
  EXPECT_EQ(after.variables, before.variables);
  EXPECT_EQ(after.hash_tables, before.hash_tables);
  const char* const names[] = {"w", "part", "step", "ids"};
  ASSERT_EQ(after.values.size(), std::size(names));
  ASSERT_EQ(before.values.size(), std::size(names));
  for (size_t i = 0; i < std::size(names); ++i) {
    // Compared as bytes: a float that changed to NaN is a change too.
    EXPECT_TRUE(after.values[i] == before.values[i])
        << "the values of \"" << names[i] << "\" changed";
  }
}

using grpc::StatusCode;
constexpr StatusCode kInvalid = StatusCode::INVALID_ARGUMENT;
constexpr StatusCode kNotFound = StatusCode::NOT_FOUND;

ps::PushDenseRequest WithValues(ps::PushDenseRequest request,
                                ps::Tensor values) {
  *request.mutable_values() = std::move(values);
  return request;
}

ps::PushDenseRequest WithRows(ps::PushDenseRequest request, ps::RowRange rows) {
  *request.mutable_rows() = rows;
  return request;
}

ps::Tensor WithShape(ps::Tensor tensor, std::vector<int64_t> shape) {
  tensor.mutable_shape()->Assign(shape.begin(), shape.end());
  return tensor;
}

ps::Tensor WithDType(ps::Tensor tensor, int dtype) {
  tensor.set_dtype(static_cast<ps::DataType>(dtype));
  return tensor;
}

std::vector<RpcCase> PushDenseCases() {
  const auto m = &Stub::PushDense;
  const ps::Tensor eight = Float32Tensor({4, 2}, 8);
  return {
      StubCase("PushDenseUnknownVariable", m, PushDense("nope"), kNotFound,
               {"variable \"nope\" is not on this parameter server"}),
      StubCase("PushDenseEmptyName", m, PushDense(""), kNotFound,
               {"variable \"\" is not on this parameter server"}),
      StubCase("PushDenseInt64ToFloat32", m,
               WithValues(PushDense(), Int64Tensor({1, 2, 3, 4, 5, 6, 7, 8})),
               kInvalid,
               {"the values pushed to variable \"w\" is int64, expected "
                "float32"}),
      StubCase("PushDenseUnspecifiedDtype", m,
               WithValues(PushDense(), WithDType(eight, 0)), kInvalid,
               {"variable \"w\"", "is unspecified, expected float32"}),
      StubCase("PushDenseUnknownDtype", m,
               WithValues(PushDense(), WithDType(eight, 77)), kInvalid,
               {"variable \"w\"", "is unknown, expected float32"}),
      StubCase("PushDenseTooFewValues", m,
               WithValues(PushDense(), Float32Tensor({5}, 5)), kInvalid,
               {"variable \"w\"", "has 5 values, expected 8"}),
      StubCase("PushDenseTooManyValues", m,
               WithValues(PushDense(), Float32Tensor({9}, 9)), kInvalid,
               {"variable \"w\"", "has 9 values, expected 8"}),
      StubCase("PushDenseNoValues", m, WithValues(PushDense(), ps::Tensor()),
               kInvalid, {"variable \"w\"", "is unspecified"}),
      StubCase("PushDenseShapeDisagreesWithData", m,
               WithValues(PushDense(), WithShape(eight, {4, 3})), kInvalid,
               {"variable \"w\"", "has shape [4, 3] but 8 elements"}),
      StubCase("PushDenseNegativeShape", m,
               WithValues(PushDense(), WithShape(eight, {-4, -2})), kInvalid,
               {"variable \"w\"", "has shape [-4, -2] but 8 elements"}),
      StubCase("PushDenseHugeShape", m,
               WithValues(PushDense(), WithShape(eight, {int64_t{1} << 62})),
               kInvalid,
               {"variable \"w\"", "has shape [4611686018427387904] but 8"}),
      StubCase("PushDenseShapeOverflowingInt64", m,
               WithValues(PushDense(),
                          WithShape(eight, {int64_t{1} << 32, int64_t{1} << 32,
                                            int64_t{1} << 32})),
               kInvalid, {"variable \"w\"", "but 8 elements"}),
      StubCase("PushDensePartialElement", m,
               [&] {
                 ps::PushDenseRequest r = PushDense();
                 r.mutable_values()->mutable_data()->resize(31);
                 r.mutable_values()->clear_shape();
                 return r;
               }(),
               kInvalid,
               {"variable \"w\"",
                "has 31 bytes, not a whole number of 4-byte elements"}),
      StubCase("PushDenseNegativeRows", m,
               WithRows(WithValues(PushDense(), Float32Tensor({1, 2}, 2)),
                        Rows(-1, 0)),
               kInvalid,
               {"variable \"w\": rows [-1, 0) are not within the rows held "
                "here [0, 4)"}),
      StubCase("PushDenseReversedRows", m,
               WithRows(WithValues(PushDense(), Float32Tensor({1, 2}, 2)),
                        Rows(3, 2)),
               kInvalid, {"variable \"w\": rows [3, 2) are not within"}),
      StubCase("PushDenseHugeRows", m,
               WithRows(PushDense(), Rows(0, int64_t{1} << 62)), kInvalid,
               {"variable \"w\": rows [0, 4611686018427387904) are not "
                "within the rows held here [0, 4)"}),
      StubCase("PushDenseRowsOfAnotherPart", m,
               WithRows(WithValues(PushDense("part"), Float32Tensor({2, 2}, 4)),
                        Rows(0, 2)),
               kInvalid,
               {"variable \"part\": rows [0, 2) are not within the rows held "
                "here [2, 4)"}),
      StubCase("PushDenseFloat32ToInt64", m,
               WithValues(PushDense("step"), Float32Tensor({}, 1)), kInvalid,
               {"the values pushed to variable \"step\" is float32, "
                "expected int64"}),
      StubCase("PushDenseTooManyInt64s", m,
               WithValues(PushDense("step"), Int64Tensor({1, 2})), kInvalid,
               {"variable \"step\"", "has 2 values, expected 1"}),
  };
}

std::vector<RpcCase> PullDenseCases() {
  const auto m = &Stub::PullDense;
  return {
      StubCase("PullDenseUnknownVariable", m, PullDense("nope", Rows(0, 1)),
               kNotFound,
               {"variable \"nope\" is not on this parameter server"}),
      StubCase("PullDenseNegativeRows", m, PullDense("w", Rows(-3, 2)),
               kInvalid,
               {"variable \"w\": rows [-3, 2) are not within the rows held "
                "here [0, 4)"}),
      StubCase("PullDenseReversedRows", m, PullDense("w", Rows(4, 0)), kInvalid,
               {"variable \"w\": rows [4, 0) are not within"}),
      StubCase("PullDenseHugeRows", m,
               PullDense("w", Rows(-(int64_t{1} << 62), int64_t{1} << 62)),
               kInvalid,
               {"variable \"w\": rows [-4611686018427387904, "
                "4611686018427387904) are not within"}),
      StubCase("PullDenseRowsOfAnotherPart", m, PullDense("part", Rows(4, 6)),
               kInvalid,
               {"variable \"part\": rows [4, 6) are not within the rows held "
                "here [2, 4)"}),
  };
}

std::vector<RpcCase> BatchCases() {
  ps::PullDenseBatchRequest pulls;
  *pulls.add_pulls() = PullDense("w", Rows(0, 1));
  *pulls.add_pulls() = PullDense("nope", Rows(0, 1));
  ps::PushDenseBatchRequest unknown_first;
  *unknown_first.add_pushes() = PushDense("nope");
  *unknown_first.add_pushes() = PushDense("w");
  ps::PushDenseBatchRequest wrong_first;
  *wrong_first.add_pushes() = WithValues(PushDense("w"), Float32Tensor({3}, 3));
  *wrong_first.add_pushes() = PushDense("w");
  ps::PushDenseBatchRequest negative_rows;
  *negative_rows.add_pushes() =
      WithRows(WithValues(PushDense("w"), Float32Tensor({2}, 2)), Rows(-1, 0));
  return {
      StubCase("PullDenseBatchUnknownVariable", &Stub::PullDenseBatch, pulls,
               kNotFound,
               {"variable \"nope\" is not on this parameter server"}),
      // A push item that fails stops the batch; the items before it stay
      // applied (ps_service.proto), so the bad item comes first here.
      StubCase("PushDenseBatchUnknownVariable", &Stub::PushDenseBatch,
               unknown_first, kNotFound,
               {"variable \"nope\" is not on this parameter server"}),
      StubCase("PushDenseBatchTooFewValues", &Stub::PushDenseBatch, wrong_first,
               kInvalid, {"variable \"w\"", "has 3 values, expected 8"}),
      StubCase("PushDenseBatchNegativeRows", &Stub::PushDenseBatch,
               negative_rows, kInvalid,
               {"variable \"w\": rows [-1, 0) are not within"}),
  };
}

std::vector<RpcCase> SparseCases() {
  const auto pull = &Stub::PullSparse;
  const auto push = &Stub::PushSparse;
  ps::PullSparseRequest float_ids = PullRows("w", {0});
  *float_ids.mutable_ids() = Float32Tensor({2}, 2);
  ps::PullSparseRequest lying_shape = PullRows("w", {0});
  *lying_shape.mutable_ids() = WithShape(lying_shape.ids(), {1000000});
  ps::PushSparseRequest wide = PushRows("w", {0, 1});
  *wide.mutable_gradients() = Float32Tensor({2, 3}, 6);
  ps::PushSparseRequest narrow = PushRows("w", {0, 1});
  *narrow.mutable_gradients() = Float32Tensor({3}, 3);
  ps::PushSparseRequest int_grads = PushRows("w", {0, 1});
  *int_grads.mutable_gradients() = Int64Tensor({1, 2, 3, 4});
  return {
      StubCase("PullSparseUnknownVariable", pull, PullRows("nope", {0}),
               kNotFound,
               {"variable \"nope\" is not on this parameter server"}),
      StubCase("PullSparseIdPastTheEnd", pull, PullRows("w", {0, 4}), kInvalid,
               {"variable \"w\": row id 4 is not within the rows held here "
                "[0, 4)"}),
      StubCase("PullSparseNegativeId", pull, PullRows("w", {-1}), kInvalid,
               {"variable \"w\": row id -1 is not within"}),
      StubCase("PullSparseHugeId", pull,
               PullRows("w", {std::numeric_limits<int64_t>::max()}), kInvalid,
               {"variable \"w\": row id 9223372036854775807 is not within"}),
      StubCase("PullSparseIdOfAnotherPart", pull, PullRows("part", {2, 1}),
               kInvalid,
               {"variable \"part\": row id 1 is not within the rows held "
                "here [2, 4)"}),
      StubCase("PullSparseFloat32Ids", pull, float_ids, kInvalid,
               {"the ids of variable \"w\" is float32, expected int64"}),
      StubCase("PullSparseShapeClaimsMoreIds", pull, lying_shape, kInvalid,
               {"the ids of variable \"w\" has shape [1000000] but 1 "
                "elements"}),
      StubCase("PullSparseFromAHashTable", pull, PullRows("ids", {0}),
               kNotFound, {"variable \"ids\" is not on this parameter server"}),
      StubCase("PushSparseUnknownVariable", push, PushRows("nope", {0}),
               kNotFound,
               {"variable \"nope\" is not on this parameter server"}),
      StubCase("PushSparseIdPastTheEnd", push, PushRows("w", {1, 4}), kInvalid,
               {"variable \"w\": row id 4 is not within the rows held here "
                "[0, 4)"}),
      StubCase("PushSparseNegativeId", push,
               PushRows("w", {std::numeric_limits<int64_t>::min()}), kInvalid,
               {"variable \"w\": row id -9223372036854775808 is not within"}),
      StubCase("PushSparseIdOfAnotherPart", push, PushRows("part", {5}),
               kInvalid,
               {"variable \"part\": row id 5 is not within the rows held "
                "here [2, 4)"}),
      StubCase("PushSparseRowsTooWide", push, wide, kInvalid,
               {"variable \"w\"", "has 6 values, expected 4 (row width 2)"}),
      StubCase("PushSparseGradientsCutShort", push, narrow, kInvalid,
               {"variable \"w\"", "has 3 values, expected 4 (row width 2)"}),
      StubCase("PushSparseInt64Gradients", push, int_grads, kInvalid,
               {"the gradients of variable \"w\" is int64, expected float32"}),
      StubCase("PushSparseToInt64Variable", push, PushRows("step", {0}),
               kInvalid, {"variable \"step\" is int64, not float32"}),
  };
}

std::vector<RpcCase> HashCases() {
  const auto pull = &Stub::PullHash;
  const auto push = &Stub::PushHash;
  ps::PushSparseRequest wide = PushRows("ids", {1, -5});
  *wide.mutable_gradients() = Float32Tensor({2, 3}, 6);
  ps::PullSparseRequest float_ids = PullRows("ids", {1});
  *float_ids.mutable_ids() = Float32Tensor({1}, 1);
  ps::PushSparseRequest lying_shape = PushRows("ids", {1});
  *lying_shape.mutable_ids() = WithShape(lying_shape.ids(), {int64_t{1} << 40});
  return {
      StubCase("PullHashUnknownTable", pull, PullRows("nope", {1}), kNotFound,
               {"hash embedding table \"nope\" is not on this parameter "
                "server"}),
      StubCase("PullHashFromADenseVariable", pull, PullRows("w", {1}),
               kNotFound,
               {"hash embedding table \"w\" is not on this parameter server"}),
      StubCase("PullHashFloat32Ids", pull, float_ids, kInvalid,
               {"the ids of hash embedding table \"ids\" is float32, "
                "expected int64"}),
      StubCase("PushHashUnknownTable", push, PushRows("nope", {1}), kNotFound,
               {"hash embedding table \"nope\" is not on this parameter "
                "server"}),
      StubCase("PushHashRowsTooWide", push, wide, kInvalid,
               {"hash embedding table \"ids\"",
                "has 6 values for 2 ids, expected 4 (dim 2)"}),
      StubCase("PushHashShapeClaimsMoreIds", push, lying_shape, kInvalid,
               {"the ids of hash embedding table \"ids\" has shape "
                "[1099511627776] but 1 elements"}),
  };
}

std::vector<RpcCase> CreateCases() {
  const auto create = &Stub::CreateVariable;
  const auto create_table = &Stub::CreateHashTable;
  ps::CreateVariableRequest bad_dtype = CreateVariable("bad", {2});
  bad_dtype.mutable_spec()->set_dtype(static_cast<ps::DataType>(9));
  ps::CreateVariableRequest bad_optimizer = CreateVariable("bad", {2});
  bad_optimizer.mutable_spec()->mutable_optimizer()->set_kind(
      static_cast<ps::OptimizerConfig::Kind>(99));
  ps::CreateVariableRequest bad_initializer = CreateVariable("bad", {2});
  bad_initializer.mutable_spec()->mutable_initializer()->set_kind(
      static_cast<ps::InitializerConfig::Kind>(99));
  ps::CreateVariableRequest rows_past_end = CreateVariable("bad", {4, 2});
  *rows_past_end.mutable_rows() = Rows(2, 9);
  ps::CreateVariableRequest rows_reversed = CreateVariable("bad", {4, 2});
  *rows_reversed.mutable_rows() = Rows(3, 1);
  ps::CreateVariableRequest rows_negative = CreateVariable("bad", {4, 2});
  *rows_negative.mutable_rows() = Rows(-2, 2);
  ps::CreateVariableRequest other_w = CreateVariable("w", {4, 3});
  return {
      StubCase("CreateVariableEmptyName", create, CreateVariable("", {2}),
               kInvalid, {"variable name is empty"}),
      StubCase("CreateVariableNegativeDimension", create,
               CreateVariable("bad", {-1, 4}), kInvalid, {"\"bad\""}),
      StubCase("CreateVariableHugeDimension", create,
               CreateVariable("bad", {int64_t{1} << 62}), kInvalid,
               {"\"bad\""}),
      StubCase("CreateVariableShapeOverflowingInt64", create,
               CreateVariable("bad", {int64_t{1} << 32, int64_t{1} << 32,
                                      int64_t{1} << 32}),
               kInvalid, {"\"bad\""}),
      StubCase("CreateVariableOverTheMemoryLimit", create,
               CreateVariable("bad", {int64_t{1} << 38}),
               StatusCode::RESOURCE_EXHAUSTED,
               {"variable \"bad\"",
                "would exceed this parameter server's "
                "limit"}),
      StubCase("CreateVariableUnknownDtype", create, bad_dtype, kInvalid,
               {"variable \"bad\"", "unknown dtype 9"}),
      StubCase("CreateVariableUnknownOptimizer", create, bad_optimizer,
               kInvalid, {"variable \"bad\"", "unknown optimizer kind 99"}),
      StubCase("CreateVariableUnknownInitializer", create, bad_initializer,
               kInvalid, {"variable \"bad\"", "unknown initializer kind 99"}),
      StubCase("CreateVariableRowsPastTheEnd", create, rows_past_end, kInvalid,
               {"\"bad\"", "[2, 9)"}),
      StubCase("CreateVariableReversedRows", create, rows_reversed, kInvalid,
               {"\"bad\"", "[3, 1)"}),
      StubCase("CreateVariableNegativeRows", create, rows_negative, kInvalid,
               {"\"bad\"", "[-2, 2)"}),
      StubCase("CreateVariableExistingWithAnotherShape", create, other_w,
               StatusCode::ALREADY_EXISTS,
               {"variable \"w\" already exists with a different spec"}),
      StubCase("CreateHashTableEmptyName", create_table, CreateHashTable("", 2),
               kInvalid, {"hash embedding table \"\": the name is empty"}),
      StubCase("CreateHashTableZeroDim", create_table,
               CreateHashTable("bad", 0), kInvalid,
               {"hash embedding table \"bad\": dim 0 is not in 1.."}),
      StubCase("CreateHashTableNegativeDim", create_table,
               CreateHashTable("bad", -8), kInvalid,
               {"hash embedding table \"bad\": dim -8 is not in 1.."}),
      StubCase("CreateHashTableHugeDim", create_table,
               CreateHashTable("bad", int64_t{1} << 62), kInvalid,
               {"hash embedding table \"bad\": dim 4611686018427387904 is "
                "not in 1.."}),
      StubCase("CreateHashTableExistingWithAnotherDim", create_table,
               CreateHashTable("ids", 3), StatusCode::ALREADY_EXISTS,
               {"hash embedding table \"ids\" already exists with a "
                "different spec"}),
  };
}

// Message bytes, for the methods that decode their own (PullDense, PushDense,
// PullSparse, PushSparse, PullHash, PushHash) and one that gRPC decodes.
std::vector<RpcCase> RawBytesCases() {
  const std::string good = GoodPushDenseBytes();
  const std::string name = BytesField(1, "w");
  const std::string eight = FloatBytes(8, 1);
  // A tensor whose elements' length says 4096 bytes, followed by 32.
  const std::string claims_more = VarintField(1, ps::FLOAT32) +
                                  Tag(3, kLengthDelimited) + Varint(4096) +
                                  eight;
  // A tensor whose elements' length is the largest a varint32 holds.
  const std::string claims_4gib = VarintField(1, ps::FLOAT32) +
                                  Tag(3, kLengthDelimited) +
                                  Varint(0xffffffffu) + eight;
  const std::string tensor = TensorBytes(ps::FLOAT32, {4, 2}, eight);
  const std::string ids = TensorBytes(ps::INT64, {2}, Int64Bytes({1, 2}));
  return {
      RawCase("RawNameClaimsMoreBytesThanSent", "PushDense",
              "\x0a\x64w" + tensor, kInvalid,
              {"malformed PushDense request: bad field 1"}),
      RawCase("RawTruncatedInTheElements", "PushDense",
              good.substr(0, good.size() - 5), kInvalid,
              {"malformed PushDense request"}),
      RawCase("RawTruncatedInTheName", "PushDense", good.substr(0, 2), kInvalid,
              {"malformed PushDense request"}),
      RawCase("RawElementsClaimMoreBytesThanSent", "PushDense",
              name + BytesField(3, claims_more), kInvalid,
              {"malformed PushDense request: tensor field 3: elements of "
               "4096 bytes run past the end"}),
      RawCase("RawElementsClaim4GiB", "PushDense",
              name + BytesField(3, claims_4gib), kInvalid,
              {"malformed PushDense request: tensor field 3: elements of "
               "4294967295 bytes run past the end"}),
      RawCase("RawTensorClaimsMoreBytesThanSent", "PushDense",
              name + Tag(3, kLengthDelimited) + Varint(1 << 20) + tensor,
              kInvalid,
              {"malformed PushDense request: tensor field 3 of 1048576 bytes "
               "runs past the end"}),
      RawCase("RawTensorAsVarint", "PushDense", name + VarintField(3, 8),
              kInvalid,
              {"malformed PushDense request: tensor field 3 is not "
               "length-delimited"}),
      RawCase("RawTensorTwice", "PushDense",
              name + BytesField(3, tensor) + BytesField(3, tensor), kInvalid,
              {"malformed PushDense request: tensor field 3 appears twice"}),
      RawCase("RawElementsTwice", "PushDense",
              name + BytesField(3, tensor + BytesField(3, eight)), kInvalid,
              {"malformed PushDense request: tensor field 3: elements appear "
               "twice"}),
      RawCase("RawOverlongVarint", "PushDense",
              name + Tag(3, kLengthDelimited) + std::string(11, '\xff'),
              kInvalid, {"malformed PushDense request"}),
      RawCase("RawNegativeVarintShape", "PushDense",
              name + BytesField(3, TensorBytes(ps::FLOAT32, {-1}, eight)),
              kInvalid, {"variable \"w\"", "has shape [-1] but 8 elements"}),
      RawCase("RawEmptyMessage", "PushDense", "", kNotFound,
              {"variable \"\" is not on this parameter server"}),
      RawCase("RawPullDenseGarbage", "PullDense", "\x0a\x10w", kInvalid,
              {"malformed PullDense request"}),
      RawCase("RawPullSparseIdsClaimMoreBytes", "PullSparse",
              name + BytesField(2, VarintField(1, ps::INT64) +
                                       Tag(3, kLengthDelimited) + Varint(800) +
                                       Int64Bytes({1})),
              kInvalid,
              {"malformed PullSparse request: tensor field 2: elements of "
               "800 bytes run past the end"}),
      RawCase("RawPushSparseGradientsCutShort", "PushSparse",
              name + BytesField(2, ids) + Tag(3, kLengthDelimited) +
                  Varint(100) + eight,
              kInvalid,
              {"malformed PushSparse request: tensor field 3 of 100 bytes "
               "runs past the end"}),
      RawCase("RawPullHashGarbage", "PullHash", "\x12\x05\x08", kInvalid,
              {"malformed PullHash request"}),
      RawCase("RawPushHashIdsAsVarint", "PushHash",
              BytesField(1, "ids") + VarintField(2, 5), kInvalid,
              {"malformed PushHash request: tensor field 2 is not "
               "length-delimited"}),
      RawCase("RawBundleGarbage", "Bundle", "\xff\xff\xff", kInvalid,
              {"malformed Bundle request"}),
      RawCase("RawBundlePartCutShort", "Bundle",
              BytesField(1, BytesField(1, "PushDense") +
                                Tag(2, kLengthDelimited) + Varint(100) + good),
              kInvalid, {"malformed Bundle request: part 0"}),
      // A method that gRPC decodes (with protobuf) refuses what does not
      // parse before the service sees it, with gRPC's own status.
      RawCase("RawCreateVariableGarbage", "CreateVariable", "\xff\xff\xff",
              StatusCode::INTERNAL, {}, /*reaches_service=*/false),
      RawCase("UnknownMethod", "Nope", good, StatusCode::UNIMPLEMENTED, {},
              /*reaches_service=*/false),
  };
}

// Bytes that end in something other than a well-formed field: a tag that
// does not parse, or a 0 byte. CodedInputStream::ReadTag returns 0 for
// those as it does at the end of the message, so DecodeWithTensors
// (rpc/wire_message.cc) checks ConsumedEntireMessage() after each message
// and tensor; before it did, a good push followed by such bytes was applied.
std::vector<RpcCase> MisreadRawBytesCases() {
  const std::string good = GoodPushDenseBytes();
  const std::string tensor = TensorBytes(ps::FLOAT32, {4, 2}, FloatBytes(8, 1));
  return {
      RawCase("FourBytesOfFF", "PushDense", std::string(4, '\xff'), kInvalid,
              {"malformed PushDense request"}),
      RawCase("FiveBytesOfFF", "PushDense", std::string(5, '\xff'), kInvalid,
              {"malformed PushDense request"}),
      RawCase("GoodPushThenABadTag", "PushDense", good + std::string(5, '\xff'),
              kInvalid, {"malformed PushDense request"}),
      RawCase("GoodPushThenAZeroByte", "PushDense", good + std::string(1, '\0'),
              kInvalid, {"malformed PushDense request"}),
      RawCase("TensorEndingInAZeroByte", "PushDense",
              BytesField(1, "w") + BytesField(3, tensor + std::string(1, '\0')),
              kInvalid, {"malformed PushDense request: tensor field 3"}),
  };
}

std::vector<RpcCase> AllCases() {
  std::vector<RpcCase> all;
  for (std::vector<RpcCase> cases :
       {PushDenseCases(), PullDenseCases(), BatchCases(), SparseCases(),
        HashCases(), CreateCases(), RawBytesCases()}) {
    all.insert(all.end(), cases.begin(), cases.end());
  }
  return all;
}

std::string CaseName(const ::testing::TestParamInfo<RpcCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(AllRpcs, BadRpcPayloadTest,
                         ::testing::ValuesIn(AllCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(MisreadBytes, BadRpcPayloadTest,
                         ::testing::ValuesIn(MisreadRawBytesCases()), CaseName);

// The bytes written by hand above are the wire format: those of a good
// request are what rpc::EncodeWithTensors writes for it (and the suite's ps
// task applies them, in SetUpTestSuite).
TEST(HandWrittenBytesTest, AreWhatEncodeWithTensorsWrites) {
  ps::PushDenseRequest fields;
  fields.set_name("w");
  const std::vector<float> values(8, 1.0f);
  rpc::OutgoingTensor tensor;
  tensor.field_number = 3;
  tensor.dtype = ps::FLOAT32;
  tensor.shape = {4, 2};
  tensor.data = {reinterpret_cast<const char*>(values.data()),
                 values.size() * sizeof(float)};
  EXPECT_EQ(testing::BytesOf(rpc::EncodeWithTensors(fields, {tensor})),
            GoodPushDenseBytes());
}

}  // namespace
}  // namespace distrt
