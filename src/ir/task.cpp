// Task helpers and the text form of a task.
#include "ember/ir/task.h"

#include <sstream>
#include <utility>

namespace ember::ir {

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "max", "min", "prod", "argmax", "argmin"};
  return names[static_cast<int>(op)];
}

int Task::add_buffer(const std::string& name, DType dtype, const Shape& shape, BufferRole role,
                     Layout layout) {
  buffers.push_back({name, dtype, shape, role, layout});
  return static_cast<int>(buffers.size()) - 1;
}

const Expr& matmul_depth(const Task& task, const Stage& s) {
  const Shape& a = task.buffers.at(static_cast<size_t>(s.a)).shape;
  return s.a_transposed ? a.at(a.size() - 2) : a.back();
}

std::vector<int> Task::buffers_with(BufferRole role) const {
  std::vector<int> ids;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].role == role) ids.push_back(static_cast<int>(i));
  return ids;
}

namespace {

std::string join_exprs(const std::vector<Expr>& xs) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + to_string(xs[i]);
  return s;
}

}  // namespace

std::string Task::str() const {
  static const char* roles[] = {"input", "output", "scratch"};
  std::ostringstream os;
  os << "task " << name << " {\n";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    os << "  b" << i << " " << roles[static_cast<int>(b.role)] << " " << b.name << ": "
       << dtype_name(b.dtype) << shape_str(b.shape) << b.layout.suffix(b.shape.size()) << "\n";
  }
  for (const Stage& s : stages) {
    os << "  b" << s.out << "[" << join_exprs(s.axes) << "] = ";
    switch (s.kind) {
      case StageKind::Compute: os << to_string(s.value); break;
      case StageKind::Reduce:
        os << reduce_op_name(s.reduce_op) << "(" << to_string(s.value) << " over "
           << join_exprs(s.raxes) << " < " << join_exprs(s.rextents) << ")";
        break;
      case StageKind::Matmul:
        os << "matmul(b" << s.a << (s.a_transposed ? "^T" : "") << ", b" << s.b
           << (s.b_transposed ? "^T" : "");
        if (s.b_row_offset.defined())
          os << " rows " << to_string(s.b_row_var) << " at " << to_string(s.b_row_offset)
             << " columns step " << s.b_col_stride;
        os << ")";
        break;
      case StageKind::Call: {
        os << s.routine << "(";
        const char* sep = "";
        for (int b : s.call_inputs) os << std::exchange(sep, ", ") << "b" << b;
        for (int b : s.call_outputs) os << std::exchange(sep, ", ") << "&b" << b;
        for (const Expr& p : s.params) os << std::exchange(sep, ", ") << to_string(p);
        for (double v : s.scalars) os << std::exchange(sep, ", ") << v;
        os << ")";
        break;
      }
    }
    if (s.epilogue.defined()) os << " then " << to_string(s.epilogue);
    for (const Stage::Store& st : s.stores)
      os << " and b" << st.buffer << "[" << join_exprs(s.axes) << "] = " << to_string(st.value);
    os << "\n";
  }
  os << "}";
  return os.str();
}

}  // namespace ember::ir
