#include "rpc/wire_message.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/ps_service.pb.h"
#include "tests/util/byte_buffers.h"

namespace distrt::rpc {
namespace {

using testing::BufferOf;

template <typename T>
absl::Span<const char> BytesOf(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()),
          values.size() * sizeof(T)};
}

// An incoming tensor that lands in `out`, which it sizes.
template <typename T>
std::unique_ptr<IncomingTensor> Into(int field, std::vector<T>* out,
                                     int* calls = nullptr) {
  auto tensor = std::make_unique<IncomingTensor>(field);
  tensor->destination = [out, calls](int64_t bytes) -> absl::StatusOr<char*> {
    if (calls != nullptr) ++*calls;
    out->resize(bytes / sizeof(T));
    return reinterpret_cast<char*>(out->data());
  };
  return tensor;
}

TEST(WireMessageTest, EncodedBytesAreWhatProtobufReads) {
  const std::vector<float> grad = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  ps::PushDenseRequest fields;
  fields.set_name("layer/kernel");
  fields.mutable_rows()->set_begin(4);
  fields.mutable_rows()->set_end(7);
  grpc::ByteBuffer buffer = EncodeWithTensors(
      fields, {{3, ps::FLOAT32, {3, 2}, BytesOf(grad), nullptr}});

  ps::PushDenseRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(testing::BytesOf(buffer)));
  EXPECT_EQ(parsed.name(), "layer/kernel");
  EXPECT_EQ(parsed.rows().begin(), 4);
  EXPECT_EQ(parsed.rows().end(), 7);
  EXPECT_EQ(parsed.values().dtype(), ps::FLOAT32);
  ASSERT_EQ(parsed.values().shape_size(), 2);
  EXPECT_EQ(parsed.values().shape(0), 3);
  EXPECT_EQ(parsed.values().shape(1), 2);
  EXPECT_EQ(parsed.values().data(),
            std::string(BytesOf(grad).data(), BytesOf(grad).size()));
  // Byte for byte what protobuf itself writes.
  EXPECT_EQ(testing::BytesOf(buffer), parsed.SerializeAsString());
}

TEST(WireMessageTest, DecodesWhatProtobufWritesStraightIntoDestinations) {
  ps::PushSparseRequest request;
  request.set_name("embedding");
  const std::vector<int64_t> ids = {9, -1, 1LL << 40};
  const std::vector<float> grads = {1, 2, 3, 4, 5, 6};
  request.mutable_ids()->set_dtype(ps::INT64);
  request.mutable_ids()->add_shape(3);
  request.mutable_ids()->set_data(BytesOf(ids).data(), BytesOf(ids).size());
  request.mutable_gradients()->set_dtype(ps::FLOAT32);
  request.mutable_gradients()->add_shape(3);
  request.mutable_gradients()->add_shape(2);
  request.mutable_gradients()->set_data(BytesOf(grads).data(),
                                        BytesOf(grads).size());
  grpc::ByteBuffer buffer = BufferOf(request.SerializeAsString());

  std::vector<int64_t> got_ids;
  std::vector<float> got_grads;
  auto id_tensor = Into(2, &got_ids);
  auto grad_tensor = Into(3, &got_grads);
  ps::PushSparseRequest fields;
  ASSERT_TRUE(DecodeWithTensors(&buffer, "PushSparse request", &fields,
                                {id_tensor.get(), grad_tensor.get()})
                  .ok());
  EXPECT_EQ(fields.name(), "embedding");
  EXPECT_FALSE(fields.has_ids());
  EXPECT_EQ(got_ids, ids);
  EXPECT_EQ(got_grads, grads);
  EXPECT_EQ(id_tensor->dtype, ps::INT64);
  EXPECT_EQ(id_tensor->shape, std::vector<int64_t>({3}));
  EXPECT_EQ(grad_tensor->shape, std::vector<int64_t>({3, 2}));
  EXPECT_EQ(grad_tensor->bytes, 24);
  EXPECT_EQ(grad_tensor->view().data.data(),
            reinterpret_cast<const char*>(got_grads.data()));
}

TEST(WireMessageTest, RoundTripsSeveralTensorsAndAnEmptyOne) {
  const std::vector<int64_t> ids = {1, 2, 3};
  ps::PushSparseRequest fields;
  fields.set_name("t");
  grpc::ByteBuffer buffer =
      EncodeWithTensors(fields, {{2, ps::INT64, {3}, BytesOf(ids), nullptr},
                                 {3, ps::FLOAT32, {3, 0}, {}, nullptr}});
  std::vector<int64_t> got_ids;
  std::vector<float> got_grads;
  int grad_calls = 0;
  auto id_tensor = Into(2, &got_ids);
  auto grad_tensor = Into(3, &got_grads, &grad_calls);
  ps::PushSparseRequest decoded;
  ASSERT_TRUE(DecodeWithTensors(&buffer, "request", &decoded,
                                {id_tensor.get(), grad_tensor.get()})
                  .ok());
  EXPECT_EQ(got_ids, ids);
  EXPECT_EQ(grad_calls, 0);  // no elements: no destination asked for
  EXPECT_EQ(grad_tensor->bytes, 0);
  EXPECT_EQ(grad_tensor->dtype, ps::FLOAT32);
  EXPECT_EQ(grad_tensor->shape, std::vector<int64_t>({3, 0}));
}

