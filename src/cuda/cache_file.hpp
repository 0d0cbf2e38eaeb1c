// One kernel-cache entry on disk: a fixed header, then the payload (a cubin).
//
//   offset  size  field
//        0     8  magic "SNTRKCH\0"
//        8     4  format version (1), little-endian
//       12     4  header size (88), little-endian
//       16    32  key: SHA-256 of what was compiled (see kernel_cache.hpp)
//       48     8  payload size in bytes, little-endian
//       56    32  checksum: SHA-256 of the payload
//       88     -  payload
//
// Readers check every field and the checksum, so a truncated or bit-flipped file (a crash
// mid-write on a filesystem without atomic rename, a bad disk) is found rather than loaded.
// Writers go through a temporary file in the same folder, fsync, then rename: concurrent
// processes writing the same key each replace the file whole, and a reader sees one or the other.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "cuda/sha256.hpp"

namespace sinter::cuda {

inline constexpr std::uint32_t kCacheFileVersion = 1;
inline constexpr std::size_t kCacheFileHeaderSize = 88;

enum class CacheFileStatus { ok, missing, corrupt };

struct CacheFileRead {
  CacheFileStatus status = CacheFileStatus::missing;
  std::vector<char> payload;  // when ok
  std::string problem;        // when corrupt: what was wrong, for logs
};

// Never throws for a missing or bad file: both are ordinary outcomes the cache recovers from.
CacheFileRead read_cache_file(const std::filesystem::path& file, const Sha256Digest& key);

// Creates the folder if needed. Throws ErrorCode::io naming the path and the system's reason.
void write_cache_file(const std::filesystem::path& file, const Sha256Digest& key,
                      std::span<const char> payload);

}  // namespace sinter::cuda
