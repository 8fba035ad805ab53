// Tests for .npy files (ember/runtime/npy.h): every dtype round-trips, the written header is
// numpy's, files numpy writes in versions 1.0 to 3.0 read right, and every file ember cannot
// read (Fortran order, big-endian, objects, damaged headers, truncated data) is an
// ember::Error saying why. tests/python/test_cpp_deploy.py checks against numpy itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ember/runtime/npy.h"
#include "ember/support/error.h"
#include "error_text.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

class Npy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_npy_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A file of the given version whose header is `dict` (padded as numpy pads it) followed
  // by `data`.
  std::string file(const std::string& name, const std::string& dict, const std::string& data,
                   int major = 1) {
    std::string header = dict;
    const size_t prefix = major == 1 ? 10 : 12;
    while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
    const uint32_t len = static_cast<uint32_t>(header.size());
    for (size_t i = 0; i < prefix - 8; ++i) bytes += static_cast<char>((len >> (8 * i)) & 0xff);
    return raw(name, bytes + header + data);
  }
  std::string raw(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
};

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST_F(Npy, EveryDtypeRoundTrips) {
  for (DType dtype : {DType::float16, DType::float32, DType::float64, DType::int8, DType::int16,
                      DType::int32, DType::int64, DType::uint8, DType::boolean}) {
    for (const std::vector<int64_t>& dims :
         std::vector<std::vector<int64_t>>{{}, {0}, {5}, {2, 3, 4}, {3, 0, 2}}) {
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      std::vector<double> values;
      for (int64_t i = 0; i < n; ++i) values.push_back(dtype == DType::boolean ? i % 2 : i % 7 - 3);
      Tensor t = from_values(values, concrete_shape(dims), dtype);
      const std::string p = path("t.npy");
      write_npy(p, t);
      Tensor back = read_npy(p);
      SCOPED_TRACE(dtype_name(dtype) + " " + t.type().str());
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(shape_values(back.shape()), dims);
      ASSERT_EQ(back.nbytes(), t.nbytes());
      if (n > 0) {
        EXPECT_EQ(std::memcmp(back.data(), t.data(), t.nbytes()), 0);
      }
      // The header is padded so that the data starts 64-byte aligned, as numpy does.
      EXPECT_EQ((slurp(p).size() - static_cast<size_t>(t.nbytes())) % 64, 0u);
    }
  }
}

TEST_F(Npy, WritesNumpysHeader) {
  const std::string p = path("a.npy");
  write_npy(p, from_values({1, 2, 3, 4, 5, 6}, concrete_shape({2, 3}), DType::float32));
  const std::string bytes = slurp(p);
  // What numpy.save writes for numpy.arange(1, 7, dtype=numpy.float32).reshape(2, 3).
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(bytes, std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                       std::string(128 - 10 - dict.size() - 1, ' ') + "\n" +
                       bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6}));
  write_npy(p, from_values({7}, concrete_shape({1}), DType::int8));
  EXPECT_TRUE(Contains(slurp(p), "{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }"));
  write_npy(p, from_values({1}, {}, DType::boolean));
  EXPECT_TRUE(Contains(slurp(p), "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"));
}

