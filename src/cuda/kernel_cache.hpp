// KernelCache: compiled kernels by content, in memory and on disk, so a kernel is compiled once per
// machine rather than once per process.
//
// The key is a SHA-256 over, as length-prefixed fields: a format tag, the program name, the full
// source text, the arch, the NVRTC version, every option exactly as passed to NVRTC (defaults
// included, so toolkit include folders count), the extra headers, and the digest of all embedded
// kernels/ files (an edited header invalidates every kernel, whether or not it includes it: simple
// and never stale). SHA-256 because a collision would silently run the wrong kernel.
//
// On disk: one file per key, <directory>/<64 hex digits>.kc, in the format of cache_file.hpp.
// The directory is SINTER_CACHE_DIR, else $XDG_CACHE_HOME/sinter/kernels, else
// ~/.cache/sinter/kernels. A corrupt file is counted, deleted and rebuilt. A folder that cannot
// be written is an ErrorCode::io error, not a silent fall back to memory only.
//
// In memory: key -> binary, and (key, device) -> loaded Library. Binaries need no GPU (compile-only
// mode for CI and for building plans); libraries do. Thread-safe; concurrent requests for one key
// compile it once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/library.hpp"
#include "cuda/nvrtc.hpp"
#include "cuda/sha256.hpp"

namespace sinter::cuda {

struct KernelRequest {
  // File name for diagnostics and line info, e.g. "gemm_region_3.cu"; not part of the cache key
  // (nor are the source's // comments): the first request of a structure names its entry.
  std::string name;
  std::string source;
  CompileOptions options;
};

struct KernelBinary {
  Sha256Digest key{};
  std::vector<char> cubin;
  std::string log;         // NVRTC's warnings when compiled in this process; empty from disk
  bool from_disk = false;  // how this process first got it
};

struct KernelCacheStats {
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t misses = 0;  // compiles
  std::uint64_t corrupt_entries = 0;
  double compile_ms = 0;              // total NVRTC time of the misses
  std::string last_corrupt_entry;     // what was wrong with the most recent one
};

// "kernel cache: 3 memory hits, 1 disk hit, 2 compiles (812.4 ms), 0 corrupt entries"
std::string to_string(const KernelCacheStats& stats);

class KernelCache {
 public:
  // An empty directory gives a memory-only cache.
  explicit KernelCache(std::filesystem::path directory = default_directory());
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // Throws ErrorCode::io when no variable names a folder (no SINTER_CACHE_DIR, XDG_CACHE_HOME
  // or HOME).
  static std::filesystem::path default_directory();
  static Sha256Digest key_of(const KernelRequest& request);

  const std::filesystem::path& directory() const { return directory_; }
  // Where the entry for `key` lives on disk (whether or not it exists yet).
  std::filesystem::path entry_path(const Sha256Digest& key) const;

  // The cubin, from memory, disk or NVRTC. Needs no GPU. Compile errors propagate
  // (ErrorCode::compile) and are not cached: the next request compiles again.
  std::shared_ptr<const KernelBinary> get_binary(const KernelRequest& request);
  // The cubin loaded on `device` (which is made current for the load and then restored).
  std::shared_ptr<const Library> get_library(const KernelRequest& request, int device);

  KernelCacheStats stats() const;

 private:
  using BinaryPtr = std::shared_ptr<const KernelBinary>;
  BinaryPtr load_or_compile(const KernelRequest& request, const Sha256Digest& key);

  std::filesystem::path directory_;
  mutable std::mutex mutex_;  // guards everything below
  // A shared_future so a second request for a key that is being compiled waits for that compile.
  std::map<Sha256Digest, std::shared_future<BinaryPtr>> binaries_;
  std::map<std::pair<Sha256Digest, int>, std::shared_ptr<const Library>> libraries_;
  KernelCacheStats stats_;
};

}  // namespace sinter::cuda
