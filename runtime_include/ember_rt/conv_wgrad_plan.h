// The geometry of conv2d_weight_grad's in-place form (ember_rt/conv_wgrad.h,
// conv2d_weight_grad_inplace), which the operator's lowering (sizing the scratch buffers)
// and the routine share. Plain integer arithmetic: host code reads this header too.
//
// The input is copied, per channel, into phase planes: with stride s and dilation d along an
// axis, tap k reads input offset a + s * r of the padded input, a = (k * d) % s, at plane row
// (or column) r = o + (k * d) / s for output o. Taps with the same a share a plane, so a tap
// reads a contiguous run of its plane for a whole output row, and, the planes of a chunk's
// images one after another, for all of the chunk's outputs: position p = i * plane + oh *
// cols + ow (image i), whose columns ow >= OW and rows oh >= OH are junk positions (read, but
// multiplied by a zero output gradient).
#pragma once

#include <cstdint>

namespace ember_rt {

// One spatial axis: kernel k, stride s, dilation d.
struct WgradAxis {
  int64_t k = 1, s = 1, d = 1;

  constexpr int64_t period() const {
    int64_t a = d, b = s;  // s / gcd(d, s)
    while (b != 0) {
      const int64_t t = a % b;
      a = b;
      b = t;
    }
    return s / a;
  }
  // The phases the taps read: min(k, period); tap t reads phase phase_of(t).
  constexpr int64_t count() const { return k < period() ? k : period(); }
  constexpr int64_t phase_of(int64_t tap) const {
    return count() == period() ? tap % period() : tap;
  }
  // Phase i holds the padded input's offsets offset(i) + s * r.
  constexpr int64_t offset(int64_t phase) const { return phase * d % s; }
  // The plane row (column) where tap t's run starts, and the last tap's.
  constexpr int64_t shift(int64_t tap) const { return tap * d / s; }
  constexpr int64_t reach() const { return shift(k - 1); }
};

struct WgradPlan {
  WgradAxis h, w;
  int64_t OH = 0, OW = 0;
  int64_t rows = 0, cols = 0;  // of a phase plane
  constexpr int64_t phases() const { return h.count() * w.count(); }
  constexpr int64_t plane() const { return rows * cols; }
  // The positions of a chunk of `imgs` images (the last image's junk rows left out).
  constexpr int64_t positions(int64_t imgs) const { return (imgs - 1) * plane() + OH * cols; }
  // Positions per output pixel, junk included.
  constexpr double waste() const {
    return static_cast<double>(plane()) / static_cast<double>(OH * OW > 0 ? OH * OW : 1);
  }
};

// The product's tiles (conv_wgrad.h, wgrad_detail): kWgradTileRows rows of dw^T (taps) by
// panels of 16 to 64 output channels. dy's transpose and dw^T are stored with their channels
// padded to a multiple of 16 (zeros in dy's padding), and dw^T with its rows padded to a
// whole tile, so that every tile is whole, whatever the ISA's vector width.
constexpr int64_t kWgradTileRows = 6;
constexpr int64_t wgrad_channel_stride(int64_t og) { return (og + 15) / 16 * 16; }
constexpr int64_t wgrad_tap_rows(int64_t ck) {
  return (ck + kWgradTileRows - 1) / kWgradTileRows * kWgradTileRows;
}

// A tap's run ends at most reach rows and columns into its plane; when it starts past column
// 0, its last row ends one row further.
constexpr WgradPlan wgrad_plan(int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                               int64_t sh, int64_t sw, int64_t pw, int64_t dh, int64_t dw) {
  WgradPlan p;
  p.h = WgradAxis{KH, sh, dh};
  p.w = WgradAxis{KW, sw, dw};
  p.OH = OH;
  p.OW = OW;
  p.rows = OH + p.h.reach() + (p.w.reach() > 0 ? 1 : 0);
  p.cols = (W + 2 * pw + sw - 1) / sw;
  return p;
}

}  // namespace ember_rt
