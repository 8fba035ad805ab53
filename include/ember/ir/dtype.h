// Element types: what a tensor, a buffer and an expression hold.
#pragma once

#include <cstdint>
#include <string>

namespace ember {

enum class DType : uint8_t {
  float32,
  float16,
  bfloat16,
  float64,
  int8,
  int16,
  int32,
  int64,
  uint8,
  boolean,
};

// Number of bytes of one element.
int dtype_size(DType t);
// The public name: "float32", "bfloat16", "bool", ...
std::string dtype_name(DType t);
// Parses a public name (also accepts "float", "half", "double", "int", "long"); an unknown
// name is an ember::Error that lists the valid ones.
DType dtype_from_name(const std::string& name);
bool is_float(DType t);
bool is_integer(DType t);  // signed or unsigned integers, not bool
// The C++ type generated code uses for storage ("float", "ember_rt::bf16", "bool", ...).
std::string dtype_ctype(DType t);
// The C++ type arithmetic happens in: float for float16/bfloat16/float32, double for
// float64, the storage type for integers and bool.
std::string dtype_compute_ctype(DType t);

}  // namespace ember