TEST_F(Npy, ReadsVersions1To3AndNumpysSpellings) {
  const std::string data = bytes_of(std::vector<int32_t>{1, -2, 3, -4, 5, -6});
  for (int major : {1, 2, 3}) {
    Tensor t = read_npy(
        file("v.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2), }", data, major));
    EXPECT_EQ(t.type().str(), "int32[3, 2]");
    EXPECT_EQ(element_as_double(t, 3), -4);
  }
  // Keys in another order, double quotes, no trailing comma, Python 2's long integers,
  // native byte order.
  Tensor t = read_npy(
      file("v.npy", "{\"shape\": (6L,), \"fortran_order\": False, \"descr\": \"=i4\"}", data));
  EXPECT_EQ(t.type().str(), "int32[6]");
  // Fortran order is C order when at most one dimension is longer than 1.
  t = read_npy(file("v.npy", "{'descr': '<i4', 'fortran_order': True, 'shape': (1, 6), }", data));
  EXPECT_EQ(element_as_double(t, 5), -6);
  // One-byte types have no byte order.
  t = read_npy(
      file("v.npy", "{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }", "\x07\xff"));
  EXPECT_EQ(t.type().str(), "uint8[2]");
  EXPECT_EQ(element_as_double(t, 1), 255);
  // Bool bytes other than 0 and 1 are true.
  t = read_npy(file("v.npy", "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                    std::string("\x00\x02\x01", 3)));
  EXPECT_EQ(static_cast<const unsigned char*>(t.data())[1], 1);
}

TEST_F(Npy, RefusesWhatItCannotRead) {
  const std::string f4 = bytes_of(std::vector<float>{1, 2, 3, 4});
  auto header = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
    return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  };
  auto error_reading = [&](const std::string& dict, const std::string& data, int major = 1) {
    return error_of([&] { read_npy(file("bad.npy", dict, data, major)); });
  };
  EXPECT_TRUE(Contains(error_reading(header("'<f4'", "True", "(2, 2)"), f4), "Fortran order"));
  EXPECT_TRUE(Contains(error_reading(header("'>f4'", "False", "(4,)"), f4), "big-endian"));
  EXPECT_TRUE(Contains(error_reading(header("'|O'", "False", "(4,)"), f4), "Python objects"));
  EXPECT_TRUE(Contains(error_reading(header("'<u2'", "False", "(8,)"), f4), "only unsigned dtype"));
  EXPECT_TRUE(Contains(error_reading(header("'<c8'", "False", "(2,)"), f4), "'<c8' is not one"));
  EXPECT_TRUE(Contains(error_reading(header("'<U3'", "False", "(1,)"), f4), "astype"));
  EXPECT_TRUE(Contains(error_reading(header("[('a', '<f4')]", "False", "(4,)"), f4), "structured"));
  EXPECT_TRUE(Contains(error_reading(header("'<f4'", "False", "(5,)"), f4),
                       "truncated: its shape needs 20 bytes of data but it holds 16"));
  EXPECT_TRUE(Contains(error_reading(header("'<f8'", "False", "(4611686018427387904, 4)"), f4),
                       "too large"));
  EXPECT_TRUE(Contains(error_reading("{'descr': '<f4', 'shape': (4,), }", f4), "lacks"));
  EXPECT_TRUE(Contains(error_reading("{'descr': '<f4', 'fortran_order': Flase, 'shape': (4,)}", f4),
                       "damaged (expected True or False"));
  EXPECT_TRUE(Contains(error_reading(header("'<f4'", "False", "(-4,)"), f4), "damaged"));
  EXPECT_TRUE(Contains(error_reading(header("'<f4'", "False", "(4,)") + "x", f4), "text after"));
  EXPECT_TRUE(Contains(error_reading("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), "
                                     "'extra': 1}",
                                     f4),
                       "unknown key 'extra'"));
  EXPECT_TRUE(Contains(error_reading("{'descr': '<f4", f4), "unterminated"));

  const std::string magic("\x93NUMPY", 6);
  EXPECT_TRUE(Contains(error_of([&] { read_npy(raw("bad.npy", "PK\x03\x04 a zip")); }),
                       "it is not a .npy file"));
  EXPECT_TRUE(Contains(error_of([&] {
                         read_npy(raw("bad.npy", magic + std::string("\x04\x00"
                                                                     "ab",
                                                                     4)));
                       }),
                       "format version 4.0"));
  EXPECT_TRUE(Contains(
      error_of([&] { read_npy(raw("bad.npy", magic + std::string("\x01\x00\xff\x00{'", 6))); }),
      "ends inside its header"));
  EXPECT_TRUE(Contains(error_of([&] { read_npy(raw("bad.npy", magic + "\x01")); }),
                       "it is not a .npy file"));
  EXPECT_TRUE(Contains(error_of([&] { read_npy(path("missing.npy")); }), "cannot open"));
  EXPECT_TRUE(Contains(error_of([&] { read_npy(path("missing.npy")); }), "missing.npy"));
}

TEST_F(Npy, RefusesToWriteWhatNumpyLacks) {
  EXPECT_TRUE(Contains(error_of([&] { write_npy(path("b.npy"), zeros({2}, DType::bfloat16)); }),
                       "no such dtype"));
  EXPECT_TRUE(
      Contains(error_of([&] { write_npy(path("s.npy"), Tensor::symbol({2}, DType::float32)); }),
               "only a concrete tensor"));
  EXPECT_TRUE(Contains(error_of([&] { write_npy(path("no/such/dir/x.npy"), zeros({2})); }),
                       "cannot write the .npy file"));
}

}  // namespace
}  // namespace ember
