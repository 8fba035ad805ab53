// Saved models (ember/runtime/artifact.h): a compiled graph saved and loaded gives the same
// bits, with its names, types and symbols; a loaded model saves to the same bytes; files
// that are not whole, not ember's or from a newer format are ArtifactErrors; kernels this
// CPU may not run are rebuilt from the saved sources when the compiler is linked, and
// refused with a reason when it is not.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/ops/ops.h"
#include "ember/runtime/artifact.h"
#include "ember/support/cpu.h"
#include "ember/support/hash.h"
#include "error_text.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ember-artifact-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// y = relu(x @ w + b) with a symbolic batch n; also returns sum over rows.
std::shared_ptr<CompiledModel> small_model() {
  std::vector<double> w, b;
  for (int i = 0; i < 3 * 5; ++i) w.push_back(0.25 * i - 1.5);
  for (int i = 0; i < 5; ++i) b.push_back(0.5 - 0.125 * i);
  Tensor x = Tensor::symbol({ir::var("n"), 3}, DType::float32, Device::cpu(), "x");
  Tensor y = ops::relu(ops::add(ops::matmul(x, from_values(w, {3, 5}, DType::float32)),
                                from_values(b, {5}, DType::float32)));
  Tensor s = ops::sum(y, {0}, false);
  auto graph = optimize(trace_from({y, s}, {x})).build();
  return std::make_shared<CompiledModel>(graph, std::vector<std::string>{"x"},
                                         std::vector<std::string>{"y", "total"}, "front end");
}

Tensor input(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n * 3; ++i) v.push_back(0.1 * static_cast<double>(i % 7) - 0.2);
  return from_values(v, {n, 3}, DType::float32);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && shape_equal(a.shape(), b.shape()) &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())) == 0;
}

std::string load_error(const std::string& path) {
  return error_of<ArtifactError>([&] { load(path); });
}

TEST(Artifact, SaveAndLoadGiveTheSameBits) {
  auto model = small_model();
  const std::string path = temp_path("m.ember");
  model->save(path);
  EXPECT_EQ(model->info().file_bytes, static_cast<int64_t>(fs::file_size(path)));
  auto loaded = load(path);
  ASSERT_EQ(loaded->inputs().size(), 1u);
  EXPECT_EQ(loaded->inputs()[0].name, "x");
  EXPECT_EQ(loaded->inputs()[0].type.str(), "float32[n, 3]");
  EXPECT_EQ(loaded->outputs()[1].name, "total");
  EXPECT_EQ(loaded->metadata(), "front end");
  EXPECT_EQ(loaded->info().isa, isa_name(isa_from_env()));
  EXPECT_TRUE(loaded->info().rebuilt.empty());
  // The bias, and the 3 x 5 weight as the GEMM's prepared panels (zero-padded to whole panels).
  EXPECT_GE(loaded->info().prepared_weight_bytes, 15 * 4);
  EXPECT_EQ(loaded->info().weight_bytes, 5 * 4 + loaded->info().prepared_weight_bytes);
  for (int64_t n : {1, 4, 9}) {
    auto a = model->run({input(n)});
    auto b = loaded->run({input(n)});
    ASSERT_EQ(a.size(), 2u);
    EXPECT_TRUE(same_bits(a[0], b[0]) && same_bits(a[1], b[1])) << "n = " << n;
  }
  // A loaded model saves to the same bytes.
  const std::string again = temp_path("again.ember");
  loaded->save(again);
  EXPECT_EQ(read_all(path), read_all(again));
}

TEST(Artifact, FilesThatAreNotWholeOrNotOurs) {
  auto model = small_model();
  const std::string path = temp_path("good.ember");
  model->save(path);
  const std::string bytes = read_all(path);
  const std::string bad = temp_path("bad.ember");

  write_all(bad, bytes.substr(0, bytes.size() - 100));
  EXPECT_NE(load_error(bad).find("truncated"), std::string::npos) << load_error(bad);
  write_all(bad, "#!/bin/sh\necho hello\n");
  EXPECT_NE(load_error(bad).find("not an ember model file"), std::string::npos);
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 1;
  write_all(bad, flipped);
  EXPECT_NE(load_error(bad).find("checksum"), std::string::npos);
  std::string newer = bytes;
  uint32_t v = kArtifactFormatVersion + 1;
  std::memcpy(newer.data() + 8, &v, 4);
  write_all(bad, newer);
  EXPECT_NE(load_error(bad).find("newer ember"), std::string::npos) << load_error(bad);
  EXPECT_THROW(load(temp_path("missing.ember")), Error);
}

