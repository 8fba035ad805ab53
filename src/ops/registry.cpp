// The registry of operator definitions (include/ember/ops/op_def.h).
//
// Ops register themselves from static initializers in their family's file, so the table
// is a function-local static: it exists before the first registration whatever the order
// in which translation units are initialized. std::map never moves its nodes, so the
// OpDef pointers held by graphs stay valid for the life of the program.
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ops/op_def.h"
#include "ember/support/error.h"

namespace ember {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, OpDef> defs;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: graphs may outlive main()
  return *r;
}

}  // namespace

OpTraits default_traits(OpKind kind) {
  OpTraits t;
  switch (kind) {
    case OpKind::Elementwise:
      t.takes_prologue = true;
      t.fusable_epilogue = true;
      t.layouts = LayoutRule::Keep;
      break;
    case OpKind::Injective: t.takes_prologue = true; break;
    case OpKind::Reduce:
      t.anchor = true;
      t.takes_prologue = true;
      t.epilogue = EpilogueRule::Any;
      break;
    case OpKind::Matmul:
      t.anchor = true;
      t.epilogue = EpilogueRule::Gemm;
      break;
    case OpKind::Composite:
      t.anchor = true;
      t.epilogue = EpilogueRule::Float32;
      break;
  }
  return t;
}

std::vector<TensorType> OpDef::infer_types(const std::vector<TensorType>& in,
                                           const OpAttrs& attrs) const {
  const LayoutRule rule = traits().layouts;
  int first = -1;  // the first non-plain input
  for (size_t i = 0; i < in.size(); ++i) {
    const Layout& l = in[i].layout;
    if (l.is_plain()) continue;
    EMBER_CHECK(rule != LayoutRule::Plain,
                name << ": input " << i << " (" << in[i].str() << ") has the layout "
                     << l.name(in[i].shape.size()) << ", but " << name
                     << " reads plain (row-major) tensors only; convert it first with "
                        "to_layout(x, 'plain')");
    if (rule == LayoutRule::Keep && first >= 0)
      EMBER_CHECK(l == in[first].layout,
                  name << ": inputs " << first << " (" << in[first].str() << ") and " << i << " ("
                       << in[i].str() << ") have different layouts; convert one with to_layout");
    if (first < 0) first = static_cast<int>(i);
  }
  std::vector<TensorType> out = infer(in, attrs);
  if (rule == LayoutRule::Own) return out;
  const Layout layout = first >= 0 ? in[first].layout : Layout::plain();
  for (TensorType& t : out) {
    t.layout = layout;
    if (layout.is_plain()) continue;
    layout.check_rank(t.shape.size(), name);
    for (size_t i = 0; i < in.size(); ++i)
      EMBER_CHECK(in[i].layout.is_plain() || in[i].shape.size() == t.shape.size(),
                  name << ": input " << i << " (" << in[i].str() << ") would be broadcast to rank "
                       << t.shape.size() << "; an input with a non-plain layout must have the "
                       << "output's rank (dimension 1 is the channel)");
  }
  return out;
}

const OpDef* find_op_def(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.defs.find(name);
  return it == r.defs.end() ? nullptr : &it->second;
}

const OpDef& op_def(const std::string& name) {
  if (const OpDef* d = find_op_def(name)) return *d;
  std::ostringstream known;
  const std::vector<std::string> names = op_names();
  for (size_t i = 0; i < names.size(); ++i) known << (i ? ", " : "") << names[i];
  EMBER_THROW("unknown operator '" << name << "'; the known operators are: " << known.str());
}

std::vector<std::string> op_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  names.reserve(r.defs.size());
  for (const auto& [name, def] : r.defs) names.push_back(name);
  return names;
}

bool register_op_def(OpDef def) {
  EMBER_ASSERT(!def.name.empty(), "an operator was registered without a name");
  EMBER_ASSERT(def.infer != nullptr, "operator '" << def.name << "' has no shape rule");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const std::string name = def.name;
  auto [it, inserted] = r.defs.emplace(name, std::move(def));
  EMBER_ASSERT(inserted, "operator '" << name << "' is registered twice");
  return true;
}

}  // namespace ember
