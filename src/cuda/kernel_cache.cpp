#include "cuda/kernel_cache.hpp"

#include "cuda/source_text.hpp"
#include <cstdio>
#include <cstdlib>

#include "cuda/cache_file.hpp"
#include "cuda/device.hpp"
#include "cuda/kernel_sources.hpp"
#include "cuda/source_text.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string count_of(std::uint64_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

}  // namespace

std::string to_string(const KernelCacheStats& s) {
  char compile_ms[32];
  std::snprintf(compile_ms, sizeof compile_ms, "%.1f ms", s.compile_ms);
  return "kernel cache: " + count_of(s.memory_hits, "memory hit", "memory hits") + ", " +
         count_of(s.disk_hits, "disk hit", "disk hits") + ", " +
         count_of(s.misses, "compile", "compiles") + " (" + compile_ms + "), " +
         count_of(s.corrupt_entries, "corrupt entry", "corrupt entries");
}

KernelCache::KernelCache(std::filesystem::path directory) : directory_(std::move(directory)) {}

std::filesystem::path KernelCache::default_directory() {
  if (auto dir = environment("SINTER_CACHE_DIR"); !dir.empty()) return dir;
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  if (auto xdg = environment("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') {
    return std::filesystem::path(xdg) / "sinter" / "kernels";
  }
  if (auto home = environment("HOME"); !home.empty()) {
    return std::filesystem::path(home) / ".cache" / "sinter" / "kernels";
  }
  throw Error(ErrorCode::io,
              "no folder for the kernel cache: set SINTER_CACHE_DIR (or XDG_CACHE_HOME or HOME)");
}

Sha256Digest KernelCache::key_of(const KernelRequest& request) {
  Sha256 hasher;
  // Not the file name, not the comments: kernels of one structure share an entry whatever region
  // they were generated for (their cubins differ only in the line info's file name).
  hasher.update_field("sinter kernel cache key v2");
  hasher.update_field(without_line_comments(request.source));
  hasher.update_field(request.options.arch);
  const NvrtcVersion version = nvrtc_version();
  hasher.update_field("nvrtc " + std::to_string(version.major) + "." +
                      std::to_string(version.minor));
  const std::vector<std::string> options = compile_options(request.options);
  hasher.update_field(std::to_string(options.size()));
  for (const std::string& option : options) hasher.update_field(option);
  hasher.update_field(std::to_string(request.options.extra_headers.size()));
  for (const SourceHeader& header : request.options.extra_headers) {
    hasher.update_field(header.name);
    hasher.update_field(header.contents);
  }
  const Sha256Digest& sources = kernel_sources_digest();
  hasher.update(sources.data(), sources.size());
  return hasher.finish();
}

std::filesystem::path KernelCache::entry_path(const Sha256Digest& key) const {
  return directory_ / (to_hex(key) + ".kc");
}

std::shared_ptr<const KernelBinary> KernelCache::get_binary(const KernelRequest& request) {
  const Sha256Digest key = key_of(request);
  std::promise<BinaryPtr> promise;
  {
    std::unique_lock lock(mutex_);
    if (auto it = binaries_.find(key); it != binaries_.end()) {
      std::shared_future<BinaryPtr> pending = it->second;
      lock.unlock();
      BinaryPtr binary = pending.get();  // waits if another thread is compiling; rethrows its error
      lock.lock();
      ++stats_.memory_hits;
      return binary;
    }
    binaries_.emplace(key, promise.get_future().share());
  }
  try {
    BinaryPtr binary = load_or_compile(request, key);
    promise.set_value(binary);
    return binary;
  } catch (...) {
    // Forget the failed attempt so a later request tries again, and let waiters see the error.
    {
      std::lock_guard lock(mutex_);
      binaries_.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

KernelCache::BinaryPtr KernelCache::load_or_compile(const KernelRequest& request,
                                                    const Sha256Digest& key) {
  auto binary = std::make_shared<KernelBinary>();
  binary->key = key;
  const bool use_disk = !directory_.empty();
  if (use_disk) {
    CacheFileRead entry = read_cache_file(entry_path(key), key);
    if (entry.status == CacheFileStatus::ok) {
      binary->cubin = std::move(entry.payload);
      binary->from_disk = true;
      std::lock_guard lock(mutex_);
      ++stats_.disk_hits;
      return binary;
    }
    if (entry.status == CacheFileStatus::corrupt) {
      // Delete now so no other process trips over it; the rewrite below replaces it anyway.
      std::error_code ignored;
      std::filesystem::remove(entry_path(key), ignored);
      std::lock_guard lock(mutex_);
      ++stats_.corrupt_entries;
      stats_.last_corrupt_entry = entry.problem;
    }
  }
  CompileResult compiled = compile_cuda(request.name, request.source, request.options);
  {
    std::lock_guard lock(mutex_);
    ++stats_.misses;
    stats_.compile_ms += compiled.compile_ms;
  }
  binary->cubin = std::move(compiled.cubin);
  binary->log = std::move(compiled.log);
  if (use_disk) write_cache_file(entry_path(key), key, binary->cubin);
  return binary;
}

std::shared_ptr<const Library> KernelCache::get_library(const KernelRequest& request, int device) {
  const Sha256Digest key = key_of(request);
  {
    std::lock_guard lock(mutex_);
    if (auto it = libraries_.find({key, device}); it != libraries_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  BinaryPtr binary = get_binary(request);
  std::shared_ptr<const Library> library;
  {
    DeviceGuard guard(device);
    library = std::make_shared<const Library>(Library::load(binary->cubin));
  }
  std::lock_guard lock(mutex_);
  // Another thread may have loaded it meanwhile; keep one, so every caller shares a handle.
  auto [it, inserted] = libraries_.emplace(std::pair{key, device}, std::move(library));
  return it->second;
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace sinter::cuda