// The tag, offset and size of each section, read from the section table.
struct SectionSpan {
  std::string tag;
  uint64_t offset = 0, size = 0;
};
std::vector<SectionSpan> sections_of(const std::string& bytes) {
  uint32_t n = 0;
  std::memcpy(&n, bytes.data() + 12, 4);
  std::vector<SectionSpan> spans;
  for (uint32_t i = 0; i < n; ++i) {
    const char* e = bytes.data() + 64 + 32 * i;
    SectionSpan s;
    s.tag = std::string(e, strnlen(e, 8));
    std::memcpy(&s.offset, e + 8, 8);
    std::memcpy(&s.size, e + 16, 8);
    spans.push_back(s);
  }
  return spans;
}

TEST(Artifact, DamageAnywhereFailsAChecksum) {
  auto model = small_model();
  const std::string path = temp_path("sums.ember");
  model->save(path);
  const std::string bytes = read_all(path);
  const std::string bad = temp_path("sums-bad.ember");
  // One byte in the section table (which moves a section) and one in each section.
  std::vector<size_t> positions = {64 + 9, 64 + 32 * 3 + 16};
  for (const auto& s : sections_of(bytes)) positions.push_back(s.offset + s.size / 2);
  for (size_t pos : positions) {
    std::string d = bytes;
    d[pos] = static_cast<char>(d[pos] ^ 0x10);
    write_all(bad, d);
    EXPECT_NE(load_error(bad).find("checksum"), std::string::npos)
        << pos << ": " << load_error(bad);
  }
}

TEST(Artifact, DamagedRecordsBehindValidChecksumsAreAnError) {
  // Every byte of the records (metadata, plan, sources, costs) changed, with the checksums
  // recomputed as a buggy writer would leave them: a clean error or a model that still
  // runs, never a crash. (The machine code itself is read by the dynamic loader: a file is
  // trusted as a shared library is, and checksums guard it against accidents only.)
  auto model = small_model();
  const std::string path = temp_path("fuzz.ember");
  model->save(path);
  const std::string bytes = read_all(path);
  const std::string bad = temp_path("fuzz-bad.ember");
  int errors = 0, tried = 0;
  for (const auto& s : sections_of(bytes)) {
    if (s.tag != "meta" && s.tag != "plan" && s.tag != "sources" && s.tag != "costs") continue;
    const uint64_t step = s.tag == "sources" ? 97 : 1;
    for (uint64_t pos = s.offset; pos < s.offset + s.size; pos += step) {
      for (uint8_t flip : {0x01, 0x80, 0xFF}) {
        std::string d = bytes;
        d[pos] = static_cast<char>(d[pos] ^ flip);
        write_all(bad, detail::reseal(d));
        ++tried;
        try {
          auto m = load(bad);
          m->run({input(2)});
        } catch (const Error&) {
          ++errors;
        }
      }
    }
  }
  EXPECT_GT(errors, tried / 4) << errors << " of " << tried;
}

// Sets EMBER_ISA for one scope.
struct IsaOverride {
  explicit IsaOverride(const char* isa) {
    const char* old = std::getenv("EMBER_ISA");
    had = old != nullptr;
    if (had) previous = old;
    setenv("EMBER_ISA", isa, 1);
  }
  ~IsaOverride() {
    if (had) {
      setenv("EMBER_ISA", previous.c_str(), 1);
    } else {
      unsetenv("EMBER_ISA");
    }
  }
  bool had = false;
  std::string previous;
};

TEST(Artifact, KernelsForAWiderIsaAreRebuiltOrRefused) {
  if (detect_isa() == Isa::Scalar) GTEST_SKIP() << "this CPU has no SIMD ISA to save with";
  auto model = small_model();
  const std::string path = temp_path("wide.ember");
  model->save(path);
  auto expected = model->run({input(3)});
  IsaOverride scalar("scalar");
  auto rebuilt = load(path);  // the compiler is linked into this test
  EXPECT_EQ(rebuilt->info().isa, "scalar");
  EXPECT_NE(rebuilt->info().rebuilt.find("EMBER_ISA allows at most scalar"), std::string::npos)
      << rebuilt->info().rebuilt;
  auto got = rebuilt->run({input(3)});
  for (int64_t i = 0; i < got[0].numel(); ++i)
    EXPECT_NEAR(element_as_double(got[0], i), element_as_double(expected[0], i), 1e-5);

  // A program with the runtime library only has no rebuilder: a clear refusal.
  auto installed = detail::kernel_rebuilder();
  detail::set_kernel_rebuilder(nullptr);
  std::string msg = load_error(path);
  detail::set_kernel_rebuilder(installed);
  EXPECT_NE(msg.find("needs ember's compiler"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember
