// Reading and writing tensors as NumPy .npy files (format 1.0) so outputs can be inspected with numpy.
// Float dtypes that numpy lacks (bf16, fp8) are written as float32 holding the exact values.
#pragma once

#include <string>

#include "sinter/host_tensor.hpp"

namespace sinter::cli {

void write_npy(const HostTensor& t, const std::string& path);

// Reads a .npy file (format 1.0 to 3.0, C order, little-endian f2/f4/f8, i1/i2/i4/i8, u1, b1) as a
// tensor of `dtype`, converting each value as the graph's rounding rules do. Error(io) when the
// file cannot be read, Error(parse) naming what is wrong with it.
HostTensor read_npy(const std::string& path, DType dtype);

// The .npy file name of a tensor named `name`: the name with every character outside
// [A-Za-z0-9_.-] (a '/', a NUL) written as %XX, and a leading '.' too, so that any tensor name
// gives a file inside the chosen folder ("../x" becomes "%2E.%2Fx.npy").
std::string npy_file_name(const std::string& name);

}  // namespace sinter::cli
