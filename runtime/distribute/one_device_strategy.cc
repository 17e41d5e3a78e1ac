#include "runtime/distribute/one_device_strategy.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "runtime/device/local_devices.h"
#include "runtime/distribute/local_variable.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> OneDeviceStrategy::Create(
    Device* device, StrategyOptions options) {
  std::vector<Device*> devices = {device};
  absl::StatusOr<std::unique_ptr<CrossDeviceOps>> ops =
      CrossDeviceOpsFor(devices, options);
  if (!ops.ok()) return ops.status();
  return std::unique_ptr<OneDeviceStrategy>(new OneDeviceStrategy(
      std::move(devices), *std::move(ops), std::move(options)));
}

absl::StatusOr<std::unique_ptr<DistributedVariable>>
OneDeviceStrategy::MakeSyncOnWriteVariable(const VariableOptions& options,
                                           const DistributedVariable*) {
  absl::StatusOr<std::unique_ptr<LocalVariable>> variable =
      LocalVariable::Create(options, devices(), {0},
                            absl::StrCat("on ", DescribeDevices()));
  if (!variable.ok()) return variable.status();
  return std::unique_ptr<DistributedVariable>(*std::move(variable));
}

Strategy& DefaultStrategy() {
  // Built once, never destroyed: callers may hold it until exit.
  static Strategy* const strategy = [] {
    LocalDevicesOptions options;
    options.use_gpus = false;
    absl::StatusOr<LocalDevices> devices = CreateLocalDevices(options);
    if (!devices.ok()) {
      std::fprintf(stderr, "default strategy: %s\n",
                   devices.status().ToString().c_str());
      std::abort();
    }
    auto* owned = new LocalDevices(*std::move(devices));
    absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> made =
        OneDeviceStrategy::Create(owned->devices[0].get());
    if (!made.ok()) {
      std::fprintf(stderr, "default strategy: %s\n",
                   made.status().ToString().c_str());
      std::abort();
    }
    return static_cast<Strategy*>(made->release());
  }();
  return *strategy;
}

}  // namespace distrt
