// Run-time compilation of CUDA C++ to a cubin with NVRTC. Every file under kernels/ is available
// to #include by its path relative to kernels/ ("common/types.cuh"); the toolkit's headers
// (<cuda_bf16.h>, <cuda/barrier>) are found through -I options, see cuda_include_directories().
// Kernels meant to be looked up by name are declared extern "C".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sinter::cuda {

struct SourceHeader {
  std::string name;  // the path #include uses
  std::string contents;
};

struct CompileOptions {
  std::string arch = "sm_90a";  // a real architecture: a cubin is wanted, not PTX
  std::vector<std::string> extra_options;  // appended after the defaults
  // Headers besides the embedded kernels/ files (generated code, tests). One with the same name
  // as an embedded file replaces it: handy for trying a kernel change without a rebuild.
  std::vector<SourceHeader> extra_headers;
};

struct CompileResult {
  std::vector<char> cubin;
  std::string log;  // warnings; empty when there were none
  double compile_ms = 0;
};

struct NvrtcVersion {
  int major = 0;
  int minor = 0;
};
NvrtcVersion nvrtc_version();

// The toolkit include folders given to NVRTC, first found of: $SINTER_CUDA_INCLUDE_DIR,
// $CUDA_HOME/include, $CUDA_PATH/include, the toolkit Sinter was built with, /usr/local/cuda/include
// (each with its cccl/ subfolder when present, where CUDA 13 keeps libcu++). Empty when none exists.
std::vector<std::string> cuda_include_directories();

// Exactly the options passed to NVRTC: --gpu-architecture=<arch> -lineinfo --std=c++17
// -default-device, -I for each cuda_include_directories(), then extra_options.
std::vector<std::string> compile_options(const CompileOptions& options);

// `name` is the file name shown in diagnostics and line info ("gemm_region_3.cu"). A failure
// throws ErrorCode::compile with NVRTC's log, which names the file and line of each error.
CompileResult compile_cuda(std::string_view name, std::string_view source,
                           const CompileOptions& options = {});

}  // namespace sinter::cuda
