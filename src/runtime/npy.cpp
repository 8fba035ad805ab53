// NumPy .npy files (ember/runtime/npy.h).
//
// The format: the magic "\x93NUMPY", a major and a minor version byte, the header length
// (u16 for version 1, u32 for versions 2 and 3, little-endian), then the header, a Python
// dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and ended by '\n', then the raw data.
#include "ember/runtime/npy.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <vector>

#include "ember/support/error.h"

namespace ember {
namespace {

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kAlign = 64;  // numpy pads the header so that the data starts aligned

struct DescrEntry {
  const char* kind;  // numpy's type character and size: "f4"
  DType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"f2", DType::float16}, {"f4", DType::float32}, {"f8", DType::float64},
    {"i1", DType::int8},    {"i2", DType::int16},   {"i4", DType::int32},
    {"i8", DType::int64},   {"u1", DType::uint8},   {"b1", DType::boolean},
};

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw Error("cannot read the .npy file " + path + ": " + why);
}

// The parsed header.
struct Header {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
};

// A reader of the header's dict literal: strings, True/False and tuples of integers, which
// is all that numpy writes there for the dtypes ember has.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    expect('{');
    while (!peek('}')) {
      std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        if (peek('[')) {
          fail(
              "it holds a structured array (a record dtype); ember reads plain arrays of one "
              "dtype");
        }
        h.descr = string_literal();
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
      } else if (key == "shape") {
        h.shape = int_tuple();
      } else {
        fail("its header has the unknown key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) fail("its header has text after the dict");
    if (!h.descr || !h.fortran_order || !h.shape) {
      fail("its header lacks one of 'descr', 'fortran_order' and 'shape'");
    }
    return h;
  }

  [[noreturn]] void fail(const std::string& why) const { ember::fail(path_, why); }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) damaged(std::string("expected '") + c + "'");
    ++pos_;
  }
  [[noreturn]] void damaged(const std::string& what) const {
    fail("its header is damaged (" + what + " at character " + std::to_string(pos_) + " of: " + s_ +
         ")");
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) damaged("expected a string");
    const char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') damaged("an escape in a string");
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) damaged("an unterminated string");
    ++pos_;
    return out;
  }
  bool word(const char* w) {
    skip_space();
    const size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  bool boolean() {
    if (word("True")) return true;
    if (word("False")) return false;
    damaged("expected True or False");
  }
  int64_t integer() {
    skip_space();
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      damaged("expected a non-negative integer");
    }
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      const int digit = s_[pos_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) damaged("a dimension too large");
      v = v * 10 + digit;
    }
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // written by Python 2's numpy
    return v;
  }
  std::vector<int64_t> int_tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (!peek(')')) {
      dims.push_back(integer());
      if (!peek(')')) expect(',');
    }
    expect(')');
    return dims;
  }

  const std::string& s_;
  std::string path_;
  size_t pos_ = 0;
};

DType dtype_of_descr(const std::string& descr, const HeaderParser& parser) {
  if (descr.size() < 2) parser.fail("its dtype '" + descr + "' is not one numpy writes");
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  const DescrEntry* entry = nullptr;
  for (const DescrEntry& e : kDescrs) {
    if (kind == e.kind) entry = &e;
  }
  if (entry == nullptr) {
    std::string what = "its dtype '" + descr + "' is not one ember has";
    if (kind == "O") what = "it holds Python objects (dtype object), which ember cannot read";
    if (!kind.empty() && (kind[0] == 'u')) what += " (ember's only unsigned dtype is uint8)";
    parser.fail(what +
                "; ember reads float16/32/64, int8/16/32/64, uint8 and bool: convert "
                "the array with astype() first");
  }
  const bool one_byte = dtype_size(entry->dtype) == 1;
  if (order == '>' && !one_byte) {
    parser.fail("its data is big-endian ('" + descr +
                "'); ember reads little-endian data: save a.astype(a.dtype.newbyteorder('<'))");
  }
  if (order != '<' && order != '|' && order != '=' && order != '>') {
    parser.fail("its dtype '" + descr + "' has an unknown byte order");
  }
  return entry->dtype;
}

