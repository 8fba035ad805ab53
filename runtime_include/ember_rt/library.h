// The runtime library that Call stages invoke (ir::StageKind::Call): scans, sorts and
// scatters, which no per-element expression can state.
//
// Every routine is ember_rt::lib::<name>(ctx, inputs..., outputs..., params..., scalars...),
// a template over the element types of its buffers (the generated code passes the buffers'
// typed pointers), with int64 sizes known at run time (they may come from symbols) and
// double scalars. Buffers are row-major and contiguous.
//
// Routines along an axis see a tensor as [outer, n, inner]: outer * inner independent rows
// of n elements, `inner` apart. They split the rows across threads with parallel_for; each
// row is computed the same way at every thread count, so results do not depend on it.
// NaN follows torch: a scan of max/min keeps a NaN once met, a sort puts NaN above every
// number.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernel.h"
#include "lazy.h"

namespace ember_rt::lib {

// The accumulator of a scan: double for floating types (torch accumulates float32 scans in
// double on the CPU), the type itself for integers.
template <class T>
using scan_acc_t = std::conditional_t<std::is_floating_point_v<T>, double, T>;

template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// f(first, stride) for each row of [outer, n, inner], rows split across threads.
template <class F>
inline void for_rows(const LaunchContext* ctx, int64_t outer, int64_t n, int64_t inner, double cost,
                     F&& f) {
  const int64_t rows = outer * inner;
  if (rows <= 0 || n <= 0) return;
  parallel_for(ctx, rows, static_cast<double>(rows) * static_cast<double>(n) * cost,
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   const int64_t o = r / inner, i = r % inner;
                   f(o * n * inner + i, inner);
                 }
               });
}

// ---- scans: y[k] = x[0] op x[1] op ... op x[k] along the row ----

template <class T, class Op>
inline void scan(const LaunchContext* ctx, const T* x, T* y, int64_t outer, int64_t n,
                 int64_t inner, scan_acc_t<T> init, Op op) {
  for_rows(ctx, outer, n, inner, 2.0, [&](int64_t first, int64_t stride) {
    scan_acc_t<T> acc = init;
    for (int64_t k = 0; k < n; ++k) {
      acc = op(acc, static_cast<scan_acc_t<T>>(x[first + k * stride]));
      y[first + k * stride] = static_cast<T>(acc);
    }
  });
}

template <class T>
inline void scan_sum(const LaunchContext* ctx, const T* x, T* y, int64_t outer, int64_t n,
                     int64_t inner) {
  scan(ctx, x, y, outer, n, inner, scan_acc_t<T>(0),
       [](scan_acc_t<T> a, scan_acc_t<T> b) { return static_cast<scan_acc_t<T>>(a + b); });
}

template <class T>
inline void scan_prod(const LaunchContext* ctx, const T* x, T* y, int64_t outer, int64_t n,
                      int64_t inner) {
  scan(ctx, x, y, outer, n, inner, scan_acc_t<T>(1),
       [](scan_acc_t<T> a, scan_acc_t<T> b) { return static_cast<scan_acc_t<T>>(a * b); });
}

// log(exp(a) + exp(b)), as torch's logcumsumexp: -inf is the identity, NaN propagates.
EMBER_RT_LAZY
inline double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  const double hi = std::max(a, b), lo = std::min(a, b);
  if (std::isinf(hi) && hi < 0) return hi;  // both -inf
  if (std::isinf(hi)) return hi;            // +inf
  return hi + std::log1p(std::exp(lo - hi));
}

template <class T>
inline void scan_logsumexp(const LaunchContext* ctx, const T* x, T* y, int64_t outer, int64_t n,
                           int64_t inner) {
  static_assert(std::is_floating_point_v<T>, "logcumsumexp takes float32 or float64");
  scan(ctx, x, y, outer, n, inner, -std::numeric_limits<double>::infinity(), log_add_exp);
}

