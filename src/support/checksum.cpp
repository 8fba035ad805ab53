// checksum64: four independent multiply-rotate lanes over 8-byte words (so the CPU overlaps
// them), folded together with the length and the tail, then avalanched.
#include <cstring>

#include "ember/support/hash.h"

namespace ember {
namespace {

constexpr uint64_t kA = 0x9E3779B97F4A7C15ull;  // 2^64 / golden ratio
constexpr uint64_t kB = 0xD6E8FEB86659FD93ull;
constexpr uint64_t kC = 0xA0761D6478BD642Full;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t word(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
inline uint64_t lane(uint64_t h, uint64_t w) { return rotl(h + w * kB, 31) * kA; }

}  // namespace

uint64_t checksum64(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  size_t n = size;
  uint64_t a = kA, b = kB, c = kC, d = kA ^ kB;
  for (; n >= 32; n -= 32, p += 32) {
    a = lane(a, word(p));
    b = lane(b, word(p + 8));
    c = lane(c, word(p + 16));
    d = lane(d, word(p + 24));
  }
  uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + static_cast<uint64_t>(size);
  for (; n >= 8; n -= 8, p += 8) h = rotl(h ^ lane(0, word(p)), 27) * kA + kC;
  for (; n > 0; --n, ++p) h = rotl(h ^ (*p * kC), 11) * kA;
  h ^= h >> 33;
  h *= kB;
  h ^= h >> 29;
  h *= kC;
  h ^= h >> 32;
  return h;
}

}  // namespace ember
