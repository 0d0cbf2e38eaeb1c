#include "cuda/check.hpp"

#include <string>

#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

std::string where(const char* file, int line) {
  return " at " + std::string(source_location_name(file)) + ":" + std::to_string(line);
}

}  // namespace

std::string_view source_location_name(const char* file) {
  // The deepest project folder wins, so a checkout that itself lives under some ".../src/" works.
  std::string_view path(file);
  std::size_t best = std::string_view::npos;
  for (std::string_view root : {"/src/", "/tests/", "/tools/", "/include/"}) {
    auto pos = path.rfind(root);
    if (pos != std::string_view::npos && (best == std::string_view::npos || pos > best)) best = pos;
  }
  return best == std::string_view::npos ? path : path.substr(best + 1);
}

void throw_runtime_error(cudaError_t status, std::string_view call, const char* file, int line) {
  // Reset the runtime's "last error" for non-sticky failures, so a later cudaGetLastError (after
  // a kernel launch, say) does not report this already-thrown failure again.
  cudaGetLastError();
  std::string message = std::string(call) + " failed: " + cudaGetErrorName(status) + " (" +
                        cudaGetErrorString(status) + ")";
  // The two failures a machine without a usable GPU gives deserve the plain reason.
  if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) {
    message += "; " + gpu_availability().reason;
  }
  throw Error(ErrorCode::cuda, message + where(file, line));
}

void throw_driver_error(CUresult status, std::string_view call, const char* file, int line) {
  std::string text = "CUresult " + std::to_string(static_cast<int>(status));
  // The names come from the driver itself; if it cannot even be reached, the number must do.
  try {
    const DriverApi& api = driver();
    const char* name = nullptr;
    const char* description = nullptr;
    if (api.get_error_name(status, &name) == CUDA_SUCCESS && name) text = name;
    if (api.get_error_string(status, &description) == CUDA_SUCCESS && description) {
      text += std::string(" (") + description + ")";
    }
  } catch (const Error&) {
  }
  throw Error(ErrorCode::cuda, std::string(call) + " failed: " + text + where(file, line));
}

void throw_nvrtc_error(nvrtcResult status, std::string_view call, const char* file, int line) {
  throw Error(ErrorCode::compile,
              std::string(call) + " failed: " + nvrtcGetErrorString(status) + where(file, line));
}

}  // namespace sinter::cuda
