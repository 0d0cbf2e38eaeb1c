// SHA-256 blocks through the x86 SHA extensions. Each sha256rnds2 does two rounds on the state
// split as (A, B, E, F) and (C, D, G, H); sha256msg1/msg2 extend the message schedule four words
// at a time. Checked against the portable loop on random inputs in tests/jit/test_sha256.cpp.
#include "cuda/sha256_blocks.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#include <immintrin.h>

namespace sinter::cuda::sha256_detail {

bool sha_ni_available() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool sha = (b >> 29) & 1u;  // CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29]
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool sse41 = (c >> 19) & 1u, ssse3 = (c >> 9) & 1u;
  return sha && sse41 && ssse3;
}

__attribute__((target("sha,sse4.1,ssse3"))) void compress_sha_ni(std::uint32_t state[8], const std::uint8_t* blocks,
                                                                  std::size_t count) {
  // big-endian message words: reverse the bytes of each 32-bit lane
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  // state words (A B C D) (E F G H) -> the (A B E F) (C D G H) halves the instructions take
  __m128i abcd = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state));
  __m128i efgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4));
  abcd = _mm_shuffle_epi32(abcd, 0xB1);  // C D A B in lanes 3..0 order: (B A D C)
  efgh = _mm_shuffle_epi32(efgh, 0x1B);  // (H G F E)
  __m128i abef = _mm_alignr_epi8(abcd, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);

  for (; count > 0; --count, blocks += 64) {
    const __m128i abef_in = abef, cdgh_in = cdgh;
    __m128i w[4];
    for (int i = 0; i < 4; ++i) {
      w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 16 * i)), byte_swap);
    }
    for (int group = 0; group < 16; ++group) {
      // w[group % 4] holds the schedule words of rounds 4*group .. 4*group+3
      __m128i& cur = w[group % 4];
      if (group >= 4) {
        const __m128i& prev = w[(group + 3) % 4];     // words of group-1
        const __m128i& prev2 = w[(group + 2) % 4];    // group-2
        const __m128i& before = w[(group + 1) % 4];   // group-3
        __m128i t = _mm_sha256msg1_epu32(cur, before);  // cur still holds group-4
        t = _mm_add_epi32(t, _mm_alignr_epi8(prev, prev2, 4));
        cur = _mm_sha256msg2_epu32(t, prev);
      }
      __m128i msg = _mm_add_epi32(cur, _mm_load_si128(reinterpret_cast<const __m128i*>(kRound + 4 * group)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, msg);
      msg = _mm_shuffle_epi32(msg, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, msg);
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }

  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}

}  // namespace sinter::cuda::sha256_detail

#else

namespace sinter::cuda::sha256_detail {
bool sha_ni_available() { return false; }
void compress_sha_ni(std::uint32_t state[8], const std::uint8_t* blocks, std::size_t count) {
  compress_portable(state, blocks, count);
}
}  // namespace sinter::cuda::sha256_detail

#endif
