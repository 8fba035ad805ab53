// Parsing of int64 size expressions (the inverse of to_string for shape dimensions).
#include <cctype>
#include <string>

#include "ember/ir/expr.h"
#include "ember/support/error.h"

namespace ember::ir {
namespace {

// Recursive descent over: sum := product (('+' | '-') product)*
//                         product := unary (('*' | '//' | '%') unary)*
//                         unary := '-' unary | atom
//                         atom := integer | name | ('min' | 'max') '(' sum ',' sum ')'
//                               | '(' sum ')'
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Expr parse() {
    Expr e = sum();
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + s_.substr(pos_) + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    EMBER_THROW("cannot read the size expression '"
                << s_ << "': " << why
                << "; sizes are integers, symbol names, + - * // %, min(a, b) and max(a, b)");
  }

  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }

  bool eat(const std::string& tok) {
    skip();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    pos_ += tok.size();
    return true;
  }

  Expr sum() {
    Expr e = product();
    while (true) {
      if (eat("+")) {
        e = e + product();
      } else if (eat("-")) {
        e = e - product();
      } else {
        return e;
      }
    }
  }

  Expr product() {
    Expr e = unary();
    while (true) {
      if (eat("*")) {
        e = e * unary();
      } else if (eat("//")) {
        e = floordiv(e, unary());
      } else if (eat("%")) {
        e = mod(e, unary());
      } else {
        return e;
      }
    }
  }

  Expr unary() {
    if (eat("-")) return Expr(0) - unary();
    return atom();
  }

  Expr atom() {
    skip();
    if (pos_ >= s_.size()) fail("it ends early");
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = pos_;
      while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]))) ++end;
      const std::string digits = s_.substr(pos_, end - pos_);
      pos_ = end;
      try {
        return Expr(static_cast<int64_t>(std::stoll(digits)));
      } catch (const std::exception&) {
        fail("the integer " + digits + " does not fit in int64");
      }
    }
    if (eat("(")) {
      Expr e = sum();
      if (!eat(")")) fail("a ')' is missing");
      return e;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_'))
        ++end;
      const std::string name = s_.substr(pos_, end - pos_);
      pos_ = end;
      if ((name == "min" || name == "max") && eat("(")) {
        Expr a = sum();
        if (!eat(",")) fail("min and max take two arguments");
        Expr b = sum();
        if (!eat(")")) fail("a ')' is missing");
        return name == "min" ? min(a, b) : max(a, b);
      }
      return var(name);
    }
    fail(std::string("unexpected '") + c + "'");
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

Expr parse_int_expr(const std::string& text) { return Parser(text).parse(); }

}  // namespace ember::ir
