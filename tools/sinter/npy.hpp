// Writing tensors as NumPy .npy files (format 1.0) so outputs can be inspected with numpy.
// Float dtypes that numpy lacks (bf16, fp8) are written as float32 holding the exact values.
#pragma once

#include <string>

#include "sinter/host_tensor.hpp"

namespace sinter::cli {

void write_npy(const HostTensor& t, const std::string& path);

}  // namespace sinter::cli
