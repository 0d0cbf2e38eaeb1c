// Writes the plan-bundle fuzz seeds (tests/fuzz/plan_corpus) from the unit tests' fixture plan:
// a whole bundle, and the MANIFEST '\0' BLOB_AREA form the fuzz target frames itself.
//   sinter_make_plan_seeds OUT_DIR
#include <cstdio>
#include <fstream>
#include <string>

#include "plan/bundle_format.hpp"
#include "plan_fixture.hpp"

int main(int argc, char** argv) {
  using namespace sinter::plan;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  for (int chain : {1, 3}) {
    const std::vector<char> b = plan_bundle_bytes(sinter::test::make_fixture_plan(chain));
    std::ofstream(dir + "/seed_bundle_chain" + std::to_string(chain) + ".plan", std::ios::binary).write(b.data(), b.size());
    const uint64_t m_size = bundle_detail::get_le(b.data() + bundle_detail::kManifestSizeAt, 8);
    const uint64_t a_at = bundle_detail::get_le(b.data() + bundle_detail::kBlobAreaOffsetAt, 8);
    std::ofstream out(dir + "/seed_framed_chain" + std::to_string(chain) + ".bin", std::ios::binary);
    out.write(b.data() + kBundleHeaderSize, m_size);
    out.put('\0');
    out.write(b.data() + a_at, b.size() - a_at);
  }
  return 0;
}
