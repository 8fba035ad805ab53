// Loads of a task's expressions, as the kernel plan inspects and prints them
// (vector_plan.cpp).
#pragma once

#include <string>

#include "ember/ir/task.h"

namespace ember::codegen {

// Whether e reads a buffer.
bool has_load(const ir::Expr& e);
// The buffer's flat offset at the load's indices.
ir::Expr load_offset(const ir::Task& task, const ir::Expr& load);
// "b0 (x)[i, j]"
std::string load_text(const ir::Task& task, const ir::Expr& load);

}  // namespace ember::codegen
