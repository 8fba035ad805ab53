// Layouts (include/ember/ir/layout.h).
#include "ember/ir/layout.h"

#include <cctype>

#include "ember/ir/simplify.h"
#include "ember/support/error.h"

namespace ember {

using ir::Expr;

Layout Layout::blocked(int64_t block) {
  EMBER_CHECK(block >= 1, "a blocked layout needs a block of at least 1 channel, got " << block);
  return {LayoutKind::Blocked, block};
}

namespace {

// The letters of the spatial dimensions of a tensor of this rank ("hw" for rank 4).
std::string spatial_letters(size_t rank) {
  static const char* const kLetters[] = {"w", "hw", "dhw"};
  return rank >= 3 && rank <= 5 ? kLetters[rank - 3] : std::string(rank > 2 ? rank - 2 : 0, 's');
}

}  // namespace

std::string Layout::name(size_t rank) const {
  switch (kind) {
    case LayoutKind::Plain: return "plain";
    case LayoutKind::ChannelsLast: return "n" + spatial_letters(rank) + "c";
    case LayoutKind::Blocked: return "nC" + spatial_letters(rank) + std::to_string(block) + "c";
  }
  return "?";
}

void Layout::check_rank(size_t rank, const std::string& what) const {
  if (is_plain()) return;
  EMBER_CHECK(rank >= 3 && rank <= 5,
              what << ": the layout " << name(4) << " applies to tensors [N, C, L], [N, C, H, W] "
                   << "or [N, C, D, H, W] (rank 3 to 5), got rank " << rank);
}

Shape Layout::physical_shape(const Shape& logical) const {
  if (is_plain()) return logical;
  EMBER_ASSERT(logical.size() >= 3,
               "a " << name(logical.size()) << " layout of rank " << logical.size());
  Shape p = {logical[0]};
  if (kind == LayoutKind::Blocked) {
    const Expr b(block);
    p.push_back(ir::simplify_index(ir::floordiv(logical[1] + Expr(block - 1), b)));
  }
  p.insert(p.end(), logical.begin() + 2, logical.end());
  p.push_back(kind == LayoutKind::Blocked ? Expr(block) : logical[1]);
  return p;
}

std::vector<Expr> Layout::physical_index(const Shape& logical, const std::vector<Expr>& idx) const {
  EMBER_ASSERT(idx.size() == logical.size(),
               idx.size() << " indices for a tensor of rank " << logical.size());
  if (is_plain()) return idx;
  std::vector<Expr> p = {idx[0]};
  if (kind == LayoutKind::Blocked) {
    const Expr b(block);
    p.push_back(ir::simplify_index(ir::floordiv(idx[1], b)));
  }
  p.insert(p.end(), idx.begin() + 2, idx.end());
  p.push_back(kind == LayoutKind::Blocked ? ir::simplify_index(ir::mod(idx[1], Expr(block)))
                                          : idx[1]);
  return p;
}

std::vector<Expr> Layout::logical_index(const Shape& logical, const std::vector<Expr>& pidx) const {
  if (is_plain()) return pidx;
  const size_t rank = logical.size();
  EMBER_ASSERT(pidx.size() == physical_shape(logical).size(),
               "a physical index of rank " << pidx.size());
  std::vector<Expr> idx = {pidx[0]};
  if (kind == LayoutKind::Blocked) {
    idx.push_back(ir::simplify_index(pidx[1] * Expr(block) + pidx.back()));
    idx.insert(idx.end(), pidx.begin() + 2, pidx.begin() + 2 + (rank - 2));
  } else {
    idx.push_back(pidx.back());
    idx.insert(idx.end(), pidx.begin() + 1, pidx.begin() + 1 + (rank - 2));
  }
  return idx;
}

Expr Layout::offset(const Shape& logical, const std::vector<Expr>& idx) const {
  EMBER_ASSERT(idx.size() == logical.size(),
               idx.size() << " indices for a tensor of rank " << logical.size());
  const Shape shape = physical_shape(logical);
  const std::vector<Expr> p = physical_index(logical, idx);
  Expr off = ir::const_int(0);
  for (size_t d = 0; d < p.size(); ++d) off = off * shape[d] + p[d];
  return ir::simplify_index(off);
}

Expr Layout::physical_numel(const Shape& logical) const {
  return shape_numel_expr(physical_shape(logical));
}

bool same_memory(const Layout& la, const Shape& a, const Layout& lb, const Shape& b) {
  if (la.is_plain() || lb.is_plain() || la != lb) return la.is_plain() && lb.is_plain();
  auto sized = [](const Shape& physical) {
    Shape s;
    for (const ir::Expr& d : physical)
      if (d.as_int() != std::optional<int64_t>(1)) s.push_back(d);
    return s;
  };
  return shape_equal(sized(la.physical_shape(a)), sized(lb.physical_shape(b)));
}

Layout parse_layout(const std::string& name) {
  if (name == "plain") return Layout::plain();
  if (name == "channels_last" || name == "nwc" || name == "nhwc" || name == "ndhwc")
    return Layout::channels_last();
  // "nC<letters><digits>c" or "blocked<digits>".
  std::string digits;
  if (name.rfind("blocked", 0) == 0) {
    digits = name.substr(7);
  } else if (name.size() > 3 && name.rfind("nC", 0) == 0 && name.back() == 'c') {
    size_t i = 2;
    while (i < name.size() && std::isalpha(static_cast<unsigned char>(name[i]))) ++i;
    digits = name.substr(i, name.size() - 1 - i);
  }
  bool ok = !digits.empty() && digits.size() <= 6;
  for (char c : digits) ok = ok && std::isdigit(static_cast<unsigned char>(c));
  EMBER_CHECK(ok, "unknown layout '" << name
                                     << "': use 'plain', 'channels_last' (or 'nhwc', 'nwc'), or "
                                        "a channel-blocked layout such as 'nChw16c' or "
                                        "'blocked16'");
  return Layout::blocked(std::stoll(digits));
}

}  // namespace ember
