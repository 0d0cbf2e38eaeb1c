// The GPUs this process can use.
#pragma once

#include <cstddef>
#include <string>

namespace sinter {

struct GpuAvailability {
  bool available = false;
  int count = 0;
  std::string reason;  // why not, when !available ("no NVIDIA driver (libcuda.so.1 not found)")
};
// Probed once per process.
GpuAvailability gpu_availability();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::string arch;  // "sm_90a": what plans for it are compiled for
  int sm_count = 0;
  size_t memory_bytes = 0;
  size_t l2_cache_bytes = 0;
  int driver_version = 0;
  std::string description;  // one line of the above
};
// Error(cuda) naming the reason when there is no such device.
DeviceInfo device_info(int ordinal = 0);

}  // namespace sinter
