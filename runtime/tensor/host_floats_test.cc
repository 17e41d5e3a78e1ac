#include "runtime/tensor/host_floats.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Host memory that claims the host cannot read it, as a GPU's: the view must
// go through the copy hooks, which count their calls and can be made to fail.
class DeviceLikeMemory final : public Allocator {
 public:
  std::string name() const override { return "device-like"; }
  void* Allocate(size_t bytes) override {
    return CpuAllocator()->Allocate(bytes);
  }
  void Deallocate(void* ptr, size_t bytes) override {
    CpuAllocator()->Deallocate(ptr, bytes);
  }
  int64_t bytes_in_use() const override { return 0; }
  int64_t peak_bytes_in_use() const override { return 0; }
  bool host_accessible() const override { return false; }
  absl::Status CopyToHost(const void* from, void* to, size_t bytes) override {
    ++downloads;
    if (fail_copies) return absl::UnavailableError("device lost");
    return Allocator::CopyToHost(from, to, bytes);
  }
  absl::Status CopyFromHost(const void* from, void* to, size_t bytes) override {
    ++uploads;
    return Allocator::CopyFromHost(from, to, bytes);
  }

  int downloads = 0;
  int uploads = 0;
  bool fail_copies = false;
};

// A tensor of `values` in `memory`, filled through the copy hook.
Tensor MakeTensor(Allocator* memory, std::vector<float> values) {
  absl::StatusOr<Tensor> tensor = Tensor::Create(
      DType::kFloat32, {static_cast<int64_t>(values.size())}, memory);
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_TRUE(
      memory->CopyFromHost(values.data(), tensor->raw_data(), tensor->bytes())
          .ok());
  return *std::move(tensor);
}

std::vector<float> Contents(const Tensor& tensor) {
  std::vector<float> out(tensor.num_elements());
  EXPECT_TRUE(tensor.allocator()
                  ->CopyToHost(tensor.raw_data(), out.data(), tensor.bytes())
                  .ok());
  return out;
}

TEST(HostFloatsTest, HostTensorIsViewedInPlace) {
  Tensor tensor = MakeTensor(CpuAllocator(), {1, 2, 3});
  absl::StatusOr<HostFloats> view = HostFloats::Edit(tensor);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_FALSE(view->is_copy());
  EXPECT_EQ(view->values().data(), tensor.flat<float>().data());
  view->mutable_values()[1] = 20;
  // No Commit needed: the values are the tensor's own.
  EXPECT_THAT(tensor.flat<float>(), ElementsAre(1, 20, 3));
  EXPECT_TRUE(view->Commit().ok());
}

TEST(HostFloatsTest, DeviceTensorIsReadThroughOneDownload) {
  DeviceLikeMemory memory;
  const Tensor tensor = MakeTensor(&memory, {4, 5});
  absl::StatusOr<HostFloats> view = HostFloats::Read(tensor);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_TRUE(view->is_copy());
  EXPECT_EQ(memory.downloads, 1);
  EXPECT_THAT(view->values(), ElementsAre(4, 5));
  EXPECT_NE(view->values().data(), tensor.raw_data());
}

TEST(HostFloatsTest, EditsOfADeviceTensorArriveOnlyOnCommit) {
  DeviceLikeMemory memory;
  Tensor tensor = MakeTensor(&memory, {1, 2});
  const int uploads_before = memory.uploads;
  absl::StatusOr<HostFloats> view = HostFloats::Edit(tensor);
  ASSERT_TRUE(view.ok()) << view.status();
  for (float& v : view->mutable_values()) v *= 10;
  EXPECT_THAT(Contents(tensor), ElementsAre(1, 2));
  ASSERT_TRUE(view->Commit().ok());
  EXPECT_EQ(memory.uploads, uploads_before + 1);
  EXPECT_THAT(Contents(tensor), ElementsAre(10, 20));
}

TEST(HostFloatsTest, FailedDownloadIsReturned) {
  DeviceLikeMemory memory;
  const Tensor tensor = MakeTensor(&memory, {1});
  memory.fail_copies = true;
  absl::StatusOr<HostFloats> view = HostFloats::Read(tensor);
  EXPECT_EQ(view.status().code(), absl::StatusCode::kUnavailable);
}

TEST(HostFloatsTest, NonFloatTensorAndCommitOfAReadAreErrors) {
  absl::StatusOr<Tensor> ints = Tensor::Zeros(DType::kInt64, {2});
  ASSERT_TRUE(ints.ok());
  absl::StatusOr<HostFloats> wrong = HostFloats::Read(*ints);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("int64"));

  Tensor floats = MakeTensor(CpuAllocator(), {1});
  absl::StatusOr<HostFloats> read = HostFloats::Read(floats);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->Commit().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(HostFloatsDeathTest, WritingThroughAReadAborts) {
  Tensor floats = MakeTensor(CpuAllocator(), {1});
  absl::StatusOr<HostFloats> read = HostFloats::Read(floats);
  ASSERT_TRUE(read.ok());
  EXPECT_DEATH(read->mutable_values(),
               "mutable_values\\(\\) of a view made by Read");
}

TEST(HostFloatsTest, EmptyTensorHasNoValues) {
  DeviceLikeMemory memory;
  absl::StatusOr<Tensor> empty = Tensor::Create(DType::kFloat32, {0}, &memory);
  ASSERT_TRUE(empty.ok());
  absl::StatusOr<HostFloats> view = HostFloats::Edit(*empty);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_TRUE(view->values().empty());
  EXPECT_EQ(memory.downloads, 0);
  EXPECT_TRUE(view->Commit().ok());
}

}  // namespace
}  // namespace distrt
