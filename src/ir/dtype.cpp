#include "ember/ir/dtype.h"

#include <array>
#include <cctype>
#include <string_view>
#include <utility>

#include "ember/support/error.h"

namespace ember {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  int size;
  const char* ctype;
};

// One row per DType, in enum order.
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::float32, "float32", 4, "float"},
    {DType::float16, "float16", 2, "ember_rt::f16"},
    {DType::bfloat16, "bfloat16", 2, "ember_rt::bf16"},
    {DType::float64, "float64", 8, "double"},
    {DType::int8, "int8", 1, "int8_t"},
    {DType::int16, "int16", 2, "int16_t"},
    {DType::int32, "int32", 4, "int32_t"},
    {DType::int64, "int64", 8, "int64_t"},
    {DType::uint8, "uint8", 1, "uint8_t"},
    {DType::boolean, "bool", 1, "bool"},
}};

// Other spellings accepted by dtype_from_name (C and torch names).
constexpr std::array<std::pair<std::string_view, DType>, 7> kAliases = {{
    {"float", DType::float32},
    {"half", DType::float16},
    {"double", DType::float64},
    {"int", DType::int32},
    {"long", DType::int64},
    {"short", DType::int16},
    {"bfloat", DType::bfloat16},
}};

const DTypeInfo& info(DType t) {
  auto i = static_cast<size_t>(t);
  EMBER_ASSERT(i < kDTypes.size() && kDTypes[i].dtype == t,
               "unknown DType value " << static_cast<int>(t));
  return kDTypes[i];
}

std::string valid_names() {
  std::string s;
  for (const auto& d : kDTypes) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  s += " (also: ";
  for (size_t i = 0; i < kAliases.size(); ++i) {
    if (i > 0) s += ", ";
    s += kAliases[i].first;
  }
  s += "; a \"torch.\" prefix is accepted)";
  return s;
}

}  // namespace

int dtype_size(DType t) { return info(t).size; }

std::string dtype_name(DType t) { return info(t).name; }

DType dtype_from_name(const std::string& name) {
  std::string_view n = name;
  constexpr std::string_view kTorch = "torch.";
  if (n.substr(0, kTorch.size()) == kTorch) n.remove_prefix(kTorch.size());
  for (const auto& d : kDTypes) {
    if (n == d.name) return d.dtype;
  }
  for (const auto& [alias, dtype] : kAliases) {
    if (n == alias) return dtype;
  }
  EMBER_THROW("unknown dtype '" << name << "'; valid dtypes are " << valid_names());
}

bool is_float(DType t) {
  return t == DType::float32 || t == DType::float16 || t == DType::bfloat16 || t == DType::float64;
}

bool is_integer(DType t) {
  return t == DType::int8 || t == DType::int16 || t == DType::int32 || t == DType::int64 ||
         t == DType::uint8;
}

std::string dtype_ctype(DType t) { return info(t).ctype; }

std::string dtype_compute_ctype(DType t) {
  if (t == DType::float16 || t == DType::bfloat16) return "float";
  return info(t).ctype;
}

}  // namespace ember