// Running max (Greater) or min with the index of the element it holds: a later equal
// element takes over (torch's >=), and a NaN holds once met (each later NaN takes over).
template <bool Greater, class T>
inline void scan_arg(const LaunchContext* ctx, const T* x, T* values, int64_t* indices,
                     int64_t outer, int64_t n, int64_t inner) {
  for_rows(ctx, outer, n, inner, 2.0, [&](int64_t first, int64_t stride) {
    T best = x[first];
    int64_t at = 0;
    for (int64_t k = 0; k < n; ++k) {
      const T v = x[first + k * stride];
      const bool better = Greater ? v >= best : v <= best;
      if (is_nan(v) || (!is_nan(best) && better)) {
        best = v;
        at = k;
      }
      values[first + k * stride] = best;
      indices[first + k * stride] = at;
    }
  });
}

template <class T>
inline void scan_max(const LaunchContext* ctx, const T* x, T* values, int64_t* indices,
                     int64_t outer, int64_t n, int64_t inner) {
  scan_arg<true>(ctx, x, values, indices, outer, n, inner);
}

template <class T>
inline void scan_min(const LaunchContext* ctx, const T* x, T* values, int64_t* indices,
                     int64_t outer, int64_t n, int64_t inner) {
  scan_arg<false>(ctx, x, values, indices, outer, n, inner);
}

// ---- sorts: stable, along the row, values and their int64 positions ----

template <bool Descending, class T>
inline void sort_rows(const LaunchContext* ctx, const T* x, T* values, int64_t* indices,
                      int64_t outer, int64_t n, int64_t inner) {
  const double cost = 4.0 + std::log2(static_cast<double>(n > 1 ? n : 2));
  for_rows(ctx, outer, n, inner, cost, [&](int64_t first, int64_t stride) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) order[static_cast<size_t>(k)] = k;
    auto at = [&](int64_t k) { return x[first + k * stride]; };
    // NaN is above every number (torch): last ascending, first descending.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const T va = at(a), vb = at(b);
      if constexpr (Descending) {
        return (is_nan(va) && !is_nan(vb)) || va > vb;
      } else {
        return (!is_nan(va) && is_nan(vb)) || va < vb;
      }
    });
    for (int64_t k = 0; k < n; ++k) {
      const int64_t src = order[static_cast<size_t>(k)];
      values[first + k * stride] = at(src);
      indices[first + k * stride] = src;
    }
  });
}

template <class T>
inline void sort_ascending(const LaunchContext* ctx, const T* x, T* values, int64_t* indices,
                           int64_t outer, int64_t n, int64_t inner) {
  sort_rows<false>(ctx, x, values, indices, outer, n, inner);
}

template <class T>
inline void sort_descending(const LaunchContext* ctx, const T* x, T* values, int64_t* indices,
                            int64_t outer, int64_t n, int64_t inner) {
  sort_rows<true>(ctx, x, values, indices, outer, n, inner);
}

// ---- binary search: out[r, j] = the position of values[r, j] in row r of sorted ----
//
// sorted is [rows_s, n] (rows_s == rows or 1: one row for every values row), values and out
// [rows, m]. Left: the first position whose element is not below the value; right: the
// first above it. The comparisons are torch's (!(s >= v), !(s > v)): a comparison with NaN
// is false, so the search steps past NaN elements, and a NaN value goes after every element.
template <bool Right, class T>
inline void search_sorted(const LaunchContext* ctx, const T* sorted, const T* values, int64_t* out,
                          int64_t rows_s, int64_t n, int64_t rows, int64_t m) {
  const double cost = 2.0 + std::log2(static_cast<double>(n > 1 ? n : 2));
  parallel_for(ctx, rows * m, static_cast<double>(rows * m) * cost, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t r = t / m;
      const T* row = sorted + (rows_s == 1 ? 0 : r) * n;
      const T v = values[t];
      int64_t lo = 0, hi = n;
      while (lo < hi) {
        const int64_t mid = lo + ((hi - lo) >> 1);
        const bool go_right = Right ? !(row[mid] > v) : !(row[mid] >= v);
        if (go_right) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      out[t] = lo;
    }
  });
}

