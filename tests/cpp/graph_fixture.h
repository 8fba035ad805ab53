// What the C++ graph tests share: small constant tensors and the fusion pass' log.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/passes.h"
#include "ember/tensor/tensor.h"

namespace ember::testing_graph {

// A float32 tensor of `shape` holding start, start + step, ... in row-major order.
inline Tensor seq(const Shape& shape, double start = 0.0, double step = 1.0) {
  std::vector<double> v(shape_numel(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * static_cast<double>(i);
  return from_values(v, shape, DType::float32);
}

// Sets an environment variable for the life of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// What fuse_operators writes to stderr on g with EMBER_LOG=`log`.
inline std::string fusion_log(const FlowGraph& g, const char* log = "fusion") {
  ScopedEnv env("EMBER_LOG", log);
  ::testing::internal::CaptureStderr();
  passes::fuse_operators(g);
  return testing::internal::GetCapturedStderr();
}

}  // namespace ember::testing_graph
