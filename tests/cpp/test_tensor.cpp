// Tests for dtypes, devices, tensors (creation, conversion, printing) and operator attributes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/ir/dtype.h"
#include "ember/ops/attrs.h"
#include "ember/support/error.h"
#include "ember/tensor/tensor.h"
#include "error_text.h"

namespace ember {
namespace {

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(element_as_double(t, i));
  return out;
}

std::vector<double> iota(int64_t n, double step = 1.0) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i) * step;
  return v;
}

// ---- dtypes and devices -------------------------------------------------------------------------

TEST(DTypeTest, NamesRoundTrip) {
  for (DType t : {DType::float32, DType::float16, DType::bfloat16, DType::float64, DType::int8,
                  DType::int16, DType::int32, DType::int64, DType::uint8, DType::boolean}) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
  }
  EXPECT_EQ(dtype_name(DType::boolean), "bool");
  EXPECT_EQ(dtype_name(DType::bfloat16), "bfloat16");
}

TEST(DTypeTest, AliasesAndTorchNames) {
  EXPECT_EQ(dtype_from_name("float"), DType::float32);
  EXPECT_EQ(dtype_from_name("half"), DType::float16);
  EXPECT_EQ(dtype_from_name("double"), DType::float64);
  EXPECT_EQ(dtype_from_name("int"), DType::int32);
  EXPECT_EQ(dtype_from_name("long"), DType::int64);
  EXPECT_EQ(dtype_from_name("torch.float32"), DType::float32);
  EXPECT_EQ(dtype_from_name("torch.bfloat16"), DType::bfloat16);
  EXPECT_EQ(dtype_from_name("torch.bool"), DType::boolean);
  EXPECT_EQ(dtype_from_name("torch.long"), DType::int64);
}

TEST(DTypeTest, UnknownNameListsValidOnes) {
  EXPECT_EQ(error_of([] { dtype_from_name("float33"); }),
            "unknown dtype 'float33'; valid dtypes are float32, float16, bfloat16, float64, "
            "int8, int16, int32, int64, uint8, bool (also: float, half, double, int, long, "
            "short, bfloat; a \"torch.\" prefix is accepted)");
}

TEST(DTypeTest, SizesKindsAndCTypes) {
  EXPECT_EQ(dtype_size(DType::float32), 4);
  EXPECT_EQ(dtype_size(DType::bfloat16), 2);
  EXPECT_EQ(dtype_size(DType::float64), 8);
  EXPECT_EQ(dtype_size(DType::boolean), 1);
  EXPECT_TRUE(is_float(DType::float16));
  EXPECT_FALSE(is_float(DType::int32));
  EXPECT_TRUE(is_integer(DType::uint8));
  EXPECT_FALSE(is_integer(DType::boolean));
  EXPECT_EQ(dtype_ctype(DType::float32), "float");
  EXPECT_EQ(dtype_ctype(DType::float16), "ember_rt::f16");
  EXPECT_EQ(dtype_ctype(DType::bfloat16), "ember_rt::bf16");
  EXPECT_EQ(dtype_ctype(DType::int64), "int64_t");
  EXPECT_EQ(dtype_ctype(DType::boolean), "bool");
  EXPECT_EQ(dtype_compute_ctype(DType::bfloat16), "float");
  EXPECT_EQ(dtype_compute_ctype(DType::float64), "double");
  EXPECT_EQ(dtype_compute_ctype(DType::int8), "int8_t");
}

TEST(DeviceTest, Parse) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), (Device{DeviceKind::cuda, 0}));
  EXPECT_EQ(Device::parse("cuda:3"), (Device{DeviceKind::cuda, 3}));
  EXPECT_EQ(Device::parse("cuda:3").str(), "cuda:3");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  const std::string expected =
      "unknown device 'gpu'; valid devices are \"cpu\", \"cuda\" and \"cuda:N\" (N a device "
      "index, e.g. \"cuda:1\")";
  EXPECT_EQ(error_of([] { Device::parse("gpu"); }), expected);
  EXPECT_TRUE(Contains(error_of([] { Device::parse("cuda:"); }), "unknown device 'cuda:'"));
  EXPECT_TRUE(Contains(error_of([] { Device::parse("cuda:x"); }), "unknown device"));
}

