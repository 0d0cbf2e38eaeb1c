// Checks for every CUDA runtime, driver and NVRTC call. A failure throws sinter::Error whose
// message names the call as written, the status name and text, and where it was made, e.g.
//   cudaMalloc(&ptr, bytes) failed: cudaErrorMemoryAllocation (out of memory) at src/cuda/buffer.cpp:31
// The checks are macros only to capture the expression text and the call site.
#pragma once

#include <cuda.h>  // CUresult only: the driver library itself is reached through driver.hpp
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <string_view>

#define SINTER_CUDA_CHECK(expr) ::sinter::cuda::check_runtime((expr), #expr, __FILE__, __LINE__)
#define SINTER_CU_CHECK(expr) ::sinter::cuda::check_driver((expr), #expr, __FILE__, __LINE__)
#define SINTER_NVRTC_CHECK(expr) ::sinter::cuda::check_nvrtc((expr), #expr, __FILE__, __LINE__)

namespace sinter::cuda {

// Throw ErrorCode::cuda (runtime, driver) or ErrorCode::compile (NVRTC). `call` is the expression
// text, or a description of the call when the caller has more to say (a kernel name, a size).
[[noreturn]] void throw_runtime_error(cudaError_t status, std::string_view call, const char* file,
                                      int line);
[[noreturn]] void throw_driver_error(CUresult status, std::string_view call, const char* file,
                                     int line);
[[noreturn]] void throw_nvrtc_error(nvrtcResult status, std::string_view call, const char* file,
                                    int line);

inline void check_runtime(cudaError_t status, std::string_view call, const char* file, int line) {
  if (status != cudaSuccess) throw_runtime_error(status, call, file, line);
}
inline void check_driver(CUresult status, std::string_view call, const char* file, int line) {
  if (status != CUDA_SUCCESS) throw_driver_error(status, call, file, line);
}
inline void check_nvrtc(nvrtcResult status, std::string_view call, const char* file, int line) {
  if (status != NVRTC_SUCCESS) throw_nvrtc_error(status, call, file, line);
}

// "src/cuda/buffer.cpp" from an absolute __FILE__: messages stay short and machine independent.
std::string_view source_location_name(const char* file);

}  // namespace sinter::cuda
