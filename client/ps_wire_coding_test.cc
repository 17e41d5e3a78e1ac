#include "client/ps_wire_coding.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/id_repeats.h"
#include "client/ps_calls.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/ps_service.pb.h"
#include "rpc/tensor_codec.h"
#include "rpc/wire_message.h"
#include "runtime/ps/placement.h"
#include "runtime/ps/ps_requests.h"
#include "runtime/ps/spec_proto.h"
#include "runtime/ps/variable_spec.h"

namespace distrt::ps_client_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::string_view kSender = "ps task 1 (host:1)";

template <typename T>
absl::Span<const char> Bytes(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()),
          values.size() * sizeof(T)};
}

// A response whose field 1 is a tensor of `values` (copied: the message
// keeps them), as a ps task sends it.
template <typename T>
grpc::ByteBuffer ResponseWith(const google::protobuf::MessageLite& fields,
                              ps::DataType dtype, std::vector<T> values) {
  auto kept = std::make_shared<const std::vector<T>>(std::move(values));
  return rpc::EncodeWithTensors(
      fields,
      {{1, dtype, {static_cast<int64_t>(kept->size())}, Bytes(*kept), kept}});
}

// Reads tensor field `field` of `buffer` as the ps task would, into `out`.
template <typename T>
absl::Status ReadTensor(grpc::ByteBuffer* buffer,
                        google::protobuf::MessageLite* fields, int field,
                        std::vector<T>* out, int other_field = 0,
                        std::vector<int64_t>* other = nullptr) {
  rpc::IncomingTensor tensor(field);
  tensor.destination = [out](int64_t bytes) -> absl::StatusOr<char*> {
    out->resize(bytes / sizeof(T));
    return reinterpret_cast<char*>(out->data());
  };
  rpc::IncomingTensor second(other_field == 0 ? 99 : other_field);
  second.destination = [other](int64_t bytes) -> absl::StatusOr<char*> {
    other->resize(bytes / sizeof(int64_t));
    return reinterpret_cast<char*>(other->data());
  };
  if (other_field == 0) {
    return rpc::DecodeWithTensors(buffer, "test", fields, {&tensor});
  }
  return rpc::DecodeWithTensors(buffer, "test", fields, {&tensor, &second});
}

TEST(PsWireCodingTest, DensePushCarriesFieldsAndValues) {
  ps::PushDenseRequest request;
  SetRows("w", {2, 4}, &request);
  request.set_request_id(77);
  const std::vector<float> values = {1.5f, -2, 3, 4.25f};
  grpc::ByteBuffer bytes =
      EncodeDensePush(request, absl::MakeConstSpan(values));

  ps::PushDenseRequest fields;
  std::vector<float> received;
  ASSERT_TRUE(ReadTensor(&bytes, &fields, 3, &received).ok());
  EXPECT_EQ(fields.name(), "w");
  EXPECT_EQ(RowRangeFromProto(fields.rows()), (RowRange{2, 4}));
  EXPECT_EQ(fields.request_id(), 77u);
  EXPECT_EQ(received, values);
}

TEST(PsWireCodingTest, Int64DensePushIsInt64) {
  ps::PushDenseRequest request;
  const std::vector<int64_t> values = {int64_t{1} << 40, -3};
  grpc::ByteBuffer bytes =
      EncodeDensePush(request, absl::MakeConstSpan(values));
  ps::PushDenseRequest fields;
  std::vector<int64_t> received;
  ASSERT_TRUE(ReadTensor(&bytes, &fields, 3, &received).ok());
  EXPECT_EQ(received, values);
}

TEST(PsWireCodingTest, DecodesAPulledTensorIntoPlace) {
  const std::vector<float> sent = {1, 2, 3, 4, 5, 6};
  grpc::ByteBuffer response =
      ResponseWith(ps::PullDenseResponse(), ps::FLOAT32, sent);
  std::vector<float> out(6, 0);
  ASSERT_TRUE(
      DecodeDensePull(&response, kSender, "rows [0, 3) of \"w\"", out.data(), 6)
          .ok());
  EXPECT_EQ(out, sent);
}