// ---- shapes and types ---------------------------------------------------------------------------

TEST(ShapeTest, Helpers) {
  Shape s = {2, ir::var("n"), 4};
  EXPECT_FALSE(shape_is_concrete(s));
  EXPECT_EQ(shape_str(s), "[2, n, 4]");
  EXPECT_EQ(ir::eval_int(shape_numel_expr(s), {{"n", 3}}), 24);
  EXPECT_TRUE(shape_equal(s, Shape{2, ir::var("n"), 4}));
  EXPECT_FALSE(shape_equal(s, Shape{2, ir::var("m"), 4}));
  EXPECT_THROW(shape_numel(s), InternalError);
  Shape c = concrete_shape({2, 3});
  EXPECT_TRUE(shape_is_concrete(c));
  EXPECT_EQ(shape_numel(c), 6);
  EXPECT_EQ(shape_values(c), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ((TensorType{DType::float32, {2, 3}, Device::cpu()}.str()), "float32[2, 3]");
  EXPECT_EQ((TensorType{DType::bfloat16, {ir::var("n"), 768}, Device::cpu()}.str()),
            "bfloat16[n, 768]");
}

// ---- creation -----------------------------------------------------------------------------------

TEST(TensorTest, EmptyIsAlignedAndSized) {
  Tensor t = Tensor::empty({3, 5}, DType::float16);
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.nbytes(), 30);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  EXPECT_FALSE(t.is_symbolic());
  Tensor e = Tensor::empty({0, 7}, DType::float32);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.nbytes(), 0);
  EXPECT_NE(e.data(), nullptr);
}

TEST(TensorTest, CreationErrors) {
  EXPECT_EQ(error_of([] { Tensor::empty({ir::var("n"), 3}, DType::float32); }),
            "empty: shape [n, 3] has symbolic dimensions; a tensor with memory needs constant "
            "ones (a symbolic tensor is made with ember.symbol)");
  EXPECT_EQ(error_of([] { from_values({1, 2, 3}, {2, 2}, DType::float32); }),
            "from_values: 3 values given for shape [2, 2], which holds 4");
  EXPECT_EQ(error_of([] { randn({2}, DType::int32); }),
            "randn: dtype int32 is not a floating-point type; use float32, float16, bfloat16 "
            "or float64");
  EXPECT_EQ(error_of([] { zeros({2}, DType::float32, Device::parse("cuda")); }),
            "cannot allocate memory on cuda:0: ember runs on the CPU today; use device 'cpu'");
}

TEST(TensorTest, ZerosOnesFull) {
  EXPECT_EQ(values_of(zeros({2, 2}, DType::bfloat16)), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(values_of(ones({3}, DType::int64)), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(values_of(ones({2}, DType::boolean)), (std::vector<double>{1, 1}));
  EXPECT_EQ(values_of(full({2}, 2.5, DType::float16)), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(values_of(full({2}, -7.9, DType::int8)), (std::vector<double>{-7, -7}));
  // As torch.full: a value the dtype cannot hold is an error, not a saturated fill.
  EXPECT_TRUE(Contains(error_of([] { full({1}, 300, DType::uint8); }),
                       "the value 300 cannot be converted to uint8 without overflow"));
  EXPECT_TRUE(Contains(error_of([] { full({1}, std::nan(""), DType::int32); }),
                       "cannot be converted to int32"));
  EXPECT_EQ(zeros({}, DType::float32).numel(), 1);
}

TEST(TensorTest, FromValuesAndStorage) {
  Tensor t = from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::int32);
  EXPECT_EQ(t.data_as<int32_t>()[5], 6);
  Tensor v = Tensor::from_storage(t.storage(), {3, 2}, DType::int32);
  EXPECT_EQ(v.data(), t.data());
  auto too_small = [&] { Tensor::from_storage(t.storage(), {4, 2}, DType::int32); };
  EXPECT_TRUE(Contains(error_of(too_small), "needs 32 bytes but the storage holds 24"));
  Tensor named = t.with_name("x");
  EXPECT_EQ(named.name(), "x");
  EXPECT_EQ(named.data(), t.data());
  EXPECT_EQ(t.name(), "");
  EXPECT_TRUE(Contains(error_of([&] { element_as_double(t, 6); }), "index 6 is out of range"));
}

TEST(TensorTest, BorrowedStorageKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1.f, 2.f});
  std::weak_ptr<std::vector<float>> watch = owner;
  {
    auto s = Storage::borrow(owner->data(), 8, Device::cpu(), owner);
    owner.reset();
    EXPECT_FALSE(watch.expired());
    Tensor t = Tensor::from_storage(s, {2}, DType::float32);
    EXPECT_EQ(values_of(t), (std::vector<double>{1, 2}));
  }
  EXPECT_TRUE(watch.expired());
}

