#include "cuda/device.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>

#include "cuda/check.hpp"

namespace sinter::cuda {
namespace {

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

GpuAvailability probe() {
  GpuAvailability result;
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  cudaGetLastError();  // the probe's failure is an answer, not an error for the next call to see
  if (status == cudaSuccess && count > 0) {
    result.available = true;
    result.device_count = count;
    return result;
  }
  if (status == cudaSuccess || status == cudaErrorNoDevice) {
    result.reason = "no CUDA-capable device";
  } else if (status == cudaErrorInsufficientDriver) {
    // The runtime reports a missing driver and an old one alike; tell them apart.
    if (void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      dlclose(handle);
      int driver = 0, runtime = 0;
      cudaDriverGetVersion(&driver);
      cudaRuntimeGetVersion(&runtime);
      result.reason = "the CUDA driver (" + version_text(driver) +
                      ") is older than this build's CUDA runtime (" + version_text(runtime) + ")";
    } else {
      result.reason = "no CUDA driver found (libcuda.so.1 missing)";
    }
  } else {
    result.reason = std::string("CUDA initialization failed: ") + cudaGetErrorName(status) +
                    " (" + cudaGetErrorString(status) + ")";
  }
  return result;
}

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  SINTER_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

}  // namespace

const GpuAvailability& gpu_availability() {
  static const GpuAvailability availability = probe();
  return availability;
}

std::string arch_for_compute_capability(int major, int minor) {
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if (major == 9 && minor == 0) arch += "a";
  return arch;
}

DeviceProperties assumed_h200() {
  DeviceProperties d;
  d.name = "NVIDIA H200 (assumed)";
  d.sm_count = 132;
  d.cc_major = 9;
  d.arch = "sm_90a";
  d.max_shared_memory_per_block_optin = 232448;  // 227 KiB
  d.shared_memory_per_sm = 233472;               // 228 KiB
  d.l2_cache_bytes = 60 * 1024 * 1024;
  return d;
}

DeviceProperties device_properties(int device) {
  DeviceProperties p;
  p.ordinal = device;
  cudaDeviceProp prop{};
  SINTER_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  p.name = prop.name;
  p.sm_count = attribute(cudaDevAttrMultiProcessorCount, device);
  p.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, device);
  p.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, device);
  p.arch = arch_for_compute_capability(p.cc_major, p.cc_minor);
  p.max_shared_memory_per_block_optin =
      std::size_t(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  p.shared_memory_per_sm =
      std::size_t(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  p.l2_cache_bytes = std::size_t(attribute(cudaDevAttrL2CacheSize, device));
  p.cooperative_launch = attribute(cudaDevAttrCooperativeLaunch, device) != 0;
  SINTER_CUDA_CHECK(cudaDriverGetVersion(&p.driver_version));
  SINTER_CUDA_CHECK(cudaRuntimeGetVersion(&p.runtime_version));
  DeviceGuard guard(device);
  SINTER_CUDA_CHECK(cudaMemGetInfo(&p.free_memory, &p.total_memory));
  return p;
}

int current_device() {
  int device = 0;
  SINTER_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

void set_device(int device) { SINTER_CUDA_CHECK(cudaSetDevice(device)); }

std::string describe(const DeviceProperties& p) {
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", double(p.total_memory) / (1ull << 30));
  return p.name + " (" + p.arch + ", " + std::to_string(p.sm_count) + " SMs, " + memory +
         ", driver " + version_text(p.driver_version) + ", runtime " +
         version_text(p.runtime_version) + ")";
}

DeviceGuard::DeviceGuard(int device) {
  previous_ = current_device();
  if (previous_ != device) {
    set_device(device);
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  // Restoring cannot fail for a device that was current a moment ago; a destructor must not throw.
  if (changed_) cudaSetDevice(previous_);
}

}  // namespace sinter::cuda
