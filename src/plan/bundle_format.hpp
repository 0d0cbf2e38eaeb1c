// Private to the plan bundle code (src/plan/bundle_*.cpp, plan_checks.cpp): the header layout,
// the limits on every number a bundle may carry, and the pieces the reader, the writer and the
// semantic checks share. docs/plan-bundle.md is the reference for all of it.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/json_detail.hpp"
#include "plan/bundle.hpp"
#include "sinter/error.hpp"

namespace sinter::plan::bundle_detail {

// Header fields: byte offsets (all little-endian).
inline constexpr size_t kMagicAt = 0;  // 8 bytes "SINTERPL"
inline constexpr size_t kVersionAt = 8;           // u32
inline constexpr size_t kHeaderSizeAt = 12;       // u32
inline constexpr size_t kFlagsAt = 16;            // u64, no flags are defined: must be 0
inline constexpr size_t kFileSizeAt = 24;         // u64
inline constexpr size_t kManifestOffsetAt = 32;   // u64
inline constexpr size_t kManifestSizeAt = 40;     // u64
inline constexpr size_t kBlobAreaOffsetAt = 48;   // u64
inline constexpr size_t kBlobAreaSizeAt = 56;     // u64
inline constexpr size_t kChecksumAt = 64;         // 32 bytes: SHA-256 of [header size, blob area offset)
inline constexpr size_t kReservedAt = 96;         // 32 bytes, zero
inline constexpr std::string_view kMagic = "SINTERPL";
inline constexpr std::string_view kManifestFormat = "sinter.plan";

// Limits. Each keeps the arithmetic done with a field (sums of offsets and sizes, pointer
// offsets) far inside 64 bits, or is a hard limit of CUDA that no launch can exceed anyway.
inline constexpr int64_t kMaxDeviceBytes = int64_t{1} << 50;  // arena, workspace, offsets
inline constexpr int64_t kMaxCandidate = int64_t{1} << 20;
inline constexpr int64_t kMaxSmCount = 4096;
inline constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxGridYZ = 65535;
inline constexpr int64_t kMaxBlockThreads = 1024;
inline constexpr int64_t kMaxBlockZ = 64;
inline constexpr int64_t kMaxClusterBlocks = 16;
inline constexpr int64_t kMaxDynamicSharedMemory = int64_t{256} << 10;
inline constexpr int64_t kMaxArgBytes = 32764;  // CUDA's limit on kernel parameters (12.1+)
inline constexpr int64_t kMaxAlignment = 4096;
inline constexpr int64_t kMaxPersistentWork = int64_t{1} << 50;
inline constexpr size_t kMaxTextBytes = 4096;  // arch, device and producer strings
inline constexpr size_t kCublasLtConfigBytes = 64;  // sizeof(cublasLtMatmulAlgo_t)

inline uint64_t get_le(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<uint8_t>(in[i])) << (8 * i);
  return v;
}
inline void put_le(char* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>(uint8_t(v >> (8 * i)));
}
inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
// A blob key: 64 lower-case hex digits.
inline bool is_blob_key(std::string_view k) {
  if (k.size() != 64) return false;
  for (char c : k) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "plan bundle SOURCE: what"
[[noreturn]] inline void fail(std::string_view source, const std::string& what) {
  throw Error(ErrorCode::corrupt_bundle, "plan bundle " + std::string(source) + ": " + what);
}

// What the manifest says each step's region holds, by name: checked against the partition the
// loader recomputes, so a bundle whose steps were made for another graph is caught.
struct StepMembership {
  std::vector<std::string> nodes;    // Region::nodes()
  std::vector<std::string> inputs;   // Region::inputs, in order (pointer slots index them)
  std::vector<std::string> outputs;  // Region::outputs, in order
};
StepMembership membership_of(const Graph& g, const fuse::Region& r);

// The semantic checks (plan_checks.cpp), after the manifest was read into `plan`: the steps
// against the recomputed partition and `recorded`, each step's engine, kernels and blob
// references, the workspace layout, the memory plan. Throws Error(corrupt_bundle).
void check_plan(const Plan& plan, const std::vector<StepMembership>& recorded, std::string_view source);

// The manifest's "blobs" table (bundle_reader.cpp): every entry in range, in order, without
// overlap, with its checksum and kind checked against `area`, the blob area.
std::map<std::string, Blob> read_blob_table(const json_detail::Cursor& table, std::span<const char> area);

// The whole manifest (manifest_reader.cpp): every field read and range-checked, then
// check_plan. `source` is the bundle's name for messages.
Plan read_manifest(std::string_view manifest, std::span<const char> area, std::string_view source);

}  // namespace sinter::plan::bundle_detail
