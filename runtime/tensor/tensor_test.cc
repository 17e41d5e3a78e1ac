#include "runtime/tensor/tensor.h"

#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TensorTest, CreateGivesShapeAndAlignedBuffer) {
  absl::StatusOr<Tensor> t = Tensor::Zeros(DType::kFloat32, {2, 3});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_elements(), 6);
  EXPECT_EQ(t->bytes(), 24u);
  EXPECT_EQ(t->rank(), 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % Allocator::kAlignment,
            0u);
  EXPECT_THAT(t->flat<float>(), ::testing::Each(0.0f));
  EXPECT_EQ(DescribeTensor(*t), "float32[2, 3]");
}

TEST(TensorTest, ScalarsAndEmptyTensors) {
  absl::StatusOr<Tensor> scalar = Tensor::Zeros(DType::kInt64, {});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->num_elements(), 1);
  scalar->flat<int64_t>()[0] = 42;
  EXPECT_EQ(scalar->flat<int64_t>()[0], 42);
  absl::StatusOr<Tensor> empty = Tensor::Create(DType::kFloat32, {0, 5});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->num_elements(), 0);
  EXPECT_FALSE(empty->is_null());
  EXPECT_TRUE(empty->flat<float>().empty());
}

TEST(TensorTest, MoveTransfersTheBufferAndCloneCopies) {
  const int64_t before = CpuAllocator()->bytes_in_use();
  {
    absl::StatusOr<Tensor> a = Tensor::FromFloats({1, 2, 3, 4}, {2, 2});
    ASSERT_TRUE(a.ok());
    const void* buffer = a->raw_data();
    Tensor b = *std::move(a);
    EXPECT_EQ(b.raw_data(), buffer);
    absl::StatusOr<Tensor> c = b.Clone();
    ASSERT_TRUE(c.ok());
    EXPECT_NE(c->raw_data(), b.raw_data());
    b.flat<float>()[0] = 9;
    EXPECT_THAT(c->flat<float>(), ElementsAre(1, 2, 3, 4));
    Tensor d;
    EXPECT_TRUE(d.is_null());
    d = std::move(b);
    EXPECT_TRUE(b.is_null());  // NOLINT(bugprone-use-after-move): documented
    EXPECT_THAT(d.flat<float>(), ElementsAre(9, 2, 3, 4));
    EXPECT_EQ(CpuAllocator()->bytes_in_use(), before + 32);
  }
  EXPECT_EQ(CpuAllocator()->bytes_in_use(), before);
}

TEST(TensorTest, BadShapesAreErrors) {
  EXPECT_THAT(Tensor::Create(DType::kFloat32, {3, -1}).status().message(),
              HasSubstr("negative dimension"));
  EXPECT_THAT(
      Tensor::Create(DType::kFloat32, {1 << 30, 1 << 30, 4}).status().message(),
      HasSubstr("more than 2^40"));
  EXPECT_THAT(Tensor::FromFloats({1, 2, 3}, {2, 2}).status().message(),
              HasSubstr("3 values for a tensor of shape [2, 2]"));
}

TEST(TensorTest, HoldsInt64AndFloat64Values) {
  absl::StatusOr<Tensor> d = Tensor::FromValues<double>({0.1, 1e300}, {2});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->dtype(), DType::kFloat64);
  EXPECT_EQ(d->bytes(), 16u);
  EXPECT_EQ(d->flat<double>()[0], 0.1);
  EXPECT_EQ(d->flat<double>()[1], 1e300);
  EXPECT_EQ(DTypeName(DType::kFloat64), "float64");
  absl::StatusOr<Tensor> i =
      Tensor::FromValues<int64_t>({int64_t{1} << 60}, {1, 1});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_EQ(i->flat<int64_t>()[0], int64_t{1} << 60);
  EXPECT_THAT(Tensor::FromValues<double>({1, 2}, {3}).status().message(),
              HasSubstr("2 values for a tensor of shape [3]"));
}

TEST(TensorDeathTest, WrongElementTypeAborts) {
  absl::StatusOr<Tensor> t = Tensor::Zeros(DType::kInt64, {2});
  ASSERT_TRUE(t.ok());
  EXPECT_DEATH(t->flat<float>(), "float32 elements requested of a int64");
}

}  // namespace
}  // namespace distrt
