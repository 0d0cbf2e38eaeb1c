// Writing tensors as NumPy .npy files (format 1.0) so outputs can be inspected with numpy.
// Float dtypes that numpy lacks (bf16, fp8) are written as float32 holding the exact values.
#pragma once

#include <string>

#include "sinter/host_tensor.hpp"

namespace sinter::cli {

void write_npy(const HostTensor& t, const std::string& path);

// The .npy file name of a tensor named `name`: the name with every character outside
// [A-Za-z0-9_.-] (a '/', a NUL) written as %XX, and a leading '.' too, so that any tensor name
// gives a file inside the chosen folder ("../x" becomes "%2E.%2Fx.npy").
std::string npy_file_name(const std::string& name);

}  // namespace sinter::cli
