// Plan bundles: one self-contained binary file per plan (docs/plan-bundle.md).
//
//   +--------------------------+ 0
//   | header (128 bytes)       |  magic "SINTERPL", version, sizes, SHA-256 of the rest
//   +--------------------------+ 128
//   | manifest (JSON text)     |  graph, fusion, target, memory, workspace, steps, blob table
//   +--------------------------+ zero padding to a multiple of 256
//   | blob area                |  cubins and vendor configs, each at a multiple of 256
//   +--------------------------+ file size
//
// Loading validates everything before it returns: a corrupt, truncated, future-version or
// wrong-graph bundle is an Error(corrupt_bundle) that says exactly what is wrong. Writing is
// deterministic (the same plan gives the same bytes) and atomic.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.hpp"

namespace sinter::plan {

// 3: each step records its candidate's config text, and graph outputs are bound by the caller
// (no arena buffer). Older bundles are refused: build the plan again.
inline constexpr uint32_t kBundleVersion = 3;
inline constexpr size_t kBundleHeaderSize = 128;
inline constexpr size_t kBundleAlignment = 256;  // of the blob area and of every blob in it

// The bundle's bytes. Throws Error(invalid_argument) naming the problem when the plan is not
// one a loader accepts (every bundle written here loads).
std::vector<char> plan_bundle_bytes(const Plan& plan);

// Writes plan_bundle_bytes(plan) to `path` through a temporary file in the same folder, fsync
// and rename, so a reader sees the old file or the new one, never part of one. Error(io) on a
// system failure.
void save_plan_bundle(const Plan& plan, const std::string& path);

// `source` names the bundle in messages ("plan bundle SOURCE: ..."). Every problem with the
// content is an Error(corrupt_bundle); only a file that cannot be read is an Error(io).
Plan load_plan_bundle(std::span<const char> bytes, std::string_view source = "<bytes>");
Plan load_plan_bundle(const std::string& path);

// Puts a header around a manifest and a blob area (whose blob offsets are relative to its
// start): the last step of the writer, and how the fuzz target turns a mutated manifest into a
// well-framed bundle so the loader's deeper checks get exercised.
std::vector<char> frame_plan_bundle(std::string_view manifest, std::span<const char> blob_area);

}  // namespace sinter::plan
