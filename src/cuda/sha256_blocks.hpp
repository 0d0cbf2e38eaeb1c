// The SHA-256 compression function over whole 64-byte blocks, in two implementations: portable
// C++, and x86's SHA extensions (SHA-NI), picked at run time. A plan bundle is hashed whole and
// per blob when it loads; at ~120 MB/s the portable loop made hashing most of the transformer
// block's 8.6 ms "bundle read + checked" on the H200 host, while SHA-NI runs at over 1 GB/s.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sinter::cuda::sha256_detail {

void compress_portable(std::uint32_t state[8], const std::uint8_t* blocks, std::size_t count);
// Only where sha_ni_available(); defined on x86-64 builds.
void compress_sha_ni(std::uint32_t state[8], const std::uint8_t* blocks, std::size_t count);
bool sha_ni_available();

// The dispatching entry point used by Sha256.
void compress(std::uint32_t state[8], const std::uint8_t* blocks, std::size_t count);

}  // namespace sinter::cuda::sha256_detail
