#include "runtime/models/device_arrays.h"

#include <utility>
#include <vector>

#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<void*> DeviceArrays::UploadBytes(const void* data, DType dtype,
                                                int64_t count) {
  ASSIGN_OR_RETURN(Tensor array,
                   Tensor::Create(dtype, {count}, device_.allocator()));
  RETURN_IF_ERROR(
      device_.allocator()->CopyFromHost(data, array.raw_data(), array.bytes()));
  arrays_.push_back(std::move(array));
  return arrays_.back().raw_data();
}

absl::StatusOr<const float*> DeviceArrays::Upload(
    absl::Span<const float> values) {
  if (host_memory()) return values.data();
  ASSIGN_OR_RETURN(void* up,
                   UploadBytes(values.data(), DType::kFloat32, values.size()));
  return static_cast<const float*>(up);
}

absl::StatusOr<const int64_t*> DeviceArrays::Upload(
    absl::Span<const int64_t> values) {
  if (host_memory()) return values.data();
  ASSIGN_OR_RETURN(void* up,
                   UploadBytes(values.data(), DType::kInt64, values.size()));
  return static_cast<const int64_t*>(up);
}

absl::StatusOr<const int32_t*> DeviceArrays::Upload(
    absl::Span<const int32_t> values) {
  if (host_memory()) return values.data();
  // Tensors hold float32 or int64; int32 ids travel in a float32 tensor of
  // the same size, which is only a buffer here.
  static_assert(sizeof(int32_t) == sizeof(float));
  ASSIGN_OR_RETURN(void* up,
                   UploadBytes(values.data(), DType::kFloat32, values.size()));
  return static_cast<const int32_t*>(up);
}

absl::StatusOr<const int32_t*> DeviceArrays::UploadOwned(
    std::vector<int32_t> values) {
  if (!host_memory()) return Upload(values);
  owned_.push_back(std::move(values));
  return owned_.back().data();
}

absl::StatusOr<float*> DeviceArrays::Floats(int64_t n) {
  ASSIGN_OR_RETURN(Tensor array,
                   Tensor::Create(DType::kFloat32, {n}, device_.allocator()));
  arrays_.push_back(std::move(array));
  return static_cast<float*>(arrays_.back().raw_data());
}

absl::StatusOr<float*> DeviceArrays::Zeros(int64_t n) {
  absl::StatusOr<float*> array = Floats(n);
  RETURN_IF_ERROR(array.status());
  RETURN_IF_ERROR(math().Fill(n, 0.0f, *array));
  return array;
}

absl::Status DeviceArrays::Download(const float* from, absl::Span<float> to) {
  if (to.empty() || from == to.data()) return absl::OkStatus();
  return device_.allocator()->CopyToHost(from, to.data(),
                                         to.size() * sizeof(float));
}

absl::StatusOr<double> DeviceArrays::SumOnHost(const float* from, int64_t n) {
  std::vector<float> host(n);
  RETURN_IF_ERROR(Download(from, absl::MakeSpan(host)));
  double sum = 0;
  for (float v : host) sum += v;
  return sum;
}

}  // namespace distrt
