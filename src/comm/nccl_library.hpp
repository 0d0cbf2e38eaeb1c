// NCCL loaded at run time (dlopen of libnccl.so.2, dlsym of the entry points Sinter calls), so
// binaries built against <nccl.h> start where NCCL is absent and say why instead. Only the types
// of <nccl.h> are used at build time; nothing links against NCCL.
#pragma once

#include <nccl.h>

#include <string>

struct ncclTeam;  // nccl_device.h (not included here: it brings a namespace `nccl` of its own)

namespace sinter::nccl {

// The entry points, resolved once; every pointer is non-null when `loaded`.
struct Library {
  bool loaded = false;
  std::string reason;  // why not loaded: the dlopen or dlsym message
  std::string path;    // what was opened
  int version = 0;     // ncclGetVersion(): 22809 for 2.28.9

  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRank) CommInitRank = nullptr;
  decltype(&::ncclCommInitAll) CommInitAll = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclReduceScatter) ReduceScatter = nullptr;

  // Symmetric memory (NCCL 2.28 and later; null before): the megakernel's collectives.
  decltype(&::ncclMemAlloc) MemAlloc = nullptr;
  decltype(&::ncclMemFree) MemFree = nullptr;
  decltype(&::ncclCommWindowRegister) CommWindowRegister = nullptr;
  decltype(&::ncclCommWindowDeregister) CommWindowDeregister = nullptr;
  ncclTeam (*TeamLsa)(ncclComm_t) = nullptr;  // the host overload
  std::string windows_reason;  // why symmetric memory is unavailable, "" when it is
};

// The NCCL whose window layout (ncclWindow_vidmem, nccl_device.h) Sinter reads peer addresses
// from: the same major and minor version as the headers it was built with.
inline constexpr int kWindowLayoutVersion = NCCL_MAJOR * 10000 + NCCL_MINOR * 100;

// The oldest NCCL with the fp8 types (ncclFloat8e4m3, ncclFloat8e5m2).
inline constexpr int kFirstVersionWithFp8 = 22400;

// Opens `path` and resolves the entry points; never throws (the reason says what failed).
Library load_library(const std::string& path);

// The process-wide library, loaded on first use: SINTER_NCCL_LIBRARY names the file, else
// libnccl.so.2 found by the dynamic loader.
const Library& library();

// "2.28.9" for 22809 (and "2.8.4" for the old encoding 2804).
std::string version_string(int version);

// Throws Error(unsupported) "NCCL not found (...)" when the library is not loaded.
const Library& require_library();

// Throws Error(cuda) naming the call, NCCL's error string and its last error message.
void check(ncclResult_t r, const char* call, const char* file, int line, ncclComm_t comm = nullptr);
#define SINTER_NCCL_CHECK(expr) ::sinter::nccl::check((expr), #expr, __FILE__, __LINE__)
#define SINTER_NCCL_CHECK_COMM(expr, comm) ::sinter::nccl::check((expr), #expr, __FILE__, __LINE__, (comm))

}  // namespace sinter::nccl