// The "THPeligible" line of /proc/self/smaps for the mapping that holds p (-1: none found).
int thp_eligible(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' '))
      inside = a >= lo && a < hi;
    else if (inside && line.rfind("THPeligible:", 0) == 0)
      return std::atoi(line.c_str() + 12);
  }
  return -1;
}

std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s;
}

TEST(TensorTest, LongLivedLargeBuffersAskForHugePages) {
  constexpr size_t kBig = size_t{5} << 20, kHuge = size_t{2} << 20;
  auto s = Storage::allocate(kBig, Device::cpu(), /*long_lived=*/true);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % kHuge, 0u);
  std::memset(s->data(), 1, kBig);  // all of it is there
  EXPECT_EQ(static_cast<unsigned char*>(s->data())[kBig - 1], 1);
  const std::string mode = thp_mode();
  if (mode.find("[madvise]") != std::string::npos) {
    EXPECT_EQ(thp_eligible(s->data()), 1);
    ::setenv("EMBER_HUGE_PAGES", "0", 1);
    auto plain = Storage::allocate(kBig, Device::cpu(), /*long_lived=*/true);
    ::unsetenv("EMBER_HUGE_PAGES");
    std::memset(plain->data(), 2, kBig);
    EXPECT_EQ(thp_eligible(plain->data()), 0);
    // Per-run memory (an output) gets no hint.
    auto output = Storage::allocate(kBig, Device::cpu());
    std::memset(output->data(), 3, kBig);
    EXPECT_EQ(thp_eligible(output->data()), 0);
  }
  // A small buffer keeps the usual alignment and no hint.
  auto small = Storage::allocate(4096, Device::cpu());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->data()) % 64, 0u);
}

TEST(TensorTest, HalfConversionsRoundToNearestEven) {
  // float16: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even one.
  Tensor h = from_values({1.0 + std::ldexp(1, -11), 1.0 + 3 * std::ldexp(1, -11), 1.0 / 3.0, 65504,
                          65520, 1e-8, 6e-8, -2.5},
                         {8}, DType::float16);
  auto hv = values_of(h);
  EXPECT_EQ(hv[0], 1.0);
  EXPECT_EQ(hv[1], 1.0 + std::ldexp(1, -9));
  EXPECT_EQ(hv[2], 0.333251953125);
  EXPECT_EQ(hv[3], 65504);
  EXPECT_TRUE(std::isinf(hv[4]));
  EXPECT_EQ(hv[5], 0.0);
  EXPECT_EQ(hv[6], std::ldexp(1, -24));
  EXPECT_EQ(hv[7], -2.5);
  // bfloat16 keeps 8 significant bits.
  Tensor b = from_values({1.0 + std::ldexp(1, -8), 1.0 + 3 * std::ldexp(1, -8), 3.0e38, -1.1}, {4},
                         DType::bfloat16);
  auto bv = values_of(b);
  EXPECT_EQ(bv[0], 1.0);
  EXPECT_EQ(bv[1], 1.0 + std::ldexp(1, -6));
  EXPECT_NEAR(bv[2], 3.0e38, 3.0e38 / 128);
  EXPECT_EQ(bv[3], -1.1015625);
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(values_of(from_values({nan}, {1}, DType::float16))[0]));
  EXPECT_TRUE(std::isnan(values_of(from_values({nan}, {1}, DType::bfloat16))[0]));
}

