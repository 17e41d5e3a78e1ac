#include "runtime/distribute/one_device_strategy.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "runtime/distribute/local_variable.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> OneDeviceStrategy::Create(
    Device* device, StrategyOptions options) {
  std::vector<Device*> devices = {device};
  ASSIGN_OR_RETURN(std::unique_ptr<CrossDeviceOps> ops,
                   CrossDeviceOpsFor(devices, options));
  return std::unique_ptr<OneDeviceStrategy>(new OneDeviceStrategy(
      std::move(devices), std::move(ops), std::move(options)));
}

absl::StatusOr<std::unique_ptr<DistributedVariable>>
OneDeviceStrategy::MakeSyncOnWriteVariable(const VariableOptions& options,
                                           const DistributedVariable*) {
  ASSIGN_OR_RETURN(
      std::unique_ptr<LocalVariable> variable,
      LocalVariable::Create(options, devices(), {0},
                            absl::StrCat("on ", DescribeDevices())));
  return std::unique_ptr<DistributedVariable>(std::move(variable));
}

Strategy& DefaultStrategy() {
  // Built once and never destroyed (callers may hold it until exit); the
  // static pointer keeps the devices and the strategy reachable.
  struct Default {
    LocalDevices devices;
    std::unique_ptr<OneDeviceStrategy> strategy;
  };
  static Default* const made = [] {
    LocalDevicesOptions options;
    options.use_gpus = false;
    absl::StatusOr<LocalDevices> devices = CreateLocalDevices(options);
    if (!devices.ok()) {
      std::fprintf(stderr, "default strategy: %s\n",
                   devices.status().ToString().c_str());
      std::abort();
    }
    auto* result = new Default{*std::move(devices), nullptr};
    absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> strategy =
        OneDeviceStrategy::Create(result->devices.devices[0].get());
    if (!strategy.ok()) {
      std::fprintf(stderr, "default strategy: %s\n",
                   strategy.status().ToString().c_str());
      std::abort();
    }
    result->strategy = *std::move(strategy);
    return result;
  }();
  return *made->strategy;
}

}  // namespace distrt
