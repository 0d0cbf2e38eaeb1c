#include "gpu_probe.hpp"

#include <dlfcn.h>

namespace sinter::cli {

GpuProbe probe_gpu() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return {false, "no NVIDIA driver (libcuda.so.1 not found)"};
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
  GpuProbe p{false, "the NVIDIA driver is incomplete"};
  int n = 0, dev = 0;
  char buf[256] = {};
  if (init && count && get && name) {
    if (init(0) != 0) {
      p.description = "the NVIDIA driver found no usable GPU (cuInit failed)";
    } else if (count(&n) != 0 || n == 0) {
      p.description = "no GPU found";
    } else if (get(&dev, 0) == 0 && name(buf, sizeof buf, dev) == 0) {
      p = {true, buf};
    }
  }
  dlclose(lib);
  return p;
}

}  // namespace sinter::cli
