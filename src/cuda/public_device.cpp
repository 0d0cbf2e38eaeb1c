// sinter/device.hpp over cuda/device.hpp.
#include "sinter/device.hpp"

#include "cuda/device.hpp"

namespace sinter {

GpuAvailability gpu_availability() {
  const cuda::GpuAvailability& a = cuda::gpu_availability();
  return {a.available, a.device_count, a.reason};
}

DeviceInfo device_info(int ordinal) {
  const cuda::DeviceProperties p = cuda::device_properties(ordinal);
  return {p.ordinal, p.name, p.arch, p.sm_count, p.total_memory, p.l2_cache_bytes, p.driver_version, cuda::describe(p)};
}

}  // namespace sinter
