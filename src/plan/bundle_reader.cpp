// Loading a plan bundle, outside in: the header (magic, version, sizes, the manifest's checksum),
// then the blob table against the blob area, then the manifest (manifest_reader.cpp) and the
// semantic checks (plan_checks.cpp). Every length in the file is checked against the file's own
// size before it is used, so nothing here allocates more than the file holds.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cuda/sha256.hpp"
#include "plan/bundle_format.hpp"

namespace sinter::plan {
namespace bundle_detail {
namespace {

using json_detail::Cursor;

std::string range(uint64_t begin, uint64_t size) {
  return "[" + std::to_string(begin) + ", " + std::to_string(begin + size) + ")";
}

bool all_zero(std::span<const char> bytes) {
  for (char c : bytes) {
    if (c != 0) return false;
  }
  return true;
}

struct Header {
  uint64_t manifest_offset = 0, manifest_size = 0;
  uint64_t area_offset = 0, area_size = 0;
};

Header read_header(std::span<const char> file, std::string_view source) {
  const uint64_t size = file.size();
  const std::string_view head(file.data(), std::min<size_t>(file.size(), kMagic.size()));
  if (head != kMagic.substr(0, head.size())) {
    fail(source, "not a Sinter plan bundle (it does not start with \"SINTERPL\")");
  }
  // The version comes before the size checks: a newer file says it is newer, whatever its layout.
  if (size >= kVersionAt + 4) {
    const uint64_t version = get_le(file.data() + kVersionAt, 4);
    if (version > kBundleVersion) {
      fail(source, "format version " + std::to_string(version) + " is newer than this build reads (" +
                       std::to_string(kBundleVersion) + "); update Sinter to load this bundle");
    }
    if (version == 0) fail(source, "format version 0 is not valid (versions start at 1)");
    if (version < kBundleVersion) {
      fail(source, "format version " + std::to_string(version) + " was written by an older Sinter (this build reads " +
                       std::to_string(kBundleVersion) + "; older steps record no candidate config); "
                       "build the plan again with `sinter build`");
    }
  }
  if (size < kBundleHeaderSize) {
    fail(source, "truncated: the file has " + std::to_string(size) + " bytes, shorter than the " +
                     std::to_string(kBundleHeaderSize) + "-byte header");
  }
  const char* h = file.data();
  const uint64_t header_size = get_le(h + kHeaderSizeAt, 4);
  if (header_size != kBundleHeaderSize) {
    fail(source, "header size " + std::to_string(header_size) + ", but version " + std::to_string(kBundleVersion) + " headers have " +
                     std::to_string(kBundleHeaderSize) + " bytes");
  }
  if (const uint64_t flags = get_le(h + kFlagsAt, 8); flags != 0) {
    char hex[20];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(flags));
    fail(source, std::string("unknown flags ") + hex + " (version " + std::to_string(kBundleVersion) + " defines none)");
  }
  if (!all_zero(file.subspan(kReservedAt, kBundleHeaderSize - kReservedAt))) {
    fail(source, "the reserved header bytes " + range(kReservedAt, kBundleHeaderSize - kReservedAt) +
                     " are not zero");
  }
  const uint64_t recorded = get_le(h + kFileSizeAt, 8);
  if (size < recorded) {
    fail(source, "truncated: the header says the file has " + std::to_string(recorded) +
                     " bytes, it has " + std::to_string(size));
  }
  if (size > recorded) {
    fail(source, "the file has " + std::to_string(size) + " bytes, but the header says " +
                     std::to_string(recorded) + ": unexpected bytes after the end");
  }
  Header r;
  r.manifest_offset = get_le(h + kManifestOffsetAt, 8);
  r.manifest_size = get_le(h + kManifestSizeAt, 8);
  r.area_offset = get_le(h + kBlobAreaOffsetAt, 8);
  r.area_size = get_le(h + kBlobAreaSizeAt, 8);
  if (r.manifest_offset != kBundleHeaderSize) {
    fail(source, "the manifest starts at " + std::to_string(r.manifest_offset) + ", expected " +
                     std::to_string(kBundleHeaderSize) + " (right after the header)");
  }
  if (r.manifest_size == 0) fail(source, "the manifest is empty");
  if (r.manifest_size > size - r.manifest_offset) {
    fail(source, "the manifest " + range(r.manifest_offset, r.manifest_size) +
                     " runs past the end of the file (" + std::to_string(size) + " bytes): truncated?");
  }
  const uint64_t manifest_end = r.manifest_offset + r.manifest_size;
  // The header is outside the checksum, so a damaged manifest size must be caught otherwise: a
  // larger one takes in the zero padding (JSON text never holds a NUL), a smaller one cuts the
  // JSON short and fails to parse.
  if (const void* nul = std::memchr(h + r.manifest_offset, 0, r.manifest_size)) {
    fail(source, "the manifest (" + std::to_string(r.manifest_size) + " bytes at " + std::to_string(r.manifest_offset) +
                     ") holds a NUL byte at " + std::to_string(static_cast<const char*>(nul) - h) +
                     ": the header's manifest size is wrong");
  }
  const uint64_t area_at = align_up(manifest_end, kBundleAlignment);
  if (r.area_offset != area_at) {
    fail(source, "the blob area starts at " + std::to_string(r.area_offset) + ", expected " +
                     std::to_string(area_at) + " (the end of the manifest rounded up to " +
                     std::to_string(kBundleAlignment) + ")");
  }
  if (r.area_offset > size || r.area_size != size - r.area_offset) {
    fail(source, "the blob area of " + std::to_string(r.area_size) + " bytes at " +
                     std::to_string(r.area_offset) + " does not end where the file does (" +
                     std::to_string(size) + " bytes)");
  }
  if (!all_zero(file.subspan(manifest_end, r.area_offset - manifest_end))) {
    fail(source, "the padding " + range(manifest_end, r.area_offset - manifest_end) +
                     " after the manifest is not zero");
  }
  // The manifest and its padding; each blob is checked against its key (read_blob_table), and
  // the manifest, which holds the keys, is covered here: every byte is hashed once.
  const cuda::Sha256Digest sum = cuda::sha256(h + kBundleHeaderSize, r.area_offset - kBundleHeaderSize);
  if (std::memcmp(sum.data(), h + kChecksumAt, sum.size()) != 0) {
    fail(source, "checksum mismatch: the manifest does not match the header's SHA-256 (the file is damaged)");
  }
  return r;
}

}  // namespace

std::map<std::string, Blob> read_blob_table(const Cursor& table, std::span<const char> area) {
  std::map<std::string, Blob> blobs;
  uint64_t end = 0;  // of the previous blob
  std::string previous;
  for (const Cursor& c : table.items("blobs", SIZE_MAX)) {
    c.expect_object("a blob");
    c.check_keys({"key", "kind", "offset", "size"}, "a blob");
    const Cursor key_at = c.at("key");
    const std::string key = key_at.as_string("a blob key");
    if (!is_blob_key(key)) key_at.fail("a blob key is 64 lower-case hex digits (the SHA-256 of its bytes), found " + json_detail::describe(key_at.json()));
    if (blobs.count(key)) key_at.fail("blob " + key + " is listed twice");
    const std::string kind_name = c.at("kind").as_string("a blob kind");
    Blob blob;
    if (kind_name == to_string(BlobKind::cubin)) {
      blob.kind = BlobKind::cubin;
    } else if (kind_name == to_string(BlobKind::vendor_config)) {
      blob.kind = BlobKind::vendor_config;
    } else {
      c.at("kind").fail("unknown blob kind " + json_detail::describe(c.at("kind").json()) +
                        "; known kinds: cubin, vendor-config");
    }
    const auto offset = static_cast<uint64_t>(c.at("offset").as_int(0, kMaxDeviceBytes));
    const auto size = static_cast<uint64_t>(c.at("size").as_int(1, kMaxDeviceBytes));
    if (offset > area.size() || size > area.size() - offset) {
      c.fail("blob " + key + " " + range(offset, size) + " is outside the blob area (" +
             std::to_string(area.size()) + " bytes)");
    }
    if (offset < end) {
      c.fail("blob " + key + " " + range(offset, size) + " overlaps blob " + previous +
             ", which ends at " + std::to_string(end));
    }
    const uint64_t expected = align_up(end, kBundleAlignment);
    if (offset != expected) {
      c.fail("blob " + key + " starts at " + std::to_string(offset) + ", expected " +
             std::to_string(expected) + " (blobs follow each other in offset order, each at the " +
             "next multiple of " + std::to_string(kBundleAlignment) + ")");
    }
    if (!all_zero(area.subspan(end, offset - end))) {
      c.fail("the padding before blob " + key + " is not zero");
    }
    const std::span<const char> bytes = area.subspan(offset, size);
    const std::string actual = blob_key(bytes);
    if (actual != key) {
      c.fail("blob " + key + ": checksum mismatch: its bytes hash to " + actual + " (damaged)");
    }
    if (blob.kind == BlobKind::cubin && (size < 4 || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0)) {
      c.fail("blob " + key + " is a cubin but not an ELF image");
    }
    blob.bytes.assign(bytes.begin(), bytes.end());
    blobs.emplace(key, std::move(blob));
    end = offset + size;
    previous = key;
  }
  if (end != area.size()) {
    table.fail("the blob area has " + std::to_string(area.size()) + " bytes but its last blob ends at " +
               std::to_string(end));
  }
  return blobs;
}

}  // namespace bundle_detail

