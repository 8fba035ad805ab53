// The line by which the first unit of a generated module includes ember_rt/pieces.h: codegen
// writes it (define_pieces_once) and the JIT looks for it (compile_shared), so that it can
// link the pieces prebuilt. Host code reads this header; it holds nothing else.
#pragma once

namespace ember_rt {

inline constexpr const char* kPiecesInclude = "#include \"ember_rt/pieces.h\"";

}  // namespace ember_rt