std::string descr_of(DType dtype) {
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == dtype) return (dtype_size(dtype) == 1 ? "|" : "<") + std::string(e.kind);
  }
  throw Error("cannot write a " + dtype_name(dtype) +
              " tensor to a .npy file: numpy has no such dtype (convert it to float32 first)");
}

uint32_t read_le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in, "cannot open the .npy file " << path << ": " << std::strerror(errno));
  unsigned char prefix[12];
  in.read(reinterpret_cast<char*>(prefix), 8);
  if (in.gcount() != 8 || std::memcmp(prefix, kMagic, 6) != 0) {
    fail(path, "it is not a .npy file (it does not start with \\x93NUMPY)");
  }
  const int major = prefix[6];
  if (major < 1 || major > 3) {
    fail(path, "it has format version " + std::to_string(major) + "." + std::to_string(prefix[7]) +
                   "; ember reads versions 1.0, 2.0 and 3.0");
  }
  const int len_bytes = major == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(prefix + 8), len_bytes);
  if (in.gcount() != len_bytes) fail(path, "it ends inside its header");
  const uint32_t header_len = read_le(prefix + 8, len_bytes);
  // numpy refuses headers over 10000 bytes by default; a plain array's is under 200.
  if (header_len > (1u << 24)) fail(path, "its header length is implausible");
  std::string text(header_len, '\0');
  in.read(text.data(), header_len);
  if (static_cast<uint32_t>(in.gcount()) != header_len) fail(path, "it ends inside its header");

  HeaderParser parser(text, path);
  const Header h = parser.parse();
  const DType dtype = dtype_of_descr(*h.descr, parser);
  const std::vector<int64_t>& dims = *h.shape;
  int64_t numel = 1, long_dims = 0;
  const int64_t item = dtype_size(dtype);
  for (int64_t d : dims) {
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / item / d) {
      parser.fail("its shape is too large");
    }
    numel *= d;
    long_dims += d > 1;
  }
  // In Fortran order the data is the transpose of C order, except when at most one
  // dimension is longer than 1: then both orders lay out the same bytes.
  if (*h.fortran_order && long_dims > 1 && numel > 0) {
    parser.fail(
        "its data is in Fortran order; ember reads C order: save "
        "numpy.ascontiguousarray(a) instead");
  }
  Tensor t = Tensor::empty(concrete_shape(dims), dtype);
  const int64_t nbytes = numel * item;
  if (nbytes > 0) {
    in.read(static_cast<char*>(t.data()), nbytes);
    if (in.gcount() != nbytes) {
      parser.fail("it is truncated: its shape needs " + std::to_string(nbytes) +
                  " bytes of data but it holds " + std::to_string(in.gcount()));
    }
  }
  if (dtype == DType::boolean) {
    auto* b = static_cast<unsigned char*>(t.data());
    for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  EMBER_CHECK(tensor.defined() && !tensor.is_symbolic(),
              "cannot write " << path << ": only a concrete tensor has values to write");
  EMBER_CHECK(tensor.device() == Device::cpu(), "cannot write " << path << ": the tensor is on "
                                                                << tensor.device().str()
                                                                << ", not the CPU");
  const std::vector<int64_t> dims = shape_values(tensor.shape());
  std::string shape = "(";
  for (size_t i = 0; i < dims.size(); ++i) shape += (i ? ", " : "") + std::to_string(dims[i]);
  if (dims.size() == 1) shape += ",";
  shape += ")";
  std::string header = "{'descr': '" + descr_of(tensor.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 when the padded header fits its 16-bit length, else 2.0.
  int major = 1;
  size_t prefix = 10;
  if (header.size() + 1 + kAlign > 65535) {
    major = 2;
    prefix = 12;
  }
  const size_t total = (prefix + header.size() + 1 + kAlign - 1) / kAlign * kAlign;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';

  std::string out(kMagic, 6);
  out += static_cast<char>(major);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  EMBER_CHECK(f, "cannot write the .npy file " << path << ": " << std::strerror(errno));
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (tensor.nbytes() > 0) {
    f.write(static_cast<const char*>(tensor.data()), tensor.nbytes());
  }
  f.flush();
  EMBER_CHECK(f, "cannot write the .npy file " << path << " (out of disk space?)");
}

}  // namespace ember
