// Layouts: how the elements of a tensor of a logical shape lie in memory.
//
// Shapes are logical everywhere (a convolution's activation is [N, C, H, W] whatever its
// layout); a layout says only where element [n, c, h, w] is stored and how many elements the
// memory holds. Kernels address every buffer through Layout::offset, and memory is sized by
// Layout::physical_shape: the two functions that turn a layout into index arithmetic.
//
//   plain          row-major, contiguous (the default; every graph input and output is plain)
//   channels-last  a tensor [N, C, spatial...] stored as [N, spatial..., C] (NHWC, NLC)
//   blocked (b)    [N, C, spatial...] stored as [N, ceil(C / b), spatial..., b]: the channels
//                  in blocks of b, a block's b channels contiguous (nChw16c); the last block is
//                  padded up to b channels, and the padding lanes hold zeros
//
// Channels-last and blocked layouts apply to tensors of rank 3 to 5 ([N, C, L],
// [N, C, H, W], [N, C, D, H, W]), whose dimension 1 is the channel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/ir/expr.h"
#include "ember/ir/shape.h"

namespace ember {

enum class LayoutKind : uint8_t { Plain, ChannelsLast, Blocked };

struct Layout {
  LayoutKind kind = LayoutKind::Plain;
  int64_t block = 0;  // Blocked only: the channels per block (>= 1)

  static Layout plain() { return {}; }
  static Layout channels_last() { return {LayoutKind::ChannelsLast, 0}; }
  // An ember::Error unless block >= 1.
  static Layout blocked(int64_t block);

  bool is_plain() const { return kind == LayoutKind::Plain; }
  bool operator==(const Layout&) const = default;

  // The name for a tensor of this rank: "plain", "nhwc" / "nwc" / "ndhwc", "nChw16c" /
  // "nCw16c" / "nCdhw16c".
  std::string name(size_t rank) const;
  // How a type prints it after its shape: "" for plain, else "{nChw16c}".
  std::string suffix(size_t rank) const { return is_plain() ? "" : "{" + name(rank) + "}"; }
  // An ember::Error (naming `what`) unless a tensor of this rank can have this layout.
  void check_rank(size_t rank, const std::string& what) const;

  // The shape of the memory, in storage order: [N, H, W, C] for channels-last,
  // [N, ceil(C / b), H, W, b] for blocked; the shape itself for plain.
  Shape physical_shape(const Shape& logical) const;
  // The index into physical_shape of the logical element `idx`.
  std::vector<ir::Expr> physical_index(const Shape& logical,
                                       const std::vector<ir::Expr>& idx) const;
  // The logical index of the physical element `pidx` (for blocked: the channel may be one of
  // the padding lanes, >= C).
  std::vector<ir::Expr> logical_index(const Shape& logical,
                                      const std::vector<ir::Expr>& pidx) const;
  // The flat offset, in elements, of the logical element `idx`: row-major over
  // physical_shape at physical_index.
  ir::Expr offset(const Shape& logical, const std::vector<ir::Expr>& idx) const;
  // The elements the memory holds (padding included).
  ir::Expr physical_numel(const Shape& logical) const;
};

// Whether a tensor of shape `a` in layout `la` and one of shape `b` in `lb` lay their
// elements out alike, so that one can be read in the other's memory (a view): both plain
// (row-major, whatever the shapes: the caller compares the element counts), or one
// non-plain layout whose physical shapes differ only in size-1 dimensions (blocked [N, C, L]
// and [N, C, 1, L] are both [N, CB, L, b] in memory).
bool same_memory(const Layout& la, const Shape& a, const Layout& lb, const Shape& b);

// Parses a layout name: "plain", "channels_last" (or "nhwc", "nwc", "ndhwc"), "nChw16c" /
// "nCw8c" / "nCdhw16c" (a block of that many channels; the letters are not checked against a
// rank), or "blocked16". Anything else is an ember::Error listing the forms.
Layout parse_layout(const std::string& name);

}  // namespace ember
