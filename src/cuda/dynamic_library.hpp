// A vendor library opened at run time with dlopen, for an engine that must work (and say why it
// cannot run) where the library is absent: every failure becomes a reason string, never an
// exception. cuDNN and NCCL are loaded this way.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <type_traits>

namespace sinter::cuda {

// The file environment variable `env` names when it is set and not empty, else `fallback` (found
// by the dynamic loader).
inline std::string library_path(const char* env, const char* fallback) {
  const char* v = std::getenv(env);
  return v && *v ? v : fallback;
}

// dlopen(path); on failure null and `reason` = "dlopen PATH: the loader's message".
inline void* open_library(const std::string& path, std::string& reason) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    reason = "dlopen " + path + ": " + (e ? e : "unknown error");
  }
  return h;
}

// Binds `fn` to symbol `name` of `handle` unless `reason` already holds an earlier failure; a
// missing symbol sets `reason` = "dlsym NAME in PATH: symbol missing" + `note`.
template <class F>
void bind_symbol(void* handle, const std::string& path, F& fn, const char* name, std::string& reason,
                 const char* note = "") {
  if (!reason.empty()) return;
  fn = reinterpret_cast<std::remove_reference_t<F>>(dlsym(handle, name));
  if (!fn) reason = std::string("dlsym ") + name + " in " + path + ": symbol missing" + note;
}

}  // namespace sinter::cuda