template <class T>
inline void search_sorted_left(const LaunchContext* ctx, const T* sorted, const T* values,
                               int64_t* out, int64_t rows_s, int64_t n, int64_t rows, int64_t m) {
  search_sorted<false>(ctx, sorted, values, out, rows_s, n, rows, m);
}

template <class T>
inline void search_sorted_right(const LaunchContext* ctx, const T* sorted, const T* values,
                                int64_t* out, int64_t rows_s, int64_t n, int64_t rows, int64_t m) {
  search_sorted<true>(ctx, sorted, values, out, rows_s, n, rows, m);
}

// ---- scatters ----
//
// self and out are [outer, n, inner]; index and src are [outer, m, inner]. out = self, then
// along each line (o, i), for k = 0, 1, ... m - 1 in order:
//   out[o, index[o, k, i], i] (op)= src[o, k, i],
// where the index must lie in [0, n) (else the error is reported and the element skipped).
// A line writes only its own line of out, so lines run in parallel and every write to one
// element happens in index order: duplicates resolve as torch's CPU kernels do (the last
// write wins, sums add in order), at every thread count. include_self = false: an element
// written at least once starts from its first written value instead of self's.
//
// Where no counts are kept (include_self, not mean), a task takes a block of up to
// kScatterColumns neighbouring lines (i) and walks k outside i: index, src and out are then
// read along rows, where one line at a time jumped inner elements per k (an embedding's
// gradient, [1024, 768] rows into [30522, 768]: 2.95 ms that way, 1.72 ms this way). Each
// element still sees its writes in k order.
constexpr int64_t kScatterColumns = 64;

enum class ScatterOp : int { Assign, Sum, Prod, Max, Min, Mean };

template <class T>
inline T scatter_combine(ScatterOp op, T o, T v) {
  switch (op) {
    case ScatterOp::Assign: return v;
    case ScatterOp::Sum:
    case ScatterOp::Mean: return static_cast<T>(o + v);
    case ScatterOp::Prod: return static_cast<T>(o * v);
    case ScatterOp::Max: return (is_nan(v) || v > o) ? v : o;
    case ScatterOp::Min: return (is_nan(v) || v < o) ? v : o;
  }
  return v;
}

// sum / count, rounding down for integers as torch's scatter mean does.
template <class T>
inline T scatter_mean(T sum, int64_t count) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(sum / static_cast<T>(count));
  } else if constexpr (std::is_same_v<T, bool>) {
    return sum;
  } else {
    const T c = static_cast<T>(count);
    T q = static_cast<T>(sum / c);
    if (sum % c != 0 && ((sum < 0) != (c < 0))) q = static_cast<T>(q - 1);
    return q;
  }
}

