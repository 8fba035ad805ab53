// NumPy .npy files: how a program that runs a saved model reads its inputs and writes its
// outputs without Python.
//
// read_npy reads format versions 1.0, 2.0 and 3.0 holding a C-ordered array of a dtype ember
// has: float16, float32, float64, int8, int16, int32, int64, uint8, bool, little-endian (or
// with no byte order: one-byte types). Anything else (Fortran order, big-endian data,
// structured, object, string or complex dtypes, unsigned types ember lacks, a damaged header,
// data shorter than the shape says) is an ember::Error naming the file and what to do; bool
// bytes other than 0 and 1 read as true. NumPy has no bfloat16: write_npy refuses it.
//
// write_npy writes version 1.0 (2.0 when the header does not fit 1.0's 65535 bytes), the
// header padded to 64 bytes as numpy pads it, so numpy.load reads the file back and
// read_npy(path) gives the tensor that was written.
#pragma once

#include <string>

#include "ember/tensor/tensor.h"

namespace ember {

Tensor read_npy(const std::string& path);

// `tensor` must be concrete and on the CPU.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace ember