TEST(PsWireCodingTest, APulledTensorOfAnotherSizeNamesSenderAndRows) {
  grpc::ByteBuffer response = ResponseWith(ps::PullDenseResponse(), ps::FLOAT32,
                                           std::vector<float>{1, 2, 3});
  std::vector<float> out(2);
  const absl::Status status = DecodeDensePull(
      &response, kSender, "rows [0, 2) of \"w\"", out.data(), 2);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(),
            "ps task 1 (host:1) sent rows [0, 2) of \"w\" of 12 bytes, "
            "expected 8");
}

TEST(PsWireCodingTest, APulledTensorOfAnotherTypeNamesTheSender) {
  grpc::ByteBuffer response = ResponseWith(ps::PullDenseResponse(), ps::INT64,
                                           std::vector<int64_t>{1, 2});
  std::vector<float> out(4);  // as many bytes, but int64
  const absl::Status status = DecodeDensePull(
      &response, kSender, "rows [0, 4) of \"w\"", out.data(), 4);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("ps task 1 (host:1): "));
  EXPECT_THAT(status.message(), HasSubstr("rows [0, 4) of \"w\""));
}

TEST(PsWireCodingTest, ValuesAfterAnAdd) {
  ps::PushDenseResponse fields;
  fields.add_values_after(5);
  fields.add_values_after(-6);
  grpc::ByteBuffer response = rpc::EncodeWithTensors(fields, {});
  std::vector<int64_t> after(2);
  absl::StatusOr<bool> carried = DecodeValuesAfter(
      &response, kSender, "rows [0, 2) of \"step\"", absl::MakeSpan(after));
  ASSERT_TRUE(carried.ok()) << carried.status();
  EXPECT_TRUE(*carried);
  EXPECT_THAT(after, ElementsAre(5, -6));

  // An older ps_server sends none: they must be read.
  grpc::ByteBuffer empty = rpc::EncodeWithTensors(ps::PushDenseResponse(), {});
  carried = DecodeValuesAfter(&empty, kSender, "rows [0, 2) of \"step\"",
                              absl::MakeSpan(after));
  ASSERT_TRUE(carried.ok());
  EXPECT_FALSE(*carried);

  ps::PushDenseResponse short_fields;
  short_fields.add_values_after(1);
  grpc::ByteBuffer short_response = rpc::EncodeWithTensors(short_fields, {});
  carried = DecodeValuesAfter(&short_response, kSender,
                              "rows [0, 2) of \"step\"", absl::MakeSpan(after));
  EXPECT_EQ(carried.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(carried.status().message(),
            "ps task 1 (host:1) sent 1 values after the add to rows [0, 2) "
            "of \"step\", not 2");
}

TEST(PsWireCodingTest, RowPushesSumTheRowsOfRepeatedIds) {
  // Ids 7, 3, 7 in rows of width 2: one call carries 7 (position 0, its
  // first occurrence) and 3 (position 1).
  const std::vector<int64_t> ids = {7, 3, 7};
  const IdRepeats repeats = FindRepeats(ids);
  ASSERT_TRUE(repeats.any());
  std::vector<std::unique_ptr<SparsePushCall>> calls;
  calls.push_back(std::make_unique<SparsePushCall>(0));
  calls[0]->positions = {0, 1};
  calls[0]->ids = {7, 3};
  const std::vector<float> grads = {1, 2, 10, 20, 100, 200};
  uint64_t next_id = 41;
  EncodeRowPushes(calls, 2, repeats, grads, [&] { return ++next_id; });

  ps::PushSparseRequest fields;
  std::vector<float> rows;
  std::vector<int64_t> sent_ids;
  ASSERT_TRUE(
      ReadTensor(&calls[0]->wire_request, &fields, 3, &rows, 2, &sent_ids)
          .ok());
  EXPECT_THAT(sent_ids, ElementsAre(7, 3));
  EXPECT_THAT(rows, ElementsAre(101, 202, 10, 20));
  EXPECT_EQ(fields.request_id(), 42u);
  EXPECT_TRUE(fields.ids_distinct());
}

TEST(PsWireCodingTest, RowPushesGatherScatteredPositions) {
  const std::vector<int64_t> ids = {1, 2, 3};
  const IdRepeats repeats = FindRepeats(ids);
  std::vector<std::unique_ptr<SparsePushCall>> calls;
  calls.push_back(std::make_unique<SparsePushCall>(0));
  calls[0]->positions = {0, 2};
  calls[0]->ids = {1, 3};
  const std::vector<float> grads = {1, 2, 3};
  EncodeRowPushes(calls, 1, repeats, grads, [] { return uint64_t{9}; });
  ps::PushSparseRequest fields;
  std::vector<float> rows;
  std::vector<int64_t> sent_ids;
  ASSERT_TRUE(
      ReadTensor(&calls[0]->wire_request, &fields, 3, &rows, 2, &sent_ids)
          .ok());
  EXPECT_THAT(sent_ids, ElementsAre(1, 3));
  EXPECT_THAT(rows, ElementsAre(1, 3));
}

TEST(PsWireCodingTest, PulledRowsGoToTheirIdsPositionsAndRepeats) {
  // Ids 5, 6, 5: the call pulled 5 (position 0) and 6 (position 1)...
  const std::vector<int64_t> ids = {5, 6, 5};
  const IdRepeats repeats = FindRepeats(ids);
  SparsePullCall call(0);
  call.positions = {0, 1};
  call.ids = {5, 6};
  call.wire_response = ResponseWith(ps::PullSparseResponse(), ps::FLOAT32,
                                    std::vector<float>{1, 2, 3, 4});
  std::vector<float> out(6, 0);
  ASSERT_TRUE(
      DecodeRowsById(call, kSender, 2, "emb", absl::MakeSpan(out)).ok());
  // ...and the repeat gets the first occurrence's row.
  CopyRepeatedRows(repeats, 2, absl::MakeSpan(out));
  EXPECT_THAT(out, ElementsAre(1, 2, 3, 4, 1, 2));

  // Positions that are not one run are scattered.
  SparsePullCall scattered(0);
  scattered.positions = {0, 2};
  scattered.ids = {8, 9};
  scattered.wire_response = ResponseWith(ps::PullSparseResponse(), ps::FLOAT32,
                                         std::vector<float>{7, 9});
  std::vector<float> out2(3, 0);
  ASSERT_TRUE(
      DecodeRowsById(scattered, kSender, 1, "emb", absl::MakeSpan(out2)).ok());
  EXPECT_THAT(out2, ElementsAre(7, 0, 9));
}

TEST(PsWireCodingTest, BatchPullChecksEachItemsShape) {
  VariablePlacement a;
  a.spec.name = "a";
  a.spec.shape = {2, 2};
  a.parts = {{0, {0, 2}}};
  std::vector<float> out(4, 0);
  const DenseVariablePull pulls[] = {{&a, absl::MakeSpan(out)}};
  ManyCall call(0);
  call.batch = true;
  call.pieces = {{0, {0, 2}}};

  ps::PullDenseBatchResponse response;
  rpc::EncodeFloat32(std::vector<float>{1, 2, 3, 4}, {2, 2},
                     response.add_pulls()->mutable_values());
  call.wire_response = rpc::EncodeWithTensors(response, {});
  ASSERT_TRUE(DecodeBatchPull(call, kSender, pulls).ok());
  EXPECT_THAT(out, ElementsAre(1, 2, 3, 4));

  ps::PullDenseBatchResponse flat;
  rpc::EncodeFloat32(std::vector<float>{1, 2, 3, 4}, {4},
                     flat.add_pulls()->mutable_values());
  call.wire_response = rpc::EncodeWithTensors(flat, {});
  const absl::Status status = DecodeBatchPull(call, kSender, pulls);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(),
            "ps task 1 (host:1) sent rows [0, 2) of \"a\" of shape [4], "
            "expected [2, 2]");
}

TEST(PsWireCodingTest, IdRequestsCarryTheIds) {
  std::vector<std::unique_ptr<SparsePullCall>> calls;
  calls.push_back(std::make_unique<SparsePullCall>(0));
  calls[0]->request.set_name("emb");
  calls[0]->ids = {4, -1, 9};
  EncodeIdRequests(calls);
  ps::PullSparseRequest fields;
  std::vector<int64_t> ids;
  ASSERT_TRUE(ReadTensor(&calls[0]->wire_request, &fields, 2, &ids).ok());
  EXPECT_EQ(fields.name(), "emb");
  EXPECT_THAT(ids, ElementsAre(4, -1, 9));
}

TEST(PsWireCodingTest, IsContiguous) {
  EXPECT_TRUE(IsContiguous({3, 4, 5}));
  EXPECT_FALSE(IsContiguous({3, 5}));
  EXPECT_FALSE(IsContiguous({}));
}

}  // namespace
}  // namespace distrt::ps_client_internal
