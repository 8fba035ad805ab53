#include "artifact_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <random>

#include "ember/support/hash.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif

namespace ember::artifact_file {
namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'M', 'D', 'L'};
constexpr size_t kHeaderBytes = 64;
constexpr uint32_t kMaxSections = 64;
constexpr size_t kTableEntryBytes = 32;  // tag, offset, size, checksum

void write_atomically(const std::string& path, const std::vector<std::string_view>& parts) {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(rd()) +
                    std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    EMBER_CHECK(out, "cannot write the model file " << path << " (creating " << tmp
                                                    << " failed: " << std::strerror(errno) << ")");
    for (auto p : parts) out.write(p.data(), static_cast<std::streamsize>(p.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      EMBER_THROW("cannot write the model file " << path << " (out of disk space?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    EMBER_THROW("cannot write the model file " << path << ": " << std::strerror(err));
  }
}

// The file's bytes as parts to write in order: header, section table, then each section,
// each 64-byte aligned. Each table entry holds its section's checksum; the header holds the
// table's, so damage anywhere is found by checking each byte once.
// `header` and `table` receive those two; `parts` views them and the sections.
void layout(const std::vector<std::pair<const char*, std::string_view>>& sections,
            Writer* header_out, Writer* table_out, std::vector<std::string_view>* parts_out) {
  static const std::string kZeros(kAlign, '\0');
  const size_t table_bytes = sections.size() * kTableEntryBytes;
  size_t offset = align_up(kHeaderBytes + table_bytes);
  Writer& table = *table_out;
  Writer& header = *header_out;
  for (const auto& [tag, data] : sections) {
    char t[8] = {0};
    std::memcpy(t, tag, std::strlen(tag));
    table.raw(t, 8);
    table.i64(static_cast<int64_t>(offset));
    table.i64(static_cast<int64_t>(data.size()));
    table.i64(static_cast<int64_t>(checksum64(data.data(), data.size())));
    offset = align_up(offset + data.size());
  }
  header.raw(kMagic, 8);
  header.u32(kArtifactFormatVersion);
  header.u32(static_cast<uint32_t>(sections.size()));
  header.i64(static_cast<int64_t>(offset));
  header.i64(static_cast<int64_t>(checksum64(table.out.data(), table.out.size())));
  header.out.resize(kHeaderBytes, '\0');
  std::vector<std::string_view>& parts = *parts_out;
  parts = {header.out, table.out};
  size_t at = kHeaderBytes + table_bytes;
  auto pad = [&](size_t to) {
    parts.push_back(std::string_view(kZeros).substr(0, to - at));
    at = to;
  };
  pad(align_up(at));
  for (const auto& [tag, data] : sections) {
    parts.push_back(data);
    at += data.size();
    pad(align_up(at));
  }
}

}  // namespace

// MADV_POPULATE_READ (Linux 5.14), for C libraries whose headers predate it.
#ifdef MADV_POPULATE_READ
constexpr int kMadvPopulateRead = MADV_POPULATE_READ;
#else
constexpr int kMadvPopulateRead = 22;
#endif

Mapping::~Mapping() {
  if (addr != nullptr) munmap(addr, size);
}

std::shared_ptr<Mapping> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EMBER_CHECK(fd >= 0, "cannot open the model file " << path << ": " << std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    EMBER_THROW("cannot read the model file " << path << ": it is not a regular file");
  }
  auto m = std::make_shared<Mapping>();
  m->size = static_cast<size_t>(st.st_size);
  if (m->size > 0) {
    // Private and writable: a kernel never writes a constant, and if one did it would write
    // its own copy of the page, never the file. The pages are the page cache's, mapped read
    // only until written (MADV_POPULATE_READ maps them now, so the checksums and the first
    // run take no faults). MAP_POPULATE would copy every page of a writable private mapping
    // (it populates for writing): 35-40 ms for ResNet-50's 98 MB, and a private copy of the
    // weights in every process. A kernel without MADV_POPULATE_READ (before Linux 5.14)
    // maps them on first touch instead.
    void* a = mmap(nullptr, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (a != MAP_FAILED) {
      m->addr = a;
      madvise(a, m->size, kMadvPopulateRead);  // a hint: failing changes nothing but when
    }
  }
  int err = errno;
  ::close(fd);
  EMBER_CHECK(m->size == 0 || m->addr != nullptr,
              "cannot map the model file " << path << ": " << std::strerror(err));
  return m;
}

Contents read_sections(const Mapping& file, const std::string& path) {
  const char* base = static_cast<const char*>(file.addr);
  const size_t size = file.size;
  auto bad = [&](const std::string& why) { throw ArtifactError(path + ": " + why); };
  if (size < kHeaderBytes || std::memcmp(base, kMagic, 8) != 0) {
    bad("not an ember model file (it does not start with ember's signature); ember.load reads "
        "files written by CompiledModel.save");
  }
  Reader header(base + 8, kHeaderBytes - 8, "header");
  uint32_t version = header.u32();
  uint32_t num_sections = header.u32();
  int64_t recorded_size = header.i64();
  uint64_t checksum = static_cast<uint64_t>(header.i64());
  if (version == 0 || version > static_cast<uint32_t>(kArtifactFormatVersion)) {
    bad("written in model file format version " + std::to_string(version) +
        ", but this ember (" EMBER_VERSION ") reads versions 1 to " +
        std::to_string(kArtifactFormatVersion) +
        (version > 0 ? ": it comes from a newer ember; upgrade ember to load it" : ""));
  }
  if (recorded_size != static_cast<int64_t>(size)) {
    bad("the file is " + std::to_string(size) + " bytes but was written with " +
        std::to_string(recorded_size) +
        (static_cast<int64_t>(size) < recorded_size ? ": it is truncated (an incomplete copy?)"
                                                    : ": it has bytes added"));
  }
  if (num_sections > kMaxSections || num_sections * kTableEntryBytes > size - kHeaderBytes) {
    bad("the file is damaged: its section table does not fit");
  }
  const char* table_data = base + kHeaderBytes;
  if (checksum64(table_data, num_sections * kTableEntryBytes) != checksum) {
    bad("the file is damaged: the checksum of its section table does not match");
  }
  Reader table(table_data, num_sections * kTableEntryBytes, "section table");
  Contents c;
  c.version = version;
  for (uint32_t i = 0; i < num_sections; ++i) {
    const char* t = table.take(8);
    std::string tag(t, strnlen(t, 8));
    int64_t off = table.i64(), len = table.i64();
    uint64_t sum = static_cast<uint64_t>(table.i64());
    if (off < 0 || len < 0 || static_cast<uint64_t>(off) > size ||
        static_cast<uint64_t>(len) > size - static_cast<uint64_t>(off)) {
      table.fail("a section lies outside the file");
    }
    if (checksum64(base + off, static_cast<size_t>(len)) != sum) {
      bad("the file is damaged: the checksum of its " + tag + " section does not match");
    }
    c.sections[tag] = Section{tag, base + off, static_cast<size_t>(len)};
  }
  return c;
}

std::string deflate(std::string_view bytes) {
  Writer w;
  w.i64(static_cast<int64_t>(bytes.size()));
  uLongf n = compressBound(static_cast<uLong>(bytes.size()));
  std::string z(n, '\0');
  int rc = compress2(reinterpret_cast<Bytef*>(z.data()), &n,
                     reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uLong>(bytes.size()),
                     Z_BEST_COMPRESSION);
  EMBER_CHECK(rc == Z_OK, "cannot save the model: zlib failed (" << rc << ")");
  w.raw(z.data(), n);
  return std::move(w.out);
}

std::string inflate(Reader r) {
  const int64_t size = r.i64();
  const size_t left = r.left();
  // zlib expands by at most 1032:1; a larger size is damage, not a reason to allocate.
  if (size < 0 || static_cast<uint64_t>(size) > 1032 * static_cast<uint64_t>(left) + 64)
    r.fail("a compressed record's size is out of range");
  std::string out(static_cast<size_t>(size), '\0');
  uLongf n = static_cast<uLongf>(size);
  const char* z = r.take(left);
  int rc = uncompress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(z),
                      static_cast<uLong>(left));
  if (rc != Z_OK || n != static_cast<uLongf>(size)) r.fail("its compressed bytes do not inflate");
  return out;
}

