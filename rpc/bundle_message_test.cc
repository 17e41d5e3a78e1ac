// The Bundle codec: what EncodeBundle writes is protobuf's BundleRequest,
// what protobuf writes DecodeBundle reads, part messages survive the
// buffer they came in, and broken bytes are an error naming the part.

#include "rpc/bundle_message.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/support/slice.h"
#include "gtest/gtest.h"
#include "proto/ps_service.pb.h"
#include "tests/util/byte_buffers.h"

namespace distrt::rpc {
namespace {

using ::testing::HasSubstr;

using testing::BufferOfPieces;
using testing::BytesOf;

TEST(BundleMessageTest, EncodesWhatProtobufParses) {
  std::vector<WirePart> parts(3);
  parts[0].method = "PullSparse";
  parts[0].message = BufferOfPieces({"abc", std::string(1000, 'x'), "def"});
  parts[1].method = "PushDense";
  parts[1].message = BufferOfPieces({""});
  parts[2].code = 5;
  parts[2].error = "variable \"w\" not found";
  const std::string bytes = BytesOf(EncodeBundle(parts));
  ps::BundleRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(parsed.parts_size(), 3);
  EXPECT_EQ(parsed.parts(0).method(), "PullSparse");
  EXPECT_EQ(parsed.parts(0).message(), "abc" + std::string(1000, 'x') + "def");
  EXPECT_EQ(parsed.parts(1).method(), "PushDense");
  EXPECT_EQ(parsed.parts(1).message(), "");
  EXPECT_EQ(parsed.parts(2).code(), 5);
  EXPECT_EQ(parsed.parts(2).error(), "variable \"w\" not found");
}

TEST(BundleMessageTest, DecodesWhatProtobufWrites) {
  ps::BundleResponse response;
  ps::BundlePart* a = response.add_parts();
  a->set_message(std::string(70000, 'y'));
  ps::BundlePart* b = response.add_parts();
  b->set_code(3);
  b->set_error("bad shape");
  const std::string bytes = response.SerializeAsString();
  // Cut across the slices, so that fields straddle them.
  grpc::ByteBuffer buffer = BufferOfPieces(
      {bytes.substr(0, 2), bytes.substr(2, 30000), bytes.substr(30002)});
  absl::StatusOr<std::vector<WirePart>> parts =
      DecodeBundle(&buffer, "Bundle response");
  ASSERT_TRUE(parts.ok()) << parts.status();
  // The received bytes go; the parts' messages keep what they point at.
  buffer.Clear();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ(BytesOf((*parts)[0].message), std::string(70000, 'y'));
  EXPECT_EQ((*parts)[0].code, 0);
  EXPECT_EQ((*parts)[1].code, 3);
  EXPECT_EQ((*parts)[1].error, "bad shape");
  // A part without a message has an empty one, which reads.
  EXPECT_EQ((*parts)[1].message.Length(), 0u);
  EXPECT_EQ(BytesOf((*parts)[1].message), "");
}

TEST(BundleMessageTest, RoundTripsAnEmptyBundle) {
  grpc::ByteBuffer buffer = EncodeBundle({});
  absl::StatusOr<std::vector<WirePart>> parts =
      DecodeBundle(&buffer, "Bundle request");
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_TRUE(parts->empty());
}

TEST(BundleMessageTest, ABrokenBundleIsAnErrorNamingThePart) {
  std::vector<WirePart> parts(2);
  parts[0].method = "PullSparse";
  parts[0].message = BufferOfPieces({"0123456789"});
  parts[1].method = "PushSparse";
  parts[1].message = BufferOfPieces({std::string(300, 'z')});
  const std::string bytes = BytesOf(EncodeBundle(parts));
  for (size_t cut : {bytes.size() - 1, bytes.size() - 200, size_t{20}}) {
    grpc::ByteBuffer truncated = BufferOfPieces({bytes.substr(0, cut)});
    absl::StatusOr<std::vector<WirePart>> decoded =
        DecodeBundle(&truncated, "Bundle request");
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument)
        << cut;
    EXPECT_THAT(decoded.status().message(),
                HasSubstr("malformed Bundle request"));
  }
  grpc::ByteBuffer truncated =
      BufferOfPieces({bytes.substr(0, bytes.size() - 1)});
  EXPECT_THAT(DecodeBundle(&truncated, "Bundle request").status().message(),
              HasSubstr("part 1"));
}

}  // namespace
}  // namespace distrt::rpc
