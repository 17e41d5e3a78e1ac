// Every model computes the same on a device whose memory the host cannot
// read (the path a GPU takes: uploads, scratch arrays in device memory,
// downloads, dense gradients into the caller's device buffer) as on the
// host. OpaqueMemoryDevice does the GPU's bookkeeping with CPU arithmetic,
// so the results must be equal, bit for bit.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device/opaque_memory_device.h"
#include "runtime/models/model_config.h"
#include "runtime/models/model_test_util.h"

namespace distrt {
namespace {

ModelConfig ConfigFor(const std::string& name) {
  ModelConfig config;
  config.name = name;
  config.num_features = 12;
  config.num_classes = 4;
  config.hidden_units = {6, 5};
  config.embedding_dim = 3;
  config.seed = 9;
  return config;
}

Batch BatchFor(const std::string& name, uint64_t seed) {
  std::vector<float> labels;
  for (int i = 0; i < 9; ++i) {
    labels.push_back(name == "mlp"      ? static_cast<float>(i % 4)
                     : name == "linear" ? 0.5f * i - 1.0f
                                        : static_cast<float>(i % 2));
  }
  const bool sparse = name == "logreg" || name == "wide_deep";
  return sparse ? RandomSparseBatch(labels, 12, 5, seed)
                : RandomDenseBatch(labels, 12, seed);
}

void ExpectSameResult(const ModelStepResult& expected,
                      const ModelStepResult& got, bool dense_in_buffer,
                      const Model& model) {
  EXPECT_EQ(got.loss_sum, expected.loss_sum);
  EXPECT_EQ(got.predictions, expected.predictions);
  ASSERT_EQ(got.gradients.size(), expected.gradients.size());
  for (size_t i = 0; i < got.gradients.size(); ++i) {
    const bool dense = model.variables()[i].kind == ModelVariable::Kind::kDense;
    if (dense && dense_in_buffer) {
      EXPECT_TRUE(got.gradients[i].dense.empty()) << i;
    } else {
      EXPECT_EQ(got.gradients[i].dense, expected.gradients[i].dense) << i;
    }
    EXPECT_EQ(got.gradients[i].ids, expected.gradients[i].ids) << i;
    EXPECT_EQ(got.gradients[i].rows, expected.gradients[i].rows) << i;
  }
}

class DevicePathTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DevicePathTest, SameAsOnTheHost) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      CreateModel(ConfigFor(GetParam()));
  ASSERT_TRUE(model.ok()) << model.status();
  OpaqueMemoryDevice device(0);
  for (uint64_t seed : {1, 2}) {
    const Batch batch = BatchFor(GetParam(), seed);
    absl::StatusOr<std::vector<VariableSlice>> values =
        RandomValues(**model, batch, seed, 0.5f);
    ASSERT_TRUE(values.ok()) << values.status();
    for (bool with_gradients : {false, true}) {
      ModelStepResult on_host, on_device;
      ASSERT_TRUE(
          (*model)->Compute(batch, *values, with_gradients, &on_host).ok());
      const absl::Status s =
          (*model)->ComputeOn(device, batch, *values, with_gradients,
                              /*dense_gradients=*/nullptr, &on_device);
      ASSERT_TRUE(s.ok()) << s;
      ExpectSameResult(on_host, on_device, false, **model);
    }
  }
  EXPECT_GT(device.bytes_from_host(), 0);
  EXPECT_GT(device.bytes_to_host(), 0);
  EXPECT_EQ(device.allocator()->bytes_in_use(), 0);
}

// Dense gradients written into the caller's buffer in device memory, at
// the offsets given: what the train step all-reduces without a copy.
TEST_P(DevicePathTest, DenseGradientsGoIntoTheDeviceBuffer) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      CreateModel(ConfigFor(GetParam()));
  ASSERT_TRUE(model.ok()) << model.status();
  const Batch batch = BatchFor(GetParam(), 3);
  absl::StatusOr<std::vector<VariableSlice>> values =
      RandomValues(**model, batch, 3, 0.5f);
  ASSERT_TRUE(values.ok()) << values.status();
  ModelStepResult on_host;
  ASSERT_TRUE((*model)->Compute(batch, *values, true, &on_host).ok());

  OpaqueMemoryDevice device(0);
  DenseGradientBuffer buffer;
  int64_t size = 1;  // one spare float first, so offset 0 is not assumed
  for (size_t i = 0; i < values->size(); ++i) {
    buffer.offsets.push_back(size);
    size += static_cast<int64_t>((*values)[i].dense.size());
  }
  // Filled with NaN, as a GPU's reused block holds garbage: every gradient
  // must be written, not added to.
  absl::StatusOr<Tensor> packed =
      Tensor::Create(DType::kFloat32, {size}, device.allocator());
  ASSERT_TRUE(packed.ok());
  buffer.base = static_cast<float*>(packed->raw_data());
  ModelStepResult on_device;
  const absl::Status s =
      (*model)->ComputeOn(device, batch, *values, true, &buffer, &on_device);
  ASSERT_TRUE(s.ok()) << s;
  ExpectSameResult(on_host, on_device, true, **model);
  std::vector<float> downloaded(size);
  ASSERT_TRUE(
      device.allocator()
          ->CopyToHost(packed->raw_data(), downloaded.data(), packed->bytes())
          .ok());
  EXPECT_TRUE(std::isnan(downloaded[0])) << "written outside the offsets";
  for (size_t i = 0; i < values->size(); ++i) {
    const std::vector<float>& expected = on_host.gradients[i].dense;
    std::vector<float> got(downloaded.begin() + buffer.offsets[i],
                           downloaded.begin() + buffer.offsets[i] +
                               static_cast<int64_t>(expected.size()));
    EXPECT_EQ(got, expected) << (*model)->variables()[i].name();
  }
}

// The device's math refuses arrays that are not in its memory, so a
// missing upload fails here as it would on a GPU.
TEST(OpaqueMemoryDeviceTest, MathRefusesHostArrays) {
  OpaqueMemoryDevice device(0);
  std::vector<float> host(4);
  EXPECT_EQ(device.math().Fill(4, 1.0f, host.data()).code(),
            absl::StatusCode::kInternal);
  absl::StatusOr<Tensor> owned =
      Tensor::Create(DType::kFloat32, {4}, device.allocator());
  ASSERT_TRUE(owned.ok());
  EXPECT_TRUE(
      device.math().Fill(4, 1.0f, static_cast<float*>(owned->raw_data())).ok());
  EXPECT_EQ(device.math()
                .Fill(5, 1.0f, static_cast<float*>(owned->raw_data()))
                .code(),
            absl::StatusCode::kInternal);
}

INSTANTIATE_TEST_SUITE_P(Models, DevicePathTest,
                         ::testing::Values("linear", "logreg", "mlp",
                                           "wide_deep"));

}  // namespace
}  // namespace distrt