void write_sections(const std::string& path,
                    const std::vector<std::pair<const char*, std::string_view>>& sections) {
  Writer header, table;
  std::vector<std::string_view> parts;
  layout(sections, &header, &table, &parts);
  write_atomically(path, parts);
}

}  // namespace ember::artifact_file

namespace ember::detail {

using namespace artifact_file;  // NOLINT: the format's constants

std::string reseal(std::string bytes) {
  if (bytes.size() < kHeaderBytes) return bytes;
  uint32_t n;
  std::memcpy(&n, bytes.data() + 12, 4);
  if (n > kMaxSections || kHeaderBytes + n * kTableEntryBytes > bytes.size()) return bytes;
  for (uint32_t i = 0; i < n; ++i) {
    char* e = bytes.data() + kHeaderBytes + i * kTableEntryBytes;
    uint64_t off, len;
    std::memcpy(&off, e + 8, 8);
    std::memcpy(&len, e + 16, 8);
    if (off > bytes.size() || len > bytes.size() - off) continue;
    uint64_t sum = checksum64(bytes.data() + off, len);
    std::memcpy(e + 24, &sum, 8);
  }
  uint64_t sum = checksum64(bytes.data() + kHeaderBytes, n * kTableEntryBytes);
  std::memcpy(bytes.data() + 24, &sum, 8);
  return bytes;
}

}  // namespace ember::detail
