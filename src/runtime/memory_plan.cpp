#include "memory_plan.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "ember/support/error.h"

namespace ember {
namespace {

int64_t align_up(int64_t n) {
  return (n + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

// Free blocks of a growing arena, by offset; `top` is the arena's current size.
class Arena {
 public:
  int64_t allocate(int64_t size) {
    // Best fit: the smallest free block that holds `size`; the lowest offset on ties.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
    }
    if (best != free_.end()) {
      int64_t offset = best->first, rest = best->second - size;
      free_.erase(best);
      if (rest > 0) free_.emplace(offset + size, rest);
      return offset;
    }
    // No block fits: grow the arena, starting inside a free block that ends at the top.
    int64_t offset = top_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    top_ = offset + size;
    return offset;
  }

  void release(int64_t offset, int64_t size) {
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && offset + size == next->first) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return;
      }
    }
    free_.emplace(offset, size);
  }

  int64_t top() const { return top_; }

 private:
  std::map<int64_t, int64_t> free_;  // offset -> size
  int64_t top_ = 0;
};

// The placement by size (memory_plan.h); `order` holds the non-empty buffers.
std::vector<int64_t> place_by_size(const std::vector<BufferLife>& buffers, std::vector<int> order,
                                   int64_t* workspace_bytes) {
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (buffers[a].nbytes != buffers[b].nbytes) return buffers[a].nbytes > buffers[b].nbytes;
    return a < b;
  });
  std::vector<int64_t> offsets(buffers.size(), 0);
  std::vector<int> placed;  // by offset
  int64_t top = 0;
  for (int i : order) {
    const BufferLife& b = buffers[i];
    const int64_t size = align_up(b.nbytes);
    int64_t best = -1, best_gap = INT64_MAX, end = 0;
    for (int j : placed) {
      const BufferLife& o = buffers[j];
      if (o.last < b.first || b.last < o.first) continue;  // never live together
      const int64_t gap = offsets[j] - end;
      if (gap >= size && gap < best_gap) {
        best = end;
        best_gap = gap;
      }
      end = std::max(end, offsets[j] + align_up(o.nbytes));
    }
    offsets[i] = best >= 0 ? best : end;
    top = std::max(top, offsets[i] + size);
    auto at = std::upper_bound(placed.begin(), placed.end(), offsets[i],
                               [&](int64_t off, int j) { return off < offsets[j]; });
    placed.insert(at, i);
  }
  *workspace_bytes = top;
  return offsets;
}

}  // namespace

MemoryLayout plan_memory(const std::vector<BufferLife>& buffers, int num_launches) {
  MemoryLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<std::vector<int>> born(num_launches), dying(num_launches);
  std::vector<int> nonempty;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLife& b = buffers[i];
    EMBER_ASSERT(b.nbytes >= 0 && 0 <= b.first && b.first <= b.last && b.last < num_launches,
                 "bad buffer lifetime [" << b.first << ", " << b.last << "] of " << b.nbytes
                                         << " bytes for " << num_launches << " launches");
    if (b.nbytes == 0) continue;
    // The arena never grows past the sum of all buffers, so checking that sum checks every
    // offset.
    EMBER_CHECK(b.nbytes <= INT64_MAX - kWorkspaceAlignment &&
                    !__builtin_add_overflow(layout.unshared_bytes, align_up(b.nbytes),
                                            &layout.unshared_bytes),
                "CompiledGraph.run: the graph's buffers need more bytes than int64 can count; "
                "it cannot run on inputs of these shapes");
    nonempty.push_back(static_cast<int>(i));
    born[b.first].push_back(static_cast<int>(i));
    dying[b.last].push_back(static_cast<int>(i));
  }
  Arena arena;
  int64_t live = 0;
  for (int step = 0; step < num_launches; ++step) {
    // Largest first packs better; the index keeps the order deterministic.
    std::sort(born[step].begin(), born[step].end(), [&](int a, int b) {
      if (buffers[a].nbytes != buffers[b].nbytes) return buffers[a].nbytes > buffers[b].nbytes;
      return a < b;
    });
    for (int i : born[step]) {
      layout.offsets[i] = arena.allocate(align_up(buffers[i].nbytes));
      live += align_up(buffers[i].nbytes);
    }
    layout.live_bytes = std::max(layout.live_bytes, live);
    // Freed only after this launch's buffers are placed: a kernel reads its inputs while it
    // writes its outputs, so they must not share memory.
    for (int i : dying[step]) {
      arena.release(layout.offsets[i], align_up(buffers[i].nbytes));
      live -= align_up(buffers[i].nbytes);
    }
  }
  layout.workspace_bytes = arena.top();
  int64_t by_size_bytes = 0;
  std::vector<int64_t> by_size = place_by_size(buffers, nonempty, &by_size_bytes);
  if (by_size_bytes < layout.workspace_bytes) {
    layout.offsets = std::move(by_size);
    layout.workspace_bytes = by_size_bytes;
  }
  return layout;
}

}  // namespace ember
