#include "comm/nccl_library.hpp"

#include <dlfcn.h>


#include "cuda/dynamic_library.hpp"
#include "sinter/error.hpp"

namespace sinter::nccl {

Library load_library(const std::string& path) {
  Library lib;
  lib.path = path;
  void* h = cuda::open_library(path, lib.reason);
  if (!h) return lib;
  auto sym = [&](auto& fn, const char* name) {
    cuda::bind_symbol(h, path, fn, name, lib.reason, " (not an NCCL 2.x library)");
  };
  sym(lib.GetVersion, "ncclGetVersion");
  sym(lib.GetErrorString, "ncclGetErrorString");
  sym(lib.GetLastError, "ncclGetLastError");
  sym(lib.GetUniqueId, "ncclGetUniqueId");
  sym(lib.CommInitRank, "ncclCommInitRank");
  sym(lib.CommInitAll, "ncclCommInitAll");
  sym(lib.CommDestroy, "ncclCommDestroy");
  sym(lib.AllReduce, "ncclAllReduce");
  sym(lib.AllGather, "ncclAllGather");
  sym(lib.ReduceScatter, "ncclReduceScatter");
  if (!lib.reason.empty()) {
    dlclose(h);
    return lib;
  }
  // Communicators live until exit in some programs: the handle stays open, as NCCL expects.
  if (lib.GetVersion(&lib.version) != ncclSuccess || lib.version <= 0) {
    lib.reason = path + ": ncclGetVersion failed";
    return lib;
  }
  // ncclBfloat16 and ncclReduceScatter's argument order are those of NCCL 2.10 and later.
  if (lib.version < 21000) {
    lib.reason = path + " is NCCL " + version_string(lib.version) + "; 2.10 or later is needed";
    return lib;
  }
  lib.loaded = true;
  // symmetric memory: optional, and read through the window layout of the headers built with
  if (lib.version / 100 != kWindowLayoutVersion / 100) {
    lib.windows_reason = "symmetric memory needs NCCL " + version_string(kWindowLayoutVersion).substr(0, 4) +
                         ".x (Sinter reads that version's window layout); " + path + " is NCCL " +
                         version_string(lib.version);
  }
  auto optional = [&](auto& fn, const char* name) {
    cuda::bind_symbol(h, path, fn, name, lib.windows_reason);
  };
  optional(lib.MemAlloc, "ncclMemAlloc");
  optional(lib.MemFree, "ncclMemFree");
  optional(lib.CommWindowRegister, "ncclCommWindowRegister");
  optional(lib.CommWindowDeregister, "ncclCommWindowDeregister");
  optional(lib.TeamLsa, "ncclTeamLsa");
  return lib;
}

const Library& library() {
  static const Library lib = [] {
    return load_library(cuda::library_path("SINTER_NCCL_LIBRARY", "libnccl.so.2"));
  }();
  return lib;
}

std::string version_string(int v) {
  // NCCL_VERSION(X,Y,Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z after.
  if (v < 10000) return std::to_string(v / 1000) + "." + std::to_string(v / 100 % 10) + "." + std::to_string(v % 100);
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

const Library& require_library() {
  const Library& lib = library();
  if (!lib.loaded) throw Error(ErrorCode::unsupported, "NCCL not found (" + lib.reason + ")");
  return lib;
}

void check(ncclResult_t r, const char* call, const char* file, int line, ncclComm_t comm) {
  if (r == ncclSuccess) return;
  const Library& lib = library();
  std::string msg = std::string(call) + " failed: ";
  if (lib.loaded) {
    msg += lib.GetErrorString(r);
    const char* last = lib.GetLastError(comm);
    if (last && *last) msg += std::string(": ") + last;
  } else {
    msg += "ncclResult " + std::to_string(static_cast<int>(r));
  }
  throw Error(ErrorCode::cuda, msg + " at " + file + ":" + std::to_string(line));
}

}  // namespace sinter::nccl