TEST(TensorTest, RandnStatistics) {
  const int64_t n = 200000;
  Tensor t = randn({n}, DType::float32, Device::cpu(), 42);
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.data_as<float>()[i];
    sum += v;
    sq += v * v;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  // Same seed, same values; another seed, other values.
  EXPECT_EQ(values_of(randn({16}, DType::float32, Device::cpu(), 7)),
            values_of(randn({16}, DType::float32, Device::cpu(), 7)));
  EXPECT_NE(values_of(randn({16}, DType::float32, Device::cpu(), 7)),
            values_of(randn({16}, DType::float32, Device::cpu(), 8)));
  // The global generator moves on between calls.
  EXPECT_NE(values_of(randn({16})), values_of(randn({16})));
  // Reduced precision: the same draws, rounded.
  auto f32 = values_of(randn({64}, DType::float32, Device::cpu(), 3));
  auto b16 = values_of(randn({64}, DType::bfloat16, Device::cpu(), 3));
  for (size_t i = 0; i < f32.size(); ++i) EXPECT_NEAR(b16[i], f32[i], std::fabs(f32[i]) / 128);
}

// ---- printing -----------------------------------------------------------------------------------

TEST(PrintTest, Float2d) {
  EXPECT_EQ(from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::float32).str(),
            "Tensor(shape=(2, 3), dtype='float32', device='cpu')\n"
            "[[1. 2. 3.]\n"
            " [4. 5. 6.]]");
  EXPECT_EQ(from_values({1.5, -2.25, 3, 4, 5, 6}, {2, 3}, DType::float64).str(),
            "Tensor(shape=(2, 3), dtype='float64', device='cpu')\n"
            "[[ 1.50 -2.25  3.00]\n"
            " [ 4.00  5.00  6.00]]");
}

TEST(PrintTest, ScalarBoolAndBf16) {
  EXPECT_EQ(from_values({1.5}, {}, DType::float32).str(),
            "Tensor(shape=(), dtype='float32', device='cpu')\n1.5");
  EXPECT_EQ(from_values({7}, {}, DType::int64).str(),
            "Tensor(shape=(), dtype='int64', device='cpu')\n7");
  EXPECT_EQ(from_values({1, 0, 1}, {3}, DType::boolean).str(),
            "Tensor(shape=(3,), dtype='bool', device='cpu')\n[ True False  True]");
  EXPECT_EQ(from_values({1.1, 2.2, 3.3, -0.5}, {2, 2}, DType::bfloat16).str(),
            "Tensor(shape=(2, 2), dtype='bfloat16', device='cpu')\n"
            "[[ 1.1016  2.2031]\n"
            " [ 3.2969 -0.5000]]");
}

TEST(PrintTest, IntegersIn3d) {
  EXPECT_EQ(from_values(iota(12), {2, 2, 3}, DType::int32).str(),
            "Tensor(shape=(2, 2, 3), dtype='int32', device='cpu')\n"
            "[[[ 0  1  2]\n"
            "  [ 3  4  5]]\n"
            "\n"
            " [[ 6  7  8]\n"
            "  [ 9 10 11]]]");
}

TEST(PrintTest, ScientificEmptyAndWrapped) {
  EXPECT_EQ(from_values({1e-5, 1}, {2}, DType::float64).str(),
            "Tensor(shape=(2,), dtype='float64', device='cpu')\n[1.0000e-05 1.0000e+00]");
  EXPECT_EQ(zeros({0, 3}).str(), "Tensor(shape=(0, 3), dtype='float32', device='cpu')\n[]");
  EXPECT_EQ(from_values(iota(30, 1.25), {30}, DType::float32).str(),
            "Tensor(shape=(30,), dtype='float32', device='cpu')\n"
            "[ 0.00  1.25  2.50  3.75  5.00  6.25  7.50  8.75 10.00 11.25 12.50 13.75\n"
            " 15.00 16.25 17.50 18.75 20.00 21.25 22.50 23.75 25.00 26.25 27.50 28.75\n"
            " 30.00 31.25 32.50 33.75 35.00 36.25]");
}

