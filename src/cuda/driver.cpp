#include "cuda/driver.hpp"

#include <string>

#include "cuda/check.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

// Each function is asked for by the CUDA version whose ABI its typedef above describes, so a newer
// driver hands back a compatible entry point rather than whatever its latest variant is.
template <typename Fn>
void resolve(Fn& fn, const char* symbol, unsigned int abi_version) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  check_runtime(
      cudaGetDriverEntryPointByVersion(symbol, &address, abi_version, cudaEnableDefault, &query),
      std::string("cudaGetDriverEntryPointByVersion(\"") + symbol + "\", " +
          std::to_string(abi_version) + ")",
      __FILE__, __LINE__);
  if (query != cudaDriverEntryPointSuccess || address == nullptr) {
    const char* why = query == cudaDriverEntryPointVersionNotSufficent
                          ? "the driver is too old for it"
                          : "the driver does not have it";
    throw Error(ErrorCode::cuda, std::string("CUDA driver function ") + symbol + " (ABI " +
                                     std::to_string(abi_version) + ") is unavailable: " + why);
  }
  fn = reinterpret_cast<Fn>(address);
}

// As resolve, but a function the driver lacks stays null.
template <typename Fn>
void resolve_optional(Fn& fn, const char* symbol, unsigned int abi_version) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &address, abi_version, cudaEnableDefault, &query) != cudaSuccess ||
      query != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    address = nullptr;
  }
  fn = reinterpret_cast<Fn>(address);
}

DriverApi resolve_all() {
  DriverApi api;
  resolve(api.get_error_name, "cuGetErrorName", 6000);
  resolve(api.get_error_string, "cuGetErrorString", 6000);
  resolve(api.tensor_map_encode_tiled, "cuTensorMapEncodeTiled", 12000);
  resolve(api.tensor_map_encode_im2col, "cuTensorMapEncodeIm2col", 12000);
  resolve(api.tensor_map_replace_address, "cuTensorMapReplaceAddress", 12000);
  resolve(api.kernel_get_function, "cuKernelGetFunction", 12000);
  resolve_optional(api.func_load, "cuFuncLoad", 12040);
  return api;
}

}  // namespace

const DriverApi& driver() {
  // A function-local static: initialization is thread-safe, and an initializer that throws leaves
  // it uninitialized, so the next call retries and reports the failure again.
  static const DriverApi api = resolve_all();
  return api;
}

}  // namespace sinter::cuda
