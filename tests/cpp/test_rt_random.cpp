// Tests for runtime_include/ember_rt/random.h: Philox-4x32-10 against the Random123
// known-answer vectors and a plain reference written here, the uniform floats it gives, and
// the vector form (AVX-512, AVX2 or the scalar fallback, whichever this build selects; CMake
// builds the test once more for AVX2 where -march=native picks AVX-512) lane by lane against
// the scalar form, across the 2^32 boundary of the counter's low word.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#include "ember_rt/random.h"

namespace ember_rt {
namespace {

using Words = std::array<uint32_t, 4>;

// Philox-4x32-10 as the paper states it, one round at a time, 64-bit products.
Words reference(Words c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k = {k[0] + 0x9E3779B9u, k[1] + 0xBB67AE85u};
  }
  return c;
}

Words run(Words c, std::array<uint32_t, 2> k) {
  philox4x32_10(c.data(), k.data());
  return c;
}

// Random123's known-answer test (kat_vectors, philox4x32 with 10 rounds).
TEST(RtRandom, KnownAnswers) {
  struct Kat {
    Words ctr;
    std::array<uint32_t, 2> key;
    Words out;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    EXPECT_EQ(run(k.ctr, k.key), k.out);
    EXPECT_EQ(reference(k.ctr, k.key), k.out);
  }
}

TEST(RtRandom, MatchesTheReference) {
  uint32_t x = 12345;
  auto next = [&] { return x = x * 1664525u + 1013904223u; };
  for (int i = 0; i < 1000; ++i) {
    const Words c = {next(), next(), next(), next()};
    const std::array<uint32_t, 2> k = {next(), next()};
    ASSERT_EQ(run(c, k), reference(c, k));
  }
}

// The uniform is the first word's top 24 bits over 2^24, with the documented word order:
// key (seed low, seed high), counter (index low, index high, offset low, offset high).
TEST(RtRandom, UniformFromTheFirstWord) {
  const int64_t seed = 0x0123456789abcdefLL, offset = 0x1122334455667788LL;
  for (int64_t index : {int64_t{0}, int64_t{1}, int64_t{0xfffffffe}, int64_t{0x100000005},
                        std::numeric_limits<int64_t>::max()}) {
    const auto i = static_cast<uint64_t>(index);
    const Words w = reference(
        {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0x55667788u, 0x11223344u},
        {0x89abcdefu, 0x01234567u});
    const float u = philox_uniform(seed, offset, index);
    EXPECT_EQ(u, static_cast<float>(w[0] >> 8) / 16777216.0f) << index;
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
  }
}

template <int64_t S>
void expect_lanes_match(int64_t seed, int64_t offset, int64_t base) {
  alignas(64) float lanes[vf::width];
  philox_uniform_lanes<S>(seed, offset, base).store(lanes);
  for (int i = 0; i < vf::width; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(lanes[i]),
              std::bit_cast<uint32_t>(philox_uniform(seed, offset, base + S * i)))
        << "stride " << S << ", base " << base << ", lane " << i;
}

TEST(RtRandom, VectorLanesEqualTheScalarForm) {
  const int64_t seeds[] = {0, 1, 0x7fffffffffffffffLL, -1, 0x0123456789abcdefLL};
  // Bases around the low word's wrap, and at the top of the range.
  const int64_t bases[] = {
      0, 5, 0xffffffffLL - 3, 0xfffffff0LL, 0x1ffffffffLL - 20, 0x7fffffff00000000LL - 7};
  for (int64_t seed : seeds)
    for (int64_t base : bases) {
      expect_lanes_match<1>(seed, 42, base);
      expect_lanes_match<0>(seed, 42, base);
      expect_lanes_match<3>(seed, -9, base);
      expect_lanes_match<768>(seed, 0, base);
      expect_lanes_match<(int64_t{1} << 27)>(seed, 7, base);
    }
}

// Different offsets and seeds give different streams; one stream's words look uniform.
TEST(RtRandom, StreamsDiffer) {
  int same_offset = 0, same_seed = 0;
  double sum = 0;
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = philox_uniform(7, 0, i);
    same_offset += u == philox_uniform(7, 1, i);
    same_seed += u == philox_uniform(8, 0, i);
    sum += u;
  }
  EXPECT_LT(same_offset, 10);
  EXPECT_LT(same_seed, 10);
  // The mean of n uniforms: 1/2 with a standard deviation of 1 / sqrt(12 n); 6 of them.
  EXPECT_NEAR(sum / n, 0.5, 6 * 0.0009128709);
}

}  // namespace
}  // namespace ember_rt
