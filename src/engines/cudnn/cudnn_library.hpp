// cuDNN loaded at run time (dlopen of libcudnn.so.9, dlsym of the few entry points the backend
// API needs). Binaries built against cuDNN 9.19 headers then start on machines with another 9.x
// (the H200 machine has 9.14) or none at all: the engine reports "cuDNN not found (...)" instead.
// Only the types of <cudnn_graph.h> are used at compile time; nothing links against cuDNN.
#pragma once

#include <cudnn_graph.h>

#include <string>

namespace sinter::cudnn {

// The entry points, resolved once; every pointer is non-null when `loaded`.
struct Library {
  bool loaded = false;
  std::string reason;   // why not loaded: the dlopen/dlsym message
  std::string path;     // what was opened
  size_t version = 0;   // cudnnGetVersion(): 91400 for 9.14.0

  decltype(&::cudnnGetVersion) GetVersion = nullptr;
  decltype(&::cudnnGetErrorString) GetErrorString = nullptr;
  decltype(&::cudnnGetLastErrorString) GetLastErrorString = nullptr;
  decltype(&::cudnnCreate) Create = nullptr;
  decltype(&::cudnnDestroy) Destroy = nullptr;
  decltype(&::cudnnSetStream) SetStream = nullptr;
  decltype(&::cudnnBackendCreateDescriptor) BackendCreateDescriptor = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) BackendDestroyDescriptor = nullptr;
  decltype(&::cudnnBackendSetAttribute) BackendSetAttribute = nullptr;
  decltype(&::cudnnBackendGetAttribute) BackendGetAttribute = nullptr;
  decltype(&::cudnnBackendFinalize) BackendFinalize = nullptr;
  decltype(&::cudnnBackendExecute) BackendExecute = nullptr;
};

// Opens `path` and resolves the entry points; never throws (the reason says what failed).
Library load_library(const std::string& path);

// The process-wide library, loaded on first use. SINTER_CUDNN_LIBRARY names another file to
// open (tests use a missing path to see the "not found" reason).
const Library& library();

// "9.14.0", or "none" when not loaded.
std::string version_string();

// Throws sinter::Error(unsupported) when the library is not loaded; returns it otherwise.
const Library& require_library();

// Throws sinter::Error(cuda) for a failed status, naming the call, the status and cuDNN's last
// error message (which usually says which attribute or pattern it refused).
void check(cudnnStatus_t s, const char* call, const char* file, int line);
#define SINTER_CUDNN_CHECK(expr) ::sinter::cudnn::check((expr), #expr, __FILE__, __LINE__)

// The status's name and cuDNN's last error message, for reasons shown to users.
std::string status_message(cudnnStatus_t s);

// cuDNN's last error message on this thread (cudnnGetLastErrorString), "" when there is none.
// Reading it clears it. Heuristics that find no engine return success; the message may still
// say why.
std::string last_error();

// How to get cuDNN's own log of a run, for messages that end in "cuDNN found nothing".
inline constexpr const char* kCudnnLogHint =
    "for cuDNN's own log rerun with CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=cudnn_log.txt";

}  // namespace sinter::cudnn