Plan load_plan_bundle(std::span<const char> bytes, std::string_view source) {
  using namespace bundle_detail;
  const Header h = read_header(bytes, source);
  const std::string_view manifest(bytes.data() + h.manifest_offset, h.manifest_size);
  return read_manifest(manifest, bytes.subspan(h.area_offset, h.area_size), source);
}

Plan load_plan_bundle(const std::string& path) {
  // A bundle holds kernel binaries and a manifest, no weights: far below this. Past it a file is
  // not one (and reading it whole would only exhaust memory).
  constexpr std::uintmax_t kMaxBundleBytes = std::uintmax_t{1} << 30;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorCode::io, "cannot read the plan bundle " + path + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::io, "cannot open the plan bundle " + path + ": " + std::strerror(errno));
  }
  std::vector<char> bytes;
  if (std::filesystem::is_regular_file(path, ec)) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxBundleBytes) {
      throw Error(ErrorCode::corrupt_bundle, path + " is " + std::to_string(size) +
                                                 " bytes, more than any plan bundle (at most 1 GiB)");
    }
    if (!ec) bytes.reserve(static_cast<size_t>(size));  // one allocation for a file
  }
  // read in chunks: a pipe has no size to ask for
  std::vector<char> chunk(size_t{1} << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    bytes.insert(bytes.end(), chunk.data(), chunk.data() + in.gcount());
    if (bytes.size() > kMaxBundleBytes) {
      throw Error(ErrorCode::corrupt_bundle, path + " holds more than 1 GiB, more than any plan bundle");
    }
  }
  if (in.bad()) {
    throw Error(ErrorCode::io, "cannot read the plan bundle " + path + ": " + std::strerror(errno));
  }
  return load_plan_bundle(bytes, path);
}

}  // namespace sinter::plan
