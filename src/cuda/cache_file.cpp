#include "cuda/cache_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

constexpr char kMagic[8] = {'S', 'N', 'T', 'R', 'K', 'C', 'H', '\0'};
// Far above any real cubin; stops a corrupt size field from asking for a huge allocation.
constexpr std::uint64_t kMaxPayload = std::uint64_t(1) << 32;

void put_le(std::uint8_t* out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = std::uint8_t(value >> (8 * i));
}

std::uint64_t get_le(const std::uint8_t* in, int bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= std::uint64_t(in[i]) << (8 * i);
  return value;
}

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path, int error) {
  throw Error(ErrorCode::io, "kernel cache: cannot " + what + " " + path.string() + ": " +
                                 std::strerror(error));
}

void write_all(int fd, const void* data, std::size_t size, const std::filesystem::path& path) {
  auto bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_io("write", path, errno);
    }
    bytes += written;
    size -= std::size_t(written);
  }
}

}  // namespace

CacheFileRead read_cache_file(const std::filesystem::path& file, const Sha256Digest& key) {
  CacheFileRead result;
  std::ifstream in(file, std::ios::binary);
  if (!in) return result;  // missing (or unreadable, which the rewrite will then report)
  auto corrupt = [&](std::string problem) {
    result.status = CacheFileStatus::corrupt;
    result.problem = file.string() + ": " + std::move(problem);
    result.payload.clear();
    return result;
  };
  std::uint8_t header[kCacheFileHeaderSize];
  if (!in.read(reinterpret_cast<char*>(header), sizeof header)) {
    return corrupt("shorter than its " + std::to_string(kCacheFileHeaderSize) + "-byte header");
  }
  if (std::memcmp(header, kMagic, sizeof kMagic) != 0) return corrupt("bad magic");
  if (get_le(header + 8, 4) != kCacheFileVersion) return corrupt("unknown format version");
  if (get_le(header + 12, 4) != kCacheFileHeaderSize) return corrupt("bad header size");
  if (std::memcmp(header + 16, key.data(), key.size()) != 0) return corrupt("key mismatch");
  const std::uint64_t size = get_le(header + 48, 8);
  if (size == 0 || size > kMaxPayload) return corrupt("bad payload size " + std::to_string(size));
  result.payload.resize(size);
  if (!in.read(result.payload.data(), std::streamsize(size))) {
    return corrupt("truncated: expected " + std::to_string(size) + " payload bytes");
  }
  if (in.peek() != std::ifstream::traits_type::eof()) return corrupt("trailing bytes");
  const Sha256Digest checksum = sha256(result.payload.data(), result.payload.size());
  if (std::memcmp(header + 56, checksum.data(), checksum.size()) != 0) {
    return corrupt("checksum mismatch");
  }
  result.status = CacheFileStatus::ok;
  return result;
}

void write_cache_file(const std::filesystem::path& file, const Sha256Digest& key,
                      std::span<const char> payload) {
  const std::filesystem::path folder = file.parent_path();
  if (!folder.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) throw_io("create the folder", folder, ec.value());
  }

  std::uint8_t header[kCacheFileHeaderSize] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  put_le(header + 8, kCacheFileVersion, 4);
  put_le(header + 12, kCacheFileHeaderSize, 4);
  std::memcpy(header + 16, key.data(), key.size());
  put_le(header + 48, payload.size(), 8);
  const Sha256Digest checksum = sha256(payload.data(), payload.size());
  std::memcpy(header + 56, checksum.data(), checksum.size());

  // Unique per process and per call, so concurrent writers never share a temporary file.
  static std::atomic<std::uint64_t> counter{0};
  const std::filesystem::path temporary =
      file.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_io("create", temporary, errno);
  try {
    write_all(fd, header, sizeof header, temporary);
    write_all(fd, payload.data(), payload.size(), temporary);
    // The data must be on disk before the rename makes it visible under the final name.
    if (::fsync(fd) != 0) throw_io("fsync", temporary, errno);
    if (::close(fd) != 0) {
      fd = -1;
      throw_io("close", temporary, errno);
    }
    fd = -1;
    if (::rename(temporary.c_str(), file.c_str()) != 0) throw_io("rename into place", file, errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  // Make the rename itself durable; a failure here loses at most this entry, which is rebuilt.
  int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace sinter::cuda
