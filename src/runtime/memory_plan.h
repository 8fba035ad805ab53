// The workspace planner: places buffers with known lifetimes in one block of memory.
//
// A buffer lives from the launch that first writes it to the last launch that uses it
// (both inclusive). Buffers whose lifetimes do not overlap may share memory. Two greedy
// placements are made and the one with the smaller workspace is kept (the first on ties):
//  - in launch order: at each launch the buffers born there are placed (largest first) in
//    the smallest free block that holds them (best fit), growing the workspace only when
//    none does; then the buffers that die there are freed and merged with free neighbours;
//  - by size: the buffers, largest first, each in the smallest gap between the buffers
//    already placed that live at the same time, else above them all. With all lifetimes
//    known, this avoids the holes the first leaves when a large buffer is born after
//    smaller long-lived ones (a backward graph's im2col buffers: 216 MB against 132 MB
//    live at most for ResNet-18's at batch 8).
// Every offset is a multiple of kWorkspaceAlignment.
//
// Private to the runtime (src/runtime); CompiledGraph is its only user.
#pragma once

#include <cstdint>
#include <vector>

namespace ember {

constexpr int64_t kWorkspaceAlignment = 64;

struct BufferLife {
  int64_t nbytes = 0;
  int first = 0;  // the launch that writes it
  int last = 0;   // the last launch that reads it (>= first)
};

struct MemoryLayout {
  std::vector<int64_t> offsets;  // one per buffer, in bytes from the workspace's start
  int64_t workspace_bytes = 0;   // the workspace size the offsets need
  int64_t unshared_bytes = 0;    // the sum of the (aligned) buffer sizes: no reuse at all
  int64_t live_bytes = 0;        // the most bytes live at one launch: no placement needs less
};

// Places `buffers` for a run of `num_launches` launches. Zero-byte buffers get offset 0
// and take no space.
MemoryLayout plan_memory(const std::vector<BufferLife>& buffers, int num_launches);

}  // namespace ember
