// The CUDA driver API functions Sinter needs, resolved at run time through the runtime's
// cudaGetDriverEntryPointByVersion. Nothing links libcuda: it does not exist on CI machines, and
// the statically linked runtime already loads it on GPU machines.
#pragma once

#include <cudaTypedefs.h>

namespace sinter::cuda {

struct DriverApi {
  PFN_cuGetErrorName_v6000 get_error_name = nullptr;
  PFN_cuGetErrorString_v6000 get_error_string = nullptr;
  PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encode_tiled = nullptr;
  PFN_cuTensorMapEncodeIm2col_v12000 tensor_map_encode_im2col = nullptr;
  // Lets a CUDA-graph executor rebind a tensor map to a new buffer without re-encoding it.
  PFN_cuTensorMapReplaceAddress_v12000 tensor_map_replace_address = nullptr;
  // A library kernel's function in the current context, and loading it there now (not lazily at
  // its first launch). func_load is null on drivers before CUDA 12.4, which have no lazy function
  // loading to undo.
  PFN_cuKernelGetFunction_v12000 kernel_get_function = nullptr;
  PFN_cuFuncLoad_v12040 func_load = nullptr;
};

// Resolved once per process, thread-safe. Throws ErrorCode::cuda naming the symbol when there is
// no driver or the driver lacks a function; a later call tries again.
const DriverApi& driver();

}  // namespace sinter::cuda
