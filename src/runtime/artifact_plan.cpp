// The sections that annotate a saved model's plan: costs, layouts, aliases (artifact_plan.h).
#include "artifact_plan.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ember/ir/expr.h"

namespace ember::artifact_plan {

using artifact_file::Reader;
using artifact_file::Writer;

namespace {

// Records of `fields` int64 each, given as one flat list: their count, then the numbers.
void put_records(Writer* w, const std::vector<int64_t>& flat, size_t fields) {
  w->u32(static_cast<uint32_t>(flat.size() / fields));
  for (int64_t x : flat) w->i64(x);
}

}  // namespace

std::string costs_section(const ExecPlan& p) {
  Writer costs;
  costs.u32(static_cast<uint32_t>(p.launches.size()));
  for (const auto& l : p.launches) {
    costs.str(l.flops.defined() ? ir::to_string(l.flops) : "");
    costs.str(l.bytes.defined() ? ir::to_string(l.bytes) : "");
  }
  return costs.out;
}

void read_costs(Reader r, ExecPlan* plan) {
  if (r.count(8) != plan->launches.size()) r.fail("it does not have one record per launch");
  auto expr = [&](const std::string& text) {
    ir::Expr e;
    if (text.empty()) return e;
    try {
      e = ir::parse_int_expr(text);
    } catch (const Error& err) {
      r.fail(err.what());
    }
    for (const auto& v : ir::free_vars(e)) {
      if (std::find(plan->symbols.begin(), plan->symbols.end(), v) == plan->symbols.end())
        r.fail("a count uses the unknown symbol " + v);
    }
    return e;
  };
  for (auto& l : plan->launches) {
    l.flops = expr(r.str());
    l.bytes = expr(r.str());
  }
  if (!r.done()) r.fail("it has bytes after its last record");
}

std::string layouts_section(const ExecPlan& p) {
  Writer layouts;
  std::vector<int64_t> laid;
  for (size_t v = 0; v < p.values.size(); ++v) {
    const Layout& l = p.values[v].layout;
    if (!l.is_plain())
      laid.insert(laid.end(), {static_cast<int64_t>(v), static_cast<int64_t>(l.kind), l.block});
  }
  put_records(&layouts, laid, 3);
  return layouts.out;
}

void read_layouts(Reader r, ExecPlan* plan) {
  const int64_t num_values = static_cast<int64_t>(plan->values.size());
  const uint32_t n = r.count(3 * 8);
  for (uint32_t i = 0; i < n; ++i) {
    const int v = r.index(num_values);
    const int64_t kind = r.i64(), block = r.i64();
    Layout l;
    if (kind == static_cast<int64_t>(LayoutKind::ChannelsLast)) {
      l = Layout::channels_last();
    } else if (kind == static_cast<int64_t>(LayoutKind::Blocked) && block >= 1) {
      l = Layout::blocked(block);
    } else {
      r.fail("a value has the unknown layout " + std::to_string(kind));
    }
    const size_t rank = plan->values[static_cast<size_t>(v)].shape.size();
    if (rank < 3 || rank > 5) r.fail("a value of rank " + std::to_string(rank) + " has a layout");
    plan->values[static_cast<size_t>(v)].layout = l;
  }
  if (!r.done()) r.fail("it has bytes after its last record");
}

std::string aliases_section(const ExecPlan& p) {
  Writer aliases;
  std::vector<int64_t> views;
  for (const auto& [v, base] : p.views) views.insert(views.end(), {v, base});
  put_records(&aliases, views, 2);
  std::vector<int64_t> in_place;
  for (size_t k = 0; k < p.launches.size(); ++k)
    if (p.launches[k].in_place >= 0)
      in_place.insert(in_place.end(), {static_cast<int64_t>(k), p.launches[k].in_place});
  put_records(&aliases, in_place, 2);
  return aliases.out;
}

void read_aliases(Reader r, ExecPlan* plan) {
  const int64_t num_values = static_cast<int64_t>(plan->values.size());
  const uint32_t n = r.count(2 * 8);
  for (uint32_t i = 0; i < n; ++i) {
    const int v = r.index(num_values), base = r.index(num_values);
    if (v == base || !plan->views.emplace(v, base).second) r.fail("a view is listed twice");
  }
  const uint32_t m = r.count(2 * 8);
  for (uint32_t i = 0; i < m; ++i) {
    const int k = r.index(static_cast<int64_t>(plan->launches.size()));
    KernelLaunch& l = plan->launches[static_cast<size_t>(k)];
    const int64_t j = r.i64();
    if (j < 0 || j >= l.num_inputs) r.fail("an in-place input is not an input of its launch");
    l.in_place = static_cast<int>(j);
  }
  if (!r.done()) r.fail("it has bytes after its last record");
}

}  // namespace ember::artifact_plan