TEST(WireMessageTest, InPlaceTensorsAreLeftInTheReceivedSlices) {
  std::vector<float> grad(1000);
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = 0.5f * i;
  ps::PushDenseRequest fields;
  fields.set_name("w");
  const std::string bytes = testing::BytesOf(EncodeWithTensors(
      fields, {{3, ps::FLOAT32, {1000}, BytesOf(grad), nullptr}}));
  // As received: slices of odd sizes, so that elements are split between
  // slices and no slice starts on an element's boundary. (The last takes
  // the rest: gRPC keeps slices of a few bytes inside the buffer itself.)
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = bytes.size() - at < 666 ? bytes.size() - at : 333;
    slices.emplace_back(bytes.substr(at, n));
    at += n;
  }
  grpc::ByteBuffer buffer(slices.data(), slices.size());

  IncomingTensor tensor(3);
  tensor.in_place = true;
  ps::PushDenseRequest decoded;
  ASSERT_TRUE(DecodeWithTensors(&buffer, "request", &decoded, {&tensor}).ok());
  EXPECT_EQ(decoded.name(), "w");
  EXPECT_EQ(tensor.bytes, 4000);
  EXPECT_EQ(tensor.data, nullptr);
  EXPECT_GT(tensor.pieces.size(), 10u);
  std::string joined;
  for (absl::Span<const char> piece : tensor.pieces) {
    // Each piece lies inside one of the buffer's own slices: not a copy.
    bool inside = false;
    for (const grpc::Slice& slice : slices) {
      const char* begin = reinterpret_cast<const char*>(slice.begin());
      inside |= piece.data() >= begin &&
                piece.data() + piece.size() <= begin + slice.size();
    }
    EXPECT_TRUE(inside);
    joined.append(piece.data(), piece.size());
  }
  EXPECT_EQ(joined, std::string(BytesOf(grad).data(), BytesOf(grad).size()));

  // A slice of a few bytes (which gRPC keeps inside the buffer's own slice
  // array) in the middle: the pieces still read the right bytes after
  // decoding returns.
  std::vector<grpc::Slice> with_tiny = {grpc::Slice(bytes.substr(0, 1000)),
                                        grpc::Slice(bytes.substr(1000, 5)),
                                        grpc::Slice(bytes.substr(1005))};
  grpc::ByteBuffer tiny_buffer(with_tiny.data(), with_tiny.size());
  IncomingTensor tiny(3);
  tiny.in_place = true;
  ASSERT_TRUE(
      DecodeWithTensors(&tiny_buffer, "request", &decoded, {&tiny}).ok());
  joined.clear();
  for (absl::Span<const char> piece : tiny.pieces) {
    joined.append(piece.data(), piece.size());
  }
  EXPECT_EQ(joined, std::string(BytesOf(grad).data(), BytesOf(grad).size()));

  // The view reads the same elements, copied once when asked for an array.
  std::vector<float> scratch;
  absl::StatusOr<absl::Span<const float>> elements =
      Float32Elements(tensor.view(), "the gradient", &scratch);
  ASSERT_TRUE(elements.ok());
  EXPECT_EQ(std::vector<float>(elements->begin(), elements->end()), grad);
}

TEST(WireMessageTest, AnInPlaceTensorCutShortIsRefused) {
  const std::vector<float> grad(100, 1.0f);
  ps::PushDenseRequest fields;
  const std::string bytes = testing::BytesOf(EncodeWithTensors(
      fields, {{3, ps::FLOAT32, {100}, BytesOf(grad), nullptr}}));
  grpc::ByteBuffer buffer = BufferOf(bytes.substr(0, bytes.size() - 7));
  IncomingTensor tensor(3);
  tensor.in_place = true;
  ps::PushDenseRequest decoded;
  const absl::Status status =
      DecodeWithTensors(&buffer, "PushDense request", &decoded, {&tensor});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("PushDense request"), std::string::npos)
      << status;
}

TEST(WireMessageTest, AnOwnedTensorIsKeptUntilTheBufferIsGone) {
  auto values = std::make_shared<std::vector<float>>(1000, 2.0f);
  std::weak_ptr<std::vector<float>> watch = values;
  ps::PullDenseResponse fields;
  {
    grpc::ByteBuffer buffer = EncodeWithTensors(
        fields, {{1, ps::FLOAT32, {1000}, BytesOf(*values), values}});
    values.reset();
    EXPECT_FALSE(watch.expired());
    ps::PullDenseResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(testing::BytesOf(buffer)));
    EXPECT_EQ(parsed.values().data().size(), 4000u);
  }
  EXPECT_TRUE(watch.expired());
}