template <ScatterOp Op, bool IncludeSelf, class T, class I>
inline void scatter_impl(const LaunchContext* ctx, const T* self, const I* index, const T* src,
                         T* out, int64_t outer, int64_t n, int64_t m, int64_t inner) {
  const int64_t total = outer * n * inner;
  // out may be self's own memory (the runtime's in-place reuse: OpTraits::in_place_input).
  if (total > 0 && out != self) std::memcpy(out, self, static_cast<size_t>(total) * sizeof(T));
  constexpr bool kCount = Op == ScatterOp::Mean || !IncludeSelf;
  const int64_t lines = outer * inner;
  if (lines <= 0 || m <= 0) return;
  if constexpr (!kCount) {
    if (inner > 1) {
      const int64_t blocks = (inner + kScatterColumns - 1) / kScatterColumns;
      parallel_for(ctx, outer * blocks, static_cast<double>(lines) * static_cast<double>(m) * 2.0,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t t = begin; t < end; ++t) {
                       const int64_t o = t / blocks, i0 = (t % blocks) * kScatterColumns;
                       const int64_t i1 =
                           i0 + kScatterColumns < inner ? i0 + kScatterColumns : inner;
                       T* plane = out + o * n * inner;
                       for (int64_t k = 0; k < m; ++k) {
                         const int64_t row = (o * m + k) * inner;
                         for (int64_t i = i0; i < i1; ++i) {
                           const int64_t j = static_cast<int64_t>(index[row + i]);
                           if (static_cast<uint64_t>(j) >= static_cast<uint64_t>(n)) {
                             report_error(ctx, KernelError::kIndexOutOfRange,
                                          "the scattered dimension", j, n);
                             continue;
                           }
                           T& dst = plane[j * inner + i];
                           dst = scatter_combine(Op, dst, src[row + i]);
                         }
                       }
                     }
                   });
      return;
    }
  }
  parallel_for(
      ctx, lines, static_cast<double>(lines) * static_cast<double>(m + (kCount ? n : 0)) * 2.0,
      [&](int64_t begin, int64_t end) {
        std::vector<int64_t> hits(kCount ? static_cast<size_t>(n) : 0);
        for (int64_t r = begin; r < end; ++r) {
          const int64_t o = r / inner, i = r % inner;
          T* line = out + o * n * inner + i;
          const int64_t first = o * m * inner + i;
          if constexpr (kCount) std::fill(hits.begin(), hits.end(), 0);
          for (int64_t k = 0; k < m; ++k) {
            const int64_t j = static_cast<int64_t>(index[first + k * inner]);
            if (static_cast<uint64_t>(j) >= static_cast<uint64_t>(n)) {
              report_error(ctx, KernelError::kIndexOutOfRange, "the scattered dimension", j, n);
              continue;
            }
            const T v = src[first + k * inner];
            T& dst = line[j * inner];
            if constexpr (kCount) {
              const bool fresh = hits[static_cast<size_t>(j)]++ == 0;
              dst = (!IncludeSelf && fresh) ? v : scatter_combine(Op, dst, v);
            } else {
              dst = scatter_combine(Op, dst, v);
            }
          }
          if constexpr (Op == ScatterOp::Mean) {
            for (int64_t j = 0; j < n; ++j) {
              const int64_t c = hits[static_cast<size_t>(j)];
              if (c > 0) line[j * inner] = scatter_mean(line[j * inner], c + (IncludeSelf ? 1 : 0));
            }
          }
        }
      });
}

#define EMBER_RT_SCATTER(name, op, include_self)                                                  \
  template <class T, class I>                                                                     \
  inline void name(const LaunchContext* ctx, const T* self, const I* index, const T* src, T* out, \
                   int64_t outer, int64_t n, int64_t m, int64_t inner) {                          \
    scatter_impl<ScatterOp::op, include_self>(ctx, self, index, src, out, outer, n, m, inner);    \
  }
EMBER_RT_SCATTER(scatter_assign, Assign, true)
EMBER_RT_SCATTER(scatter_sum, Sum, true)
EMBER_RT_SCATTER(scatter_prod, Prod, true)
EMBER_RT_SCATTER(scatter_amax, Max, true)
EMBER_RT_SCATTER(scatter_amin, Min, true)
EMBER_RT_SCATTER(scatter_mean, Mean, true)
EMBER_RT_SCATTER(scatter_sum_excl, Sum, false)
EMBER_RT_SCATTER(scatter_prod_excl, Prod, false)
EMBER_RT_SCATTER(scatter_amax_excl, Max, false)
EMBER_RT_SCATTER(scatter_amin_excl, Min, false)
EMBER_RT_SCATTER(scatter_mean_excl, Mean, false)
#undef EMBER_RT_SCATTER

}  // namespace ember_rt::lib
