// libFuzzer target for the plan bundle loader (docs/plan-bundle.md). Any input must load or fail
// with sinter::Error; anything else escaping, a crash or undefined behaviour is a bug. A plan that
// loads must save to bytes that load again and save to the same bytes (the writer is
// deterministic and writes only what the loader accepts).
//
// Two input forms, so mutations reach past the whole-file checksum:
//   - bytes starting with "SINTERPL": a whole bundle, loaded as is (header checks, checksum);
//   - anything else: MANIFEST '\0' BLOB_AREA, framed with a correct header first, so a mutated
//     manifest or blob table meets the manifest reader and the semantic checks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/bundle.hpp"
#include "sinter/error.hpp"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_plan_bundle: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  std::vector<char> bundle;
  if (size >= 8 && std::memcmp(bytes, "SINTERPL", 8) == 0) {
    bundle.assign(bytes, bytes + size);
  } else {
    const void* nul = std::memchr(bytes, 0, size);
    const size_t manifest_size = nul ? static_cast<size_t>(static_cast<const char*>(nul) - bytes) : size;
    const size_t area_at = nul ? manifest_size + 1 : size;
    bundle = sinter::plan::frame_plan_bundle(std::string_view(bytes, manifest_size),
                                             std::span<const char>(bytes + area_at, size - area_at));
  }
  std::optional<sinter::plan::Plan> plan;
  try {
    plan = sinter::plan::load_plan_bundle(bundle, "fuzz");
  } catch (const sinter::Error& e) {
    if (e.code() != sinter::ErrorCode::corrupt_bundle) die("the loader threw an Error that is not corrupt_bundle", e.message());
    return 0;  // the expected way to reject an input
  } catch (const std::exception& e) {
    die("an exception other than sinter::Error escaped load_plan_bundle", e.what());
  } catch (...) {
    die("a non-standard exception escaped load_plan_bundle", "");
  }
  try {
    const std::vector<char> first = sinter::plan::plan_bundle_bytes(*plan);
    const std::vector<char> second = sinter::plan::plan_bundle_bytes(sinter::plan::load_plan_bundle(first, "resaved"));
    if (first != second) die("save(load(save(p))) differs from save(p)", "");
  } catch (const std::exception& e) {
    die("a plan that loaded failed to save and reload", e.what());
  }
  return 0;
}