TEST(WireMessageTest, AcceptsAnUnpackedShape) {
  std::string bytes;
  // Tensor {dtype: FLOAT32, shape: 2 (unpacked), shape: 1 (unpacked),
  // data: 8 bytes} as field 1 of PullDenseResponse.
  const std::string tensor =
      std::string("\x08\x01\x10\x02\x10\x01\x1a\x08", 8) + std::string(8, 'x');
  bytes += '\x0a';
  bytes += static_cast<char>(tensor.size());
  bytes += tensor;
  grpc::ByteBuffer buffer = BufferOf(bytes);
  std::vector<float> got;
  auto values = Into(1, &got);
  ps::PullDenseResponse fields;
  ASSERT_TRUE(
      DecodeWithTensors(&buffer, "response", &fields, {values.get()}).ok());
  EXPECT_EQ(values->shape, std::vector<int64_t>({2, 1}));
  EXPECT_EQ(got.size(), 2u);
}

class MalformedTest : public ::testing::Test {
 protected:
  absl::Status Decode(const std::string& bytes) {
    grpc::ByteBuffer buffer = BufferOf(bytes);
    auto values = Into(3, &got_, &destination_calls_);
    ps::PushDenseRequest fields;
    return DecodeWithTensors(&buffer, "PushDense request", &fields,
                             {values.get()});
  }

  std::string Valid() {
    const std::vector<float> grad(16, 1.0f);
    ps::PushDenseRequest fields;
    fields.set_name("w");
    return testing::BytesOf(EncodeWithTensors(
        fields, {{3, ps::FLOAT32, {16}, BytesOf(grad), nullptr}}));
  }

  std::vector<float> got_;
  int destination_calls_ = 0;
};

TEST_F(MalformedTest, TheValidMessageDecodes) {
  EXPECT_TRUE(Decode(Valid()).ok());
  EXPECT_EQ(got_.size(), 16u);
}

TEST_F(MalformedTest, TruncatedAnywhereInATensorIsRefused) {
  const std::string valid = Valid();
  // Cutting off the whole tensor field (all but the 3 bytes of the name)
  // leaves a well-formed message without it.
  for (size_t cut = 1; cut < valid.size() - 3; ++cut) {
    absl::Status s = Decode(valid.substr(0, valid.size() - cut));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << cut;
    EXPECT_NE(s.message().find("malformed PushDense request"),
              std::string::npos)
        << s;
  }
}

TEST_F(MalformedTest, AHugeLengthIsRefusedBeforeAnyAllocation) {
  // Field 3 (the tensor), 100 bytes long, holding data of ~2^31 bytes.
  std::string bytes = "\x1a\x64\x1a\xff\xff\xff\xff\x07";
  bytes += std::string(94, '\0');
  EXPECT_EQ(Decode(bytes).code(), absl::StatusCode::kInvalidArgument);
  // The tensor itself longer than the message.
  EXPECT_EQ(Decode("\x1a\xff\xff\xff\x0f").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(destination_calls_, 0);
}

TEST_F(MalformedTest, ATensorFieldOfAnotherWireTypeIsRefused) {
  absl::Status s = Decode(std::string("\x18\x05", 2));  // field 3 as varint
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not length-delimited"), std::string::npos) << s;
}

TEST_F(MalformedTest, ATensorFieldTwiceIsRefused) {
  const std::string tensor("\x1a\x02\x1a\x00", 4);
  absl::Status s = Decode(tensor + tensor);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("twice"), std::string::npos) << s;
}

// ReadTag returns 0 both at the end of a message and for a tag that does
// not parse; only the first is a message that ends well.
TEST_F(MalformedTest, TrailingBytesThatAreNoFieldAreRefused) {
  const std::string valid = Valid();
  for (const std::string& tail :
       {std::string(1, '\0'), std::string(5, '\xff')}) {
    absl::Status s = Decode(valid + tail);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << tail.size();
    // Where the bad tag starts: right after the good message.
    EXPECT_NE(s.message().find(absl::StrCat("bad tag at byte ", valid.size())),
              std::string::npos)
        << s;
  }
  // The same inside a tensor: its bytes end in a 0 byte.
  absl::Status s = Decode(std::string("\x1a\x03\x1a\x00\x00", 5));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor field 3: bad tag"), std::string::npos)
      << s;
}

TEST_F(MalformedTest, ADestinationErrorRefusesTheMessage) {
  grpc::ByteBuffer buffer = BufferOf(Valid());
  IncomingTensor values(3);
  values.destination = [](int64_t bytes) -> absl::StatusOr<char*> {
    return absl::InvalidArgumentError(absl::StrCat("no room for ", bytes));
  };
  ps::PushDenseRequest fields;
  absl::Status s =
      DecodeWithTensors(&buffer, "PushDense request", &fields, {&values});
  EXPECT_EQ(s.message(), "no room for 64");
}

}  // namespace
}  // namespace distrt::rpc
