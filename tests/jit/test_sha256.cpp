// SHA-256 against the FIPS 180-4 example vectors: the cache's keys and checksums rest on it.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cuda/sha256.hpp"
#include "cuda/sha256_blocks.hpp"

namespace sinter::cuda {
namespace {

TEST(JitSha256, MatchesStandardVectors) {
  EXPECT_EQ(to_hex(sha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(to_hex(sha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(JitSha256, IncrementalUpdatesEqualOneShot) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += char('a' + i * 7 % 26);
  const Sha256Digest expected = sha256(text);
  // Chunk sizes that straddle the 64-byte block and the 56-byte padding boundary.
  for (std::size_t chunk : {1, 3, 55, 56, 63, 64, 65, 200}) {
    Sha256 hasher;
    for (std::size_t at = 0; at < text.size(); at += chunk) {
      hasher.update(std::string_view(text).substr(at, chunk));
    }
    EXPECT_EQ(hasher.finish(), expected) << "chunk " << chunk;
  }
}

TEST(JitSha256, FieldsAreLengthPrefixed) {
  Sha256 a, b;
  a.update_field("ab");
  a.update_field("c");
  b.update_field("a");
  b.update_field("bc");
  EXPECT_NE(a.finish(), b.finish());
}

// The SHA-NI blocks against the portable loop, state word for state word, over random blocks
// and chained states (the vectors above already pass through whichever one this CPU uses).
TEST(JitSha256, ShaExtensionsMatchThePortableLoop) {
  if (!sha256_detail::sha_ni_available()) GTEST_SKIP() << "this CPU has no SHA extensions (portable loop only)";
  std::mt19937 rng(5);
  for (std::size_t blocks : {1, 2, 3, 17, 100}) {
    std::vector<std::uint8_t> data(64 * blocks);
    for (std::uint8_t& byte : data) byte = static_cast<std::uint8_t>(rng());
    std::uint32_t portable[8], extensions[8];
    for (int i = 0; i < 8; ++i) portable[i] = extensions[i] = static_cast<std::uint32_t>(rng());
    sha256_detail::compress_portable(portable, data.data(), blocks);
    sha256_detail::compress_sha_ni(extensions, data.data(), blocks);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(extensions[i], portable[i]) << blocks << " blocks, word " << i;
  }
}

}  // namespace
}  // namespace sinter::cuda
