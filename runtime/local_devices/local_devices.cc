#include "runtime/local_devices/local_devices.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/device/cpu_device.h"
#include "runtime/gpu/gpu_devices.h"
#include "runtime/gpu/gpu_probe.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

constexpr int kMaxCpuDevices = 256;

// The CUDA ordinals of the GPUs to use, or why there are none.
absl::StatusOr<std::vector<int>> ChooseGpus(const LocalDevicesOptions& options,
                                            const gpu::GpuProbeResult& probe) {
  std::vector<int> visible;
  for (const gpu::GpuInfo& info : probe.gpus) visible.push_back(info.ordinal);
  if (options.gpu_ids.empty()) return visible;
  for (int id : options.gpu_ids) {
    if (std::count(options.gpu_ids.begin(), options.gpu_ids.end(), id) > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU ", id, " is requested more than once"));
    }
    if (std::find(visible.begin(), visible.end(), id) == visible.end()) {
      return absl::NotFoundError(
          absl::StrCat("GPU ", id, " was requested, but the visible GPUs are ",
                       visible.empty() ? "none" : absl::StrJoin(visible, ", "),
                       " (numbered after CUDA_VISIBLE_DEVICES)"));
    }
  }
  return options.gpu_ids;
}

std::string DescribeGpus(const gpu::GpuProbeResult& probe,
                         const std::vector<int>& chosen) {
  std::vector<std::string> names;
  for (int ordinal : chosen) {
    for (const gpu::GpuInfo& info : probe.gpus) {
      if (info.ordinal == ordinal) {
        names.push_back(absl::StrCat(info.name, " (", info.memory_bytes >> 20,
                                     " MiB, compute capability ",
                                     info.compute_capability_major, ".",
                                     info.compute_capability_minor, ")"));
      }
    }
  }
  return absl::StrCat(chosen.size(), chosen.size() == 1 ? " GPU" : " GPUs",
                      ": ", absl::StrJoin(names, ", "), "; ",
                      probe.library_versions);
}

}  // namespace

absl::Status ParseDeviceSelection(absl::string_view text,
                                  LocalDevicesOptions* options) {
  options->gpu_ids.clear();
  options->use_gpus = true;
  options->require_gpus = false;
  if (text == "auto") return absl::OkStatus();
  if (text == "cpu") {
    options->use_gpus = false;
    return absl::OkStatus();
  }
  options->require_gpus = true;
  if (text == "gpu") return absl::OkStatus();
  if (absl::ConsumePrefix(&text, "gpu:")) {
    for (absl::string_view id : absl::StrSplit(text, ',')) {
      int ordinal = -1;
      if (!absl::SimpleAtoi(id, &ordinal) || ordinal < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", id, "\" in \"gpu:", text,
                         "\" is not a GPU number (0, 1, ...)"));
      }
      options->gpu_ids.push_back(ordinal);
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", text, "\" is not auto, cpu, gpu or gpu:<ids> (e.g. gpu:0,1)"));
}

absl::StatusOr<LocalDevices> CreateLocalDevices(
    const LocalDevicesOptions& options) {
  if (options.num_cpu_devices < 1 || options.num_cpu_devices > kMaxCpuDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of CPU devices must be in 1..", kMaxCpuDevices,
                     ", not ", options.num_cpu_devices));
  }
  std::string why_cpu = "GPUs not requested";
  if (options.use_gpus) {
    gpu::GpuProbeResult probe = gpu::ProbeGpus();
    if (probe.gpus.empty()) {
      if (options.require_gpus) {
        return absl::FailedPreconditionError(
            absl::StrCat("GPUs were requested, but there is no usable GPU: ",
                         probe.unavailable_reason));
      }
      why_cpu = absl::StrCat("no usable GPU (", probe.unavailable_reason, ")");
    } else {
      ASSIGN_OR_RETURN(std::vector<int> chosen, ChooseGpus(options, probe));
      ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Device>> gpus,
                       gpu::CreateGpuDevices(options.task, chosen));
      LocalDevices local;
      local.devices = std::move(gpus);
      local.description = DescribeGpus(probe, chosen);
      return local;
    }
  }
  LocalDevices local;
  for (int id = 0; id < options.num_cpu_devices; ++id) {
    local.devices.push_back(std::make_unique<CpuDevice>(options.task, id));
  }
  local.description = absl::StrCat(
      why_cpu, "; ", options.num_cpu_devices,
      options.num_cpu_devices == 1 ? " CPU device" : " logical CPU devices");
  return local;
}

}  // namespace distrt
