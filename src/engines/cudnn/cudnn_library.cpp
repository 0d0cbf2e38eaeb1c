#include "engines/cudnn/cudnn_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "sinter/error.hpp"

namespace sinter::cudnn {
Library load_library(const std::string& path) {
  Library lib;
  lib.path = path;
  void* h = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    lib.reason = "dlopen " + lib.path + ": " + (e ? e : "unknown error");
    return lib;
  }
  bool ok = true;
  auto sym = [&](auto& fn, const char* name) {
    if (!ok) return;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn) {
      ok = false;
      lib.reason = std::string("dlsym ") + name + " in " + lib.path + ": symbol missing";
    }
  };
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
  if (!ok) return lib;  // the handle stays open: harmless, and dlclose of cuDNN is unsafe
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
    const char* env = std::getenv("SINTER_CUDNN_LIBRARY");
    return load_library(env && *env ? env : "libcudnn.so.9");
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
