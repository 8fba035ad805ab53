// The container of a saved model (docs/deploy.md): records, sections, checksums, mapping
// the file and writing it atomically. artifact.cpp says what goes in the sections.
//
// Layout (little-endian):
//
//   header, 64 bytes     magic "EMBERMDL", u32 format version, u32 section count,
//                        u64 file size, u64 checksum64 of the section table, zero padding
//   section table        per section: 8-byte tag, u64 offset, u64 size, u64 checksum64
//   sections             each 64-byte aligned
//
// Every read is bounds-checked: a damaged file is an ArtifactError, never a crash.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/runtime/artifact.h"
#include "ember/support/error.h"

namespace ember::artifact_file {

constexpr size_t kAlign = 64;

inline size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

class Writer {
 public:
  void u8(uint8_t v) { raw(&v, 1); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i64(int64_t v) { raw(&v, 8); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void strs(const std::vector<std::string>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  void ints(const std::vector<int>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (int x : v) i64(x);
  }
  // The dtype and shape; a value's layout is stored apart (the "layouts" section).
  void type(const TensorType& t) {
    str(dtype_name(t.dtype));
    u32(static_cast<uint32_t>(t.shape.size()));
    for (const auto& d : t.shape) str(ir::to_string(d));
  }
  void raw(const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
  std::string out;
};

class Reader {
 public:
  Reader(const char* data, size_t size, std::string what)
      : p_(data), end_(data + size), what_(std::move(what)) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw ArtifactError("the " + what_ + " of this model file is damaged (" + why +
                        "); save the model again");
  }
  const char* take(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) fail("it ends early");
    const char* at = p_;
    p_ += n;
    return at;
  }
  uint8_t u8() { return static_cast<uint8_t>(*take(1)); }
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, take(4), 4);
    return v;
  }
  int64_t i64() {
    int64_t v;
    std::memcpy(&v, take(8), 8);
    return v;
  }
  // A count of items of at least `min_item_bytes` each: never more than what is left.
  uint32_t count(size_t min_item_bytes) {
    uint32_t n = u32();
    if (static_cast<size_t>(end_ - p_) / std::max<size_t>(min_item_bytes, 1) < n)
      fail("a count is larger than the data");
    return n;
  }
  std::string str() {
    uint32_t n = count(1);
    return std::string(take(n), n);
  }
  std::vector<std::string> strs() {
    std::vector<std::string> v(count(4));
    for (auto& s : v) s = str();
    return v;
  }
  std::vector<int> ints(int64_t bound) {
    std::vector<int> v(count(8));
    for (auto& x : v) x = index(bound);
    return v;
  }
  int index(int64_t bound) {
    int64_t x = i64();
    if (x < 0 || x >= bound) fail("an index is out of range");
    return static_cast<int>(x);
  }
  TensorType type() {
    TensorType t;
    try {
      t.dtype = dtype_from_name(str());
      uint32_t rank = count(4);
      for (uint32_t d = 0; d < rank; ++d) t.shape.push_back(ir::parse_int_expr(str()));
    } catch (const ArtifactError&) {
      throw;
    } catch (const Error& e) {
      fail(e.what());
    }
    return t;
  }
  bool done() const { return p_ == end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
  std::string what_;
};

// ---- the file ------------------------------------------------------------------------------

struct Section {
  std::string tag;
  const char* data = nullptr;
  size_t size = 0;
};

// A private mapping of a whole file (writable copy-on-write pages, never written back),
// unmapped when the last user lets go.
struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping();
};

// Maps `path` whole, its pages read in at once. ember::Error when it cannot be opened.
std::shared_ptr<Mapping> map_file(const std::string& path);

// A mapped file's format version and sections, each checked against its checksum (and the
// table against the header's). ArtifactError for a foreign, newer, truncated or damaged file.
struct Contents {
  uint32_t version = 0;
  std::map<std::string, Section> sections;
};
Contents read_sections(const Mapping& file, const std::string& path);

// A compressed record (format version 3: the "module" and "sources" sections): the size of
// the bytes, then their zlib stream. inflate() fails through `r` when the stream is damaged
// or does not give that size.
std::string deflate(std::string_view bytes);
std::string inflate(Reader r);

// Writes `sections` (tag, bytes) as one file: a temporary file beside `path`, renamed.
void write_sections(const std::string& path,
                    const std::vector<std::pair<const char*, std::string_view>>& sections);

}  // namespace ember::artifact_file
