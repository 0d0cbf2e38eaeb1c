// Whether this machine has a usable NVIDIA GPU, asked of the driver library at run time (dlopen),
// so the tool runs on machines without CUDA drivers.
#pragma once

#include <string>

namespace sinter::cli {

struct GpuProbe {
  bool available = false;
  std::string description;  // the device name, or why there is none
};
GpuProbe probe_gpu();

}  // namespace sinter::cli
