// Tensor::str(): a header line, then the values as a nested bracketed array.
//
// The layout follows numpy's: elements right-aligned to a common width and separated by one
// space, rows on their own lines, a blank line between 2-d blocks, long rows wrapped at 75
// columns. Tensors of more than 1000 elements are summarised: each dimension longer than 6
// shows its first and last 3 entries around "...".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ember/support/error.h"
#include "ember/tensor/tensor.h"

namespace ember {
namespace {

constexpr int64_t kSummaryThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 75;
constexpr int64_t kGap = -1;  // marks the "..." between the shown edges of a dimension

std::string header(const Tensor& t) {
  std::string s = "Tensor(shape=(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    if (i > 0) s += ", ";
    s += ir::to_string(t.shape()[i]);
  }
  if (t.shape().size() == 1) s += ",";
  s += "), dtype='" + dtype_name(t.dtype()) + "', device='" + t.device().str() + "')";
  return s;
}

// The indices shown along a dimension of `size`, with kGap where entries are left out.
std::vector<int64_t> shown(int64_t size, bool summarise) {
  std::vector<int64_t> out;
  if (summarise && size > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) out.push_back(i);
    out.push_back(kGap);
    for (int64_t i = size - kEdgeItems; i < size; ++i) out.push_back(i);
  } else {
    for (int64_t i = 0; i < size; ++i) out.push_back(i);
  }
  return out;
}

// Flat indices of every shown element, in order.
void collect(const std::vector<std::vector<int64_t>>& idx, const std::vector<int64_t>& strides,
             size_t dim, int64_t offset, std::vector<int64_t>* out) {
  if (dim == idx.size()) {
    out->push_back(offset);
    return;
  }
  for (int64_t i : idx[dim]) {
    if (i != kGap) collect(idx, strides, dim + 1, offset + i * strides[dim], out);
  }
}

// How the floating-point values of one tensor are written: all in the same style.
struct FloatStyle {
  enum Kind { kIntegral, kFixed, kScientific } kind = kFixed;
  int decimals = 4;
};

std::string format_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Digits after the point that %.4f needs once trailing zeros are dropped.
int needed_decimals(double v) {
  std::string s = format_fixed(v, 4);
  size_t end = s.size();
  while (end > 0 && s[end - 1] == '0') --end;
  size_t dot = s.find('.');
  return static_cast<int>(end - dot - 1);
}

FloatStyle choose_style(const std::vector<double>& values) {
  double max_abs = 0.0, min_abs = INFINITY;
  bool integral = true;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    double a = std::fabs(v);
    max_abs = std::max(max_abs, a);
    if (a != 0.0) min_abs = std::min(min_abs, a);
    if (v != std::nearbyint(v)) integral = false;
  }
  FloatStyle st;
  if (integral && max_abs < 1e8) {
    st.kind = FloatStyle::kIntegral;
    return st;
  }
  // Magnitudes too large, too small or too far apart for one fixed-point format.
  if (max_abs >= 1e8 || min_abs < 1e-4 || max_abs / min_abs > 1e3) {
    st.kind = FloatStyle::kScientific;
    return st;
  }
  st.decimals = 1;
  for (double v : values) {
    if (std::isfinite(v)) st.decimals = std::max(st.decimals, needed_decimals(v));
  }
  return st;
}

std::string format_float(double v, const FloatStyle& st) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  switch (st.kind) {
    case FloatStyle::kIntegral:
      std::snprintf(buf, sizeof buf, "%.0f.", v);
      return buf;
    case FloatStyle::kScientific:
      std::snprintf(buf, sizeof buf, "%.4e", v);
      return buf;
    case FloatStyle::kFixed:
      break;
  }
  return format_fixed(v, st.decimals);
}

std::string format_value(double v, DType t, const FloatStyle& st) {
  if (t == DType::boolean) return v != 0.0 ? "True" : "False";
  if (is_float(t)) return format_float(v, st);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

// Renders the shown elements, given as strings in order, into nested brackets.
class Renderer {
 public:
  Renderer(const std::vector<std::vector<int64_t>>& idx, const std::vector<std::string>& words,
           size_t width)
      : idx_(idx), words_(words), width_(width) {}

  std::string render() {
    block(0);
    return out_;
  }

 private:
  size_t column() const {
    size_t nl = out_.rfind('\n');
    return nl == std::string::npos ? out_.size() : out_.size() - nl - 1;
  }

  void row(size_t dim) {
    out_ += '[';
    bool first = true;
    for (int64_t i : idx_[dim]) {
      std::string w = i == kGap ? "..." : pad(words_[next_++]);
      if (!first) {
        if (column() + 1 + w.size() + 1 > kLineWidth) {
          out_ += '\n' + std::string(dim + 1, ' ');
        } else {
          out_ += ' ';
        }
      }
      out_ += w;
      first = false;
    }
    out_ += ']';
  }

  void block(size_t dim) {
    if (dim + 1 == idx_.size()) return row(dim);
    out_ += '[';
    std::string sep = std::string(idx_.size() - dim - 1, '\n') + std::string(dim + 1, ' ');
    bool first = true;
    for (int64_t i : idx_[dim]) {
      if (!first) out_ += sep;
      if (i == kGap) {
        out_ += "...";
      } else {
        block(dim + 1);
      }
      first = false;
    }
    out_ += ']';
  }

  std::string pad(const std::string& w) const {
    return w.size() >= width_ ? w : std::string(width_ - w.size(), ' ') + w;
  }

  const std::vector<std::vector<int64_t>>& idx_;
  const std::vector<std::string>& words_;
  size_t width_;
  size_t next_ = 0;
  std::string out_;
};

std::string values_text(const Tensor& t) {
  const Shape& shape = t.shape();
  int64_t numel = t.numel();
  if (numel == 0) return "[]";
  std::vector<int64_t> dims = shape_values(shape);
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  bool summarise = numel > kSummaryThreshold;
  std::vector<std::vector<int64_t>> idx;
  for (int64_t d : dims) idx.push_back(shown(d, summarise));
  std::vector<int64_t> flat;
  collect(idx, strides, 0, 0, &flat);

  std::vector<double> values;
  values.reserve(flat.size());
  for (int64_t i : flat) values.push_back(element_as_double(t, i));
  FloatStyle style = is_float(t.dtype()) ? choose_style(values) : FloatStyle{};
  std::vector<std::string> words;
  size_t width = 0;
  for (double v : values) {
    words.push_back(format_value(v, t.dtype(), style));
    width = std::max(width, words.back().size());
  }
  if (dims.empty()) return words[0];
  return Renderer(idx, words, width).render();
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  std::string s = header(*this);
  if (is_symbolic()) {
    if (trace() && !impl_->op_title.empty()) s += "\nfrom " + impl_->op_title;
    return s;
  }
  if (device().kind != DeviceKind::cpu) return s + "\n(values on " + device().str() + ")";
  return s + "\n" + values_text(*this);
}

}  // namespace ember
