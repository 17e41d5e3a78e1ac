#include "rpc/tensor_codec.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt::rpc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TensorCodecTest, Float32RoundTripIsBitExact) {
  const std::vector<float> values = {1.5f, -0.0f, 3.25e-38f, 1e30f};
  ps::Tensor tensor;
  EncodeFloat32(values, {2, 2}, &tensor);
  EXPECT_EQ(tensor.data().size(), 16u);
  EXPECT_THAT(tensor.shape(), ElementsAre(2, 2));
  std::vector<float> scratch;
  absl::StatusOr<absl::Span<const float>> decoded =
      Float32Elements(ViewOf(tensor), "t", &scratch);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->size(), values.size());
  EXPECT_EQ(std::memcmp(decoded->data(), values.data(), 16), 0);
}

TEST(TensorCodecTest, BytesAreLittleEndian) {
  ps::Tensor tensor;
  EncodeInt64({0x0102030405060708}, {}, &tensor);
  ASSERT_EQ(tensor.data().size(), 8u);
  EXPECT_EQ(tensor.data()[0], 0x08);
  EXPECT_EQ(tensor.data()[7], 0x01);
}

TEST(TensorCodecTest, SurvivesSerialization) {
  ps::Tensor tensor;
  EncodeInt64({7, -9, 1LL << 40}, {3}, &tensor);
  ps::Tensor parsed;
  ASSERT_TRUE(parsed.ParseFromString(tensor.SerializeAsString()));
  std::vector<int64_t> scratch;
  absl::StatusOr<absl::Span<const int64_t>> ids =
      Int64Elements(ViewOf(parsed), "ids", &scratch);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(7, -9, 1LL << 40));
}

TEST(TensorCodecTest, WrongDtypeNamesWhat) {
  ps::Tensor tensor;
  EncodeInt64({1}, {1}, &tensor);
  std::vector<float> scratch;
  absl::Status s =
      Float32Elements(ViewOf(tensor), "the gradient of \"w\"", &scratch)
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the gradient of \"w\" is int64"));
}

TEST(TensorCodecTest, PartialElementIsRefused) {
  ps::Tensor tensor;
  tensor.set_dtype(ps::FLOAT32);
  tensor.set_data("abcdefg");
  std::vector<float> scratch;
  EXPECT_THAT(Float32Elements(ViewOf(tensor), "t", &scratch).status().message(),
              HasSubstr("7 bytes"));
}

TEST(TensorCodecTest, ShapeMustMatchTheBytes) {
  ps::Tensor tensor;
  EncodeFloat32({1, 2, 3}, {2, 2}, &tensor);
  std::vector<float> scratch;
  EXPECT_THAT(Float32Elements(ViewOf(tensor), "t", &scratch).status().message(),
              HasSubstr("shape [2, 2] but 3 elements"));
  tensor.mutable_shape()->Set(0, -1);
  EXPECT_FALSE(Float32Elements(ViewOf(tensor), "t", &scratch).ok());
  tensor.mutable_shape()->Set(0, int64_t{1} << 62);
  tensor.mutable_shape()->Set(1, int64_t{1} << 62);
  EXPECT_FALSE(Float32Elements(ViewOf(tensor), "t", &scratch).ok());
}

}  // namespace
}  // namespace distrt::rpc
