#include <cctype>
#include "ember/tensor/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <sstream>
#include <string_view>

#include "ember/support/error.h"

namespace ember {
namespace {

// ---- float16 / bfloat16 conversions (round to nearest even) -------------------------------

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

uint16_t float_to_f16(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or NaN (kept quiet)
    return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (ax < 0x38800000u) {  // below 2^-14: a half subnormal (or zero), in units of 2^-24
    float scaled = bits_float(ax) * 16777216.0f;  // exact
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
  ax += 0xc8000fffu + ((ax >> 13) & 1u);
  return static_cast<uint16_t>(sign | (ax >> 13));
}

float f16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// ---- element access as double ---------------------------------------------------------------

template <class I>
I to_integer(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);  // truncates toward zero, like a C++ (and torch) cast
}

template <class T>
void put(void* base, int64_t i, T v) {
  static_cast<T*>(base)[i] = v;
}

void store_double(void* base, int64_t i, DType t, double v) {
  switch (t) {
    case DType::float32:
      return put<float>(base, i, static_cast<float>(v));
    case DType::float16:
      return put<uint16_t>(base, i, float_to_f16(static_cast<float>(v)));
    case DType::bfloat16:
      return put<uint16_t>(base, i, float_to_bf16(static_cast<float>(v)));
    case DType::float64:
      return put<double>(base, i, v);
    case DType::int8:
      return put<int8_t>(base, i, to_integer<int8_t>(v));
    case DType::int16:
      return put<int16_t>(base, i, to_integer<int16_t>(v));
    case DType::int32:
      return put<int32_t>(base, i, to_integer<int32_t>(v));
    case DType::int64:
      return put<int64_t>(base, i, to_integer<int64_t>(v));
    case DType::uint8:
      return put<uint8_t>(base, i, to_integer<uint8_t>(v));
    case DType::boolean:
      return put<bool>(base, i, v != 0.0);
  }
  throw InternalError("store_double: unknown dtype");
}

double load_double(const void* base, int64_t i, DType t) {
  switch (t) {
    case DType::float32:
      return static_cast<const float*>(base)[i];
    case DType::float16:
      return f16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::bfloat16:
      return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::float64:
      return static_cast<const double*>(base)[i];
    case DType::int8:
      return static_cast<const int8_t*>(base)[i];
    case DType::int16:
      return static_cast<const int16_t*>(base)[i];
    case DType::int32:
      return static_cast<const int32_t*>(base)[i];
    case DType::int64:
      return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case DType::uint8:
      return static_cast<const uint8_t*>(base)[i];
    case DType::boolean:
      return static_cast<const bool*>(base)[i] ? 1.0 : 0.0;
  }
  throw InternalError("load_double: unknown dtype");
}

void check_creatable(const Shape& shape, const char* what) {
  EMBER_CHECK(shape_is_concrete(shape),
              what << ": shape " << shape_str(shape)
                   << " has symbolic dimensions; a tensor with memory needs constant ones "
                   << "(a symbolic tensor is made with ember.symbol)");
  for (const auto& d : shape) {
    EMBER_CHECK(*d.as_int() >= 0,
                what << ": shape " << shape_str(shape) << " has a negative dimension");
  }
}

}  // namespace

// ---- devices ------------------------------------------------------------------------------------

Device Device::parse(const std::string& s) {
  if (s == "cpu") return Device::cpu();
  if (s == "cuda") return Device{DeviceKind::cuda, 0};
  constexpr std::string_view kCuda = "cuda:";
  std::string_view v = s;
  if (v.substr(0, kCuda.size()) == kCuda && v.size() > kCuda.size() &&
      v.size() <= kCuda.size() + 4) {
    int index = 0;
    bool digits = true;
    for (char c : v.substr(kCuda.size())) {
      if (!std::isdigit(static_cast<unsigned char>(c))) digits = false;
      index = index * 10 + (c - '0');
    }
    if (digits) return Device{DeviceKind::cuda, index};
  }
  EMBER_THROW("unknown device '" << s << "'; valid devices are \"cpu\", \"cuda\" and "
                                 << "\"cuda:N\" (N a device index, e.g. \"cuda:1\")");
}

std::string Device::str() const {
  if (kind == DeviceKind::cpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

// ---- types --------------------------------------------------------------------------------------

std::string TensorType::str() const {
  return dtype_name(dtype) + shape_str(shape) + layout.suffix(shape.size());
}

// ---- Tensor ---------------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_creatable(shape, "empty");
  auto impl = std::make_shared<TensorImpl>();
  impl->type = TensorType{dtype, shape, device};
  const size_t nbytes = shape_nbytes(shape, dtype);
  impl->storage = Storage::allocate(nbytes, device);
  return Tensor(std::move(impl));
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype) {
  EMBER_ASSERT(storage != nullptr, "Tensor::from_storage without storage");
  check_creatable(shape, "Tensor::from_storage");
  const size_t need = shape_nbytes(shape, dtype);
  EMBER_CHECK(storage->nbytes() >= need,
              "Tensor::from_storage: a " << dtype_name(dtype) << shape_str(shape)
                                         << " tensor needs " << need << " bytes but the storage "
                                         << "holds " << storage->nbytes());
  auto impl = std::make_shared<TensorImpl>();
  impl->type = TensorType{dtype, shape, storage->device()};
  impl->storage = std::move(storage);
  return Tensor(std::move(impl));
}

Tensor Tensor::symbol(const Shape& shape, DType dtype, Device device, const std::string& name) {
  for (const auto& d : shape) {
    auto v = d.as_int();
    EMBER_CHECK(!v || *v >= 0, "symbol: shape " << shape_str(shape) << " has a negative "
                                                << "dimension; give a symbol name for a size "
                                                << "known only at run time, e.g. ['n', 3]");
  }
  // Names starting with "__" belong to the loops of generated kernels.
  for (const auto& d : shape)
    for (const auto& v : ir::free_vars(d))
      EMBER_CHECK(!v.empty() && v.rfind("__", 0) != 0 &&
                      v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_") == std::string::npos &&
                      !std::isdigit(static_cast<unsigned char>(v[0])),
                  "symbol: '" << v << "' is not a valid dimension name; use letters, digits and "
                              << "'_', not starting with a digit or with '__'");
  auto impl = std::make_shared<TensorImpl>();
  impl->type = TensorType{dtype, shape, device};
  impl->name = name;
  return Tensor(std::move(impl));
}

Tensor Tensor::traced(const TensorType& type, std::shared_ptr<TraceNode> trace, int index,
                      std::string op_title) {
  auto impl = std::make_shared<TensorImpl>();
  impl->type = type;
  impl->trace = std::move(trace);
  impl->trace_index = index;
  impl->op_title = std::move(op_title);
  return Tensor(std::move(impl));
}

int64_t Tensor::numel() const { return shape_numel(shape()); }

int64_t Tensor::nbytes() const { return numel() * dtype_size(dtype()); }

void* Tensor::data() const { return impl_->storage ? impl_->storage->data() : nullptr; }

Tensor Tensor::with_name(const std::string& name) const {
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->name = name;
  return Tensor(std::move(impl));
}

// ---- creation ------------------------------------------------------------------------------

// Whether `v` truncated toward zero fits integer dtype `t` (NaN and inf never do).
bool fits_integer(double v, DType t) {
  double lo = 0, hi = 0;  // hi is exclusive: a power of two, exact as a double
  switch (t) {
    case DType::int8: lo = -128.0, hi = 128.0; break;
    case DType::int16: lo = -32768.0, hi = 32768.0; break;
    case DType::int32: lo = -2147483648.0, hi = 2147483648.0; break;
    case DType::int64: lo = -9223372036854775808.0, hi = 9223372036854775808.0; break;
    case DType::uint8: lo = 0.0, hi = 256.0; break;
    default: return true;
  }
  if (!std::isfinite(v)) return false;
  const double tv = std::trunc(v);
  return tv >= lo && tv < hi;
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  check_creatable(shape, "full");
  // As torch.full: a value the dtype cannot hold is an error, not a saturated or zeroed fill.
  EMBER_CHECK(fits_integer(value, dtype), "full: the value " << value << " cannot be converted "
                                                             << "to " << dtype_name(dtype)
                                                             << " without overflow");
  Tensor t = Tensor::empty(shape, dtype, device);
  int64_t n = t.numel();
  void* p = t.data();
  for (int64_t i = 0; i < n; ++i) store_double(p, i, dtype, value);
  return t;
}

Tensor zeros(const Shape& shape, DType dtype, Device device) {
  check_creatable(shape, "zeros");
  Tensor t = Tensor::empty(shape, dtype, device);
  std::memset(t.data(), 0, static_cast<size_t>(t.nbytes()));  // all-zero bits are 0 for all dtypes
  return t;
}

Tensor ones(const Shape& shape, DType dtype, Device device) {
  check_creatable(shape, "ones");
  return full(shape, 1.0, dtype, device);
}

Tensor randn(const Shape& shape, DType dtype, Device device, int64_t seed) {
  EMBER_CHECK(is_float(dtype), "randn: dtype " << dtype_name(dtype)
                                               << " is not a floating-point type; use float32, "
                                               << "float16, bfloat16 or float64");
  check_creatable(shape, "randn");
  Tensor t = Tensor::empty(shape, dtype, device);
  int64_t n = t.numel();
  void* p = t.data();
  std::normal_distribution<double> normal(0.0, 1.0);
  if (seed >= 0) {
    std::mt19937_64 gen(static_cast<uint64_t>(seed));
    for (int64_t i = 0; i < n; ++i) store_double(p, i, dtype, normal(gen));
  } else {
    // The global generator has a fixed initial seed, so programs are reproducible.
    static std::mutex mu;
    static std::mt19937_64 global_gen(0x656d626572ULL);
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t i = 0; i < n; ++i) store_double(p, i, dtype, normal(global_gen));
  }
  return t;
}

Tensor from_values(const std::vector<double>& values, const Shape& shape, DType dtype) {
  check_creatable(shape, "from_values");
  int64_t n = shape_numel(shape);
  EMBER_CHECK(static_cast<int64_t>(values.size()) == n,
              "from_values: " << values.size() << " values given for shape " << shape_str(shape)
                              << ", which holds " << n);
  Tensor t = Tensor::empty(shape, dtype);
  void* p = t.data();
  for (int64_t i = 0; i < n; ++i) store_double(p, i, dtype, values[i]);
  return t;
}

double element_as_double(const Tensor& t, int64_t i) {
  EMBER_CHECK(t.defined() && !t.is_symbolic(),
              "element_as_double: the tensor is symbolic and holds no values");
  EMBER_CHECK(t.device().kind == DeviceKind::cpu,
              "element_as_double: the tensor is on " << t.device().str() << ", not the CPU");
  int64_t n = t.numel();
  EMBER_CHECK(i >= 0 && i < n, "element_as_double: index " << i << " is out of range for a "
                                                           << "tensor of " << n << " elements");
  return load_double(t.data(), i, t.dtype());
}

}  // namespace ember
