#include "engines/cudnn/cudnn_library.hpp"

#include "cuda/dynamic_library.hpp"
#include "sinter/error.hpp"

namespace sinter::cudnn {
Library load_library(const std::string& path) {
  Library lib;
  lib.path = path;
  void* h = cuda::open_library(lib.path, lib.reason);
  if (!h) return lib;
  auto sym = [&](auto& fn, const char* name) { cuda::bind_symbol(h, lib.path, fn, name, lib.reason); };
  sym(lib.GetVersion, "cudnnGetVersion");
  sym(lib.GetErrorString, "cudnnGetErrorString");
  sym(lib.GetLastErrorString, "cudnnGetLastErrorString");
  sym(lib.Create, "cudnnCreate");
  sym(lib.Destroy, "cudnnDestroy");
  sym(lib.SetStream, "cudnnSetStream");
  sym(lib.BackendCreateDescriptor, "cudnnBackendCreateDescriptor");
  sym(lib.BackendDestroyDescriptor, "cudnnBackendDestroyDescriptor");
  sym(lib.BackendSetAttribute, "cudnnBackendSetAttribute");
  sym(lib.BackendGetAttribute, "cudnnBackendGetAttribute");
  sym(lib.BackendFinalize, "cudnnBackendFinalize");
  sym(lib.BackendExecute, "cudnnBackendExecute");
  if (!lib.reason.empty()) return lib;  // the handle stays open: harmless, and dlclose of cuDNN is unsafe
  lib.version = lib.GetVersion();
  // The attribute enums we use are those of 9.x; an 8.x library has a different ABI and soname.
  if (lib.version < 90000 || lib.version >= 100000) {
    lib.reason = lib.path + " is cuDNN " + std::to_string(lib.version) + "; 9.x is needed";
    return lib;
  }
  lib.loaded = true;
  return lib;
}

const Library& library() {
  static const Library lib = [] {
    return load_library(cuda::library_path("SINTER_CUDNN_LIBRARY", "libcudnn.so.9"));
  }();
  return lib;
}

std::string version_string() {
  const Library& lib = library();
  if (!lib.loaded) return "none";
  const size_t v = lib.version;
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

const Library& require_library() {
  const Library& lib = library();
  if (!lib.loaded) throw Error(ErrorCode::unsupported, "cuDNN not found (" + lib.reason + ")");
  return lib;
}

std::string last_error() {
  const Library& lib = library();
  if (!lib.loaded) return {};
  char last[1024] = {};
  lib.GetLastErrorString(last, sizeof last);
  return last;
}

std::string status_message(cudnnStatus_t s) {
  const Library& lib = library();
  if (!lib.loaded) return "status " + std::to_string(static_cast<int>(s));
  std::string msg = lib.GetErrorString(s);
  if (const std::string last = last_error(); !last.empty()) msg += ": " + last;
  return msg;
}

void check(cudnnStatus_t s, const char* call, const char* file, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw Error(ErrorCode::cuda, std::string(call) + " failed: " + status_message(s) + " at " + file +
                                   ":" + std::to_string(line));
}

}  // namespace sinter::cudnn
