// SHA-256 (FIPS 180-4), ember's own implementation.
//
// ember keys its on-disk kernel cache by SHA-256 digests of everything that changes a
// compiled binary (docs/principles.md, principle 8), and checks cached shared objects against the
// digest recorded in their manifest before loading them. A cryptographic hash makes an
// accidental collision between two different kernels practically impossible.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ember {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();

  Sha256& update(const void* data, size_t size);
  Sha256& update(std::string_view text) { return update(text.data(), text.size()); }
  // Hashes the length of `text`, then `text`: a sequence of fields hashes unambiguously,
  // so ("ab", "c") and ("a", "bc") give different digests.
  Sha256& field(std::string_view text);

  // Finishes the hash. The object must not be updated afterwards.
  Digest digest();
  // digest() as 64 lowercase hexadecimal characters.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  uint64_t total_bytes_ = 0;
  size_t buffered_ = 0;
  bool finished_ = false;
};

// Lowercase hexadecimal text of `size` bytes.
std::string to_hex(const uint8_t* data, size_t size);

// SHA-256 of `data` in lowercase hexadecimal.
std::string sha256_hex(std::string_view data);

// SHA-256 of a file's contents in lowercase hexadecimal; nullopt when it cannot be read.
std::optional<std::string> sha256_file_hex(const std::string& path);

// A fast 64-bit checksum (not cryptographic: it detects damage, not tampering), several GB/s,
// for large files such as saved models whose loading must not wait for SHA-256.
uint64_t checksum64(const void* data, size_t size);

}  // namespace ember
