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