TEST(PrintTest, SummarisesLargeTensors) {
  EXPECT_EQ(from_values(iota(2000), {40, 50}, DType::int64).str(),
            "Tensor(shape=(40, 50), dtype='int64', device='cpu')\n"
            "[[   0    1    2 ...   47   48   49]\n"
            " [  50   51   52 ...   97   98   99]\n"
            " [ 100  101  102 ...  147  148  149]\n"
            " ...\n"
            " [1850 1851 1852 ... 1897 1898 1899]\n"
            " [1900 1901 1902 ... 1947 1948 1949]\n"
            " [1950 1951 1952 ... 1997 1998 1999]]");
  // 1000 elements exactly are all shown.
  std::string all = from_values(iota(1000), {1000}, DType::int32).str();
  EXPECT_EQ(all.find("..."), std::string::npos);
  EXPECT_TRUE(Contains(all, " 999]"));
}

TEST(PrintTest, SymbolicTensors) {
  EXPECT_EQ(Tensor::symbol({ir::var("n"), 4}, DType::float16).str(),
            "Tensor(shape=(n, 4), dtype='float16', device='cpu')");
  OpDef def;
  def.name = "matmul";
  def.title = "Matmul";
  auto trace = std::make_shared<TraceNode>();
  trace->op = &def;
  TensorType type{DType::float32, {ir::var("n"), 8}, Device::cpu()};
  trace->outputs = {type};
  EXPECT_EQ(Tensor::traced(type, trace, 0, def.title).str(),
            "Tensor(shape=(n, 8), dtype='float32', device='cpu')\nfrom Matmul");
}

// ---- operator attributes ------------------------------------------------------------------------

TEST(AttrsTest, Fields) {
  EXPECT_EQ(attr_fields(ReduceAttrs{{0, 1}, false}),
            (AttrFields{{"dims", "[0, 1]"}, {"keepdim", "False"}}));
  EXPECT_EQ(attr_fields(AxisAttrs{-1}), (AttrFields{{"axis", "-1"}}));
  EXPECT_EQ(attr_fields(ShapeAttrs{{2, ir::var("n")}}), (AttrFields{{"shape", "[2, n]"}}));
  EXPECT_EQ(attr_fields(DimsAttrs{{1, 0}}), (AttrFields{{"dims", "[1, 0]"}}));
  EXPECT_EQ(attr_fields(SliceAttrs{{1}, {0}, {4}, {2}}),
            (AttrFields{{"axes", "[1]"}, {"starts", "[0]"}, {"stops", "[4]"}, {"steps", "[2]"}}));
  EXPECT_EQ(attr_fields(CastAttrs{DType::bfloat16}), (AttrFields{{"dtype", "bfloat16"}}));
  EXPECT_TRUE(attr_fields(NoAttrs{}).empty());
}

TEST(AttrsTest, FusedFieldsNameTheSubgraph) {
  OpDef matmul, add;
  matmul.title = "Matmul";
  add.title = "Add";
  auto g = std::make_shared<FlowGraph>();
  g->nodes.push_back(Node{&matmul, NoAttrs{}, {0, 1}, {2}});
  g->nodes.push_back(Node{&add, NoAttrs{}, {2, 3}, {4}});
  EXPECT_EQ(attr_fields(FusedAttrs{g, 0}),
            (AttrFields{{"fused", "[Matmul, Add]"}, {"anchor", "Matmul"}}));
  EXPECT_EQ(attr_fields(FusedAttrs{g, -1}), (AttrFields{{"fused", "[Matmul, Add]"}}));
}

TEST(AttrsTest, ShapeAttrsCompareStructurally) {
  EXPECT_EQ((ShapeAttrs{{2, ir::var("n")}}), (ShapeAttrs{{2, ir::var("n")}}));
  EXPECT_FALSE((ShapeAttrs{{2, ir::var("n")}}) == (ShapeAttrs{{2, ir::var("m")}}));
  EXPECT_FALSE((ShapeAttrs{{2}}) == (ShapeAttrs{{2, 1}}));
  EXPECT_EQ(OpAttrs(ReduceAttrs{{1}, true}), OpAttrs(ReduceAttrs{{1}, true}));
  EXPECT_NE(OpAttrs(ReduceAttrs{{1}, true}), OpAttrs(AxisAttrs{1}));
}

}  // namespace
}  // namespace ember
