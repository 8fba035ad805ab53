// An indenting line writer for generated source.
#pragma once

#include <string>

namespace ember::codegen {

class Writer {
 public:
  void line(const std::string& s) { out_ += std::string(2 * depth_, ' ') + s + "\n"; }
  // A line that opens a block: the following lines are indented.
  void open(const std::string& s) {
    line(s);
    ++depth_;
  }
  // A line that closes a block.
  void close(const std::string& s) {
    --depth_;
    line(s);
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int depth_ = 0;
};

}  // namespace ember::codegen
