// The pieces of the runtime's routines that take the compiler its time, which generated
// modules (EMBER_RT_GEMM_EXTERN) only declare: the GEMM's packed products of each micro-tile
// shape, its dot and matrix-vector products (gemm.h: packed_piece, dot_piece, gemv_piece),
// and the blocked convolutions' micro-kernel tables (conv_blocked.h and
// depthwise_blocked.h: kernel). Together about five seconds of compiling.
//
// Codegen includes this header in the first unit of every module (define_pieces_once). The
// JIT compiles it once per compiler, flag set and runtime headers into an object that it
// links into every module, and compiles the modules with EMBER_RT_PIECES_PREBUILT, which
// empties this header (compile_shared, src/jit/compiler.cpp); where it cannot, the module's
// first unit defines the pieces itself. Either way the link's --gc-sections keeps the pieces
// that the module's kernels reach, so a module holds the same machine code.
#pragma once

#include "conv_blocked.h"
#include "depthwise_blocked.h"
#include "gemm.h"

#if defined(EMBER_RT_GEMM_EXTERN) && !defined(EMBER_RT_PIECES_PREBUILT)
namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace gemm_detail {

template <int MR, int NV>
void packed_piece(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                  const Plan& p) {
  run_packed<MR, NV>(s, ctx, epi, epi_ctx, p);
}
void dot_piece(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx) {
  run_dot(s, ctx, epi, epi_ctx);
}
bool gemv_piece(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx) {
  return try_gemv(s, ctx, epi, epi_ctx);
}

// Takes the address of every packed_piece that run_path can call (the same list), which
// makes the compiler emit each of them here, under its own name, for the modules that call
// it. (Explicit instantiations would do the same, but two entries of the list can name one
// shape.) Nothing calls this function: the link drops it.
using PackedPiece = void (*)(const GemmShape&, const LaunchContext*, EpiFn, void*, const Plan&);
[[gnu::visibility("hidden")]] void instantiate_pieces(PackedPiece* out) {
  *out++ = &packed_piece<1, kDefaultNV>;
  *out++ = &packed_piece<kPreparedSmallMR, kDefaultNV>;
  *out++ = &packed_piece<kPreparedMidMR, kDefaultNV>;
#define EMBER_RT_PIECE_CASE(ID, MR, NV) *out++ = &packed_piece<MR, NV>;
  EMBER_RT_GEMM_KERNELS(EMBER_RT_PIECE_CASE)
#undef EMBER_RT_PIECE_CASE
}

}  // namespace gemm_detail

namespace conv_blocked_detail {
BlockFn kernel(int ur, int noc, int64_t sw) { return kernel_of(ur, noc, sw); }
}  // namespace conv_blocked_detail

namespace depthwise_blocked_detail {
BlockFn kernel(int64_t ur, int64_t sw) { return kernel_of(ur, sw); }
}  // namespace depthwise_blocked_detail

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
#endif
