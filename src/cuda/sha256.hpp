// SHA-256 (FIPS 180-4). The kernel cache names its entries by content, and its files carry a
// checksum: both need a hash whose collisions are out of the question, not just unlikely for
// friendly inputs, so a small self-contained SHA-256 rather than a fast non-cryptographic hash.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sinter::cuda {

using Sha256Digest = std::array<std::uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The length (8 bytes, little-endian) then the bytes: a sequence of fields hashed this way
  // cannot collide with a different sequence whose concatenation happens to be equal.
  void update_field(std::string_view field);
  // Pads and returns the digest; the object must not be updated afterwards.
  Sha256Digest finish();

 private:
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

Sha256Digest sha256(const void* data, std::size_t size);
inline Sha256Digest sha256(std::string_view text) { return sha256(text.data(), text.size()); }

// Whether this CPU has the x86 SHA extensions sha256 uses (else a portable loop, ~5x slower).
bool sha256_uses_cpu_extensions();

// Lower-case hexadecimal, 64 characters.
std::string to_hex(const Sha256Digest& digest);

}  // namespace sinter::cuda
