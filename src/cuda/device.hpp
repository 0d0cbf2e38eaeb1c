// Whether this process can use a GPU (and, if not, a sentence saying why), and what the GPUs are.
// Tests and the CLI ask gpu_availability() first; everything else may assume a device.
#pragma once

#include <cstddef>
#include <string>

namespace sinter::cuda {

struct GpuAvailability {
  bool available = false;
  int device_count = 0;
  // Empty when available; otherwise e.g. "no CUDA driver found (libcuda.so.1 missing)".
  std::string reason;
};

// Probed once per process (the answer cannot change while it runs); never throws.
const GpuAvailability& gpu_availability();

struct DeviceProperties {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  std::string arch;  // what NVRTC compiles for: "sm_90a" on 9.0, "sm_XY" otherwise
  std::size_t max_shared_memory_per_block_optin = 0;
  std::size_t shared_memory_per_sm = 0;
  std::size_t l2_cache_bytes = 0;
  bool cooperative_launch = false;
  int driver_version = 0;   // 1000 * major + 10 * minor, e.g. 13000
  int runtime_version = 0;  // of the statically linked runtime
  std::size_t total_memory = 0;
  std::size_t free_memory = 0;  // at the time of the query
};

// Throws ErrorCode::cuda (with the availability reason when there is no GPU).
DeviceProperties device_properties(int device);

// An H200 as the code generators see it (sm_90a, 132 SMs, 227 KiB of shared memory per block,
// 60 MB of L2), for generating and compiling kernels where there is no GPU: `sinter explain
// --kernels`, CI's NVRTC tests. Named "NVIDIA H200 (assumed)".
DeviceProperties assumed_h200();

// "sm_90a" for 9.0: the arch-specific target unlocks wgmma and setmaxnreg, which our Hopper
// kernels need; other capabilities get the portable "sm_XY".
std::string arch_for_compute_capability(int major, int minor);

int current_device();
void set_device(int device);

// One line for logs and the CLI, e.g.
// "NVIDIA H200 (sm_90a, 132 SMs, 139.8 GiB, driver 13.0, runtime 13.0)".
std::string describe(const DeviceProperties& properties);

// Makes `device` current for its lifetime and restores the previous one, so library code can
// allocate and free on a given device without changing the caller's choice.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace sinter::cuda
