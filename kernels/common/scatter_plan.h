// The plan of CUDA's ordered scatter (kernels/cuda/index.cu): scatter and scatter_add
// applying each index line in the CPU's order (under set_deterministic(true), for
// scatter_add of dtypes without atomics, and for short lines). Plain C++ with MIXT_HD:
// the kernels call the two passes below, and tests/cpu/test_device_kernels_logic.cpp
// runs the same passes on the host.
//
// Note [Ordered scatter] (docs/notes/cuda.md): an index line (the index elements that
// differ only in dim d) writes into one line of the output, of `positions` elements. The
// CPU applies the line's `length` indices in order, so each position receives its writes
// (assignments, or additions rounded each time) in increasing k. The device keeps that
// order per position and shares the line among threads that own disjoint positions:
//   - the positions are cut into `owners` ranges of `span` consecutive positions; one
//     thread applies every write to its range, so no two threads touch one element;
//   - pass 1 (bucket): the indices are cut into `chunks` chunks of `chunk`; thread
//     (line, c) sorts chunk c's valid indices by owner, stably (count per owner, running
//     offsets, place), into its slice of `perm` (offsets within the chunk), and leaves
//     ends[b] = the end of owner b's run there. A bad index is reported and dropped.
//   - pass 2 (apply): thread (line, b) walks chunks 0, 1, ... and its run in each: its
//     positions' writes, in increasing k.
// With few long lines both passes have many threads; with owners == 1 one thread walks
// each line in order (many lines, or short ones) and there is no workspace.
#pragma once

#include <cmath>
#include <cstdint>

#include <mixt/kernels/common/launch_geometry.h>
#include <mixt/kernels/common/layout_index.h>
#include <mixt/runtime/macros.h>

namespace mixt {

struct ScatterPlan {
  int64_t lines = 0;      // index lines
  int64_t length = 0;     // indices per line (the index's size along dim d)
  int64_t positions = 0;  // elements of an output line (the output's size along dim d)
  int64_t owners = 1;     // threads per line in pass 2; 1: one thread walks the line, no passes
  int64_t span = 0;       // positions per owner (the last owns the rest)
  int64_t chunks = 1;     // index chunks per line in pass 1
  int64_t chunk = 0;      // indices per chunk (the last may be shorter)
};

constexpr int64_t kScatterTargetThreads = int64_t{1} << 18;  // about the resident threads of a large GPU
constexpr int64_t kScatterMinChunk = 128;                     // indices a thread walks before a split pays
constexpr int64_t kScatterMaxChunk = int64_t{1} << 30;        // perm and ends hold int32 offsets

// The plan of `lines` index lines of `length` indices into output lines of `positions`.
// The passes are used when the lines alone leave the device mostly idle, a line is
// longer than kScatterMinChunk and has two positions or more. Owners: enough to fill the
// device, at most one per position and about sqrt(length) (pass 2 walks every chunk's
// ends); chunks of at least 4 * owners indices (pass 1 walks its ends twice), so the
// workspace holds at most 2 int32 per index.
inline ScatterPlan make_scatter_plan(int64_t lines, int64_t length, int64_t positions) {
  ScatterPlan p;
  p.lines = lines;
  p.length = length;
  p.positions = positions;
  p.span = positions;
  p.chunk = length;
  if (lines <= 0 || lines >= kScatterTargetThreads || length <= kScatterMinChunk || positions < 2) return p;
  const int64_t want = (kScatterTargetThreads + lines - 1) / lines;
  int64_t owners = static_cast<int64_t>(std::sqrt(static_cast<double>(length)));
  if (owners > want) owners = want;
  if (owners > positions) owners = positions;
  if (owners < 2) return p;
  p.span = (positions + owners - 1) / owners;
  p.owners = (positions + p.span - 1) / p.span;  // no owner without positions
  int64_t chunk = (length + want - 1) / want;
  if (chunk < 4 * p.owners) chunk = 4 * p.owners;
  if (chunk < kScatterMinChunk) chunk = kScatterMinChunk;
  if (chunk > kScatterMaxChunk) chunk = kScatterMaxChunk;
  p.chunk = chunk;
  p.chunks = (length + chunk - 1) / chunk;
  return p;
}

// True when the plan runs the two passes (else one thread per line).
MIXT_HD inline bool scatter_bucketed(const ScatterPlan& p) { return p.owners > 1; }

// The owner of output position w (0 <= w < positions).
MIXT_HD inline int64_t scatter_owner(const ScatterPlan& p, int64_t w) { return div_nonneg(w, p.span); }

// Indices [*first, *end) of chunk c.
MIXT_HD inline void scatter_chunk_bounds(const ScatterPlan& p, int64_t c, int64_t* first, int64_t* end) {
  *first = c * p.chunk;
  *end = *first + p.chunk < p.length ? *first + p.chunk : p.length;
}

// Workspace int32s: ends (owners per chunk of every line), then perm (one per index).
inline int64_t scatter_workspace_ints(const ScatterPlan& p) {
  return scatter_bucketed(p) ? p.lines * p.chunks * p.owners + p.lines * p.length : 0;
}
// Where line `line`'s ends and perm start in the workspace `ws`.
MIXT_HD inline int32_t* scatter_line_ends(const ScatterPlan& p, int32_t* ws, int64_t line) {
  return ws + line * p.chunks * p.owners;
}
MIXT_HD inline int32_t* scatter_line_perm(const ScatterPlan& p, int32_t* ws, int64_t line) {
  return ws + p.lines * p.chunks * p.owners + line * p.length;
}

// Pass 1 for chunk c of one line (`ends`, `perm`: the line's): target(k) is index k's
// position, or -1 for a bad index (reported by target, then dropped).
template <class Target>
MIXT_HD void scatter_bucket_chunk(const ScatterPlan& p, int64_t c, Target&& target, int32_t* ends, int32_t* perm) {
  int32_t* e = ends + c * p.owners;
  int32_t* slice = perm + c * p.chunk;
  int64_t first, end;
  scatter_chunk_bounds(p, c, &first, &end);
  for (int64_t b = 0; b < p.owners; ++b) e[b] = 0;
  for (int64_t k = first; k < end; ++k) {
    const int64_t w = target(k);
    if (w >= 0) ++e[scatter_owner(p, w)];
  }
  int32_t run = 0;  // counts -> starts
  for (int64_t b = 0; b < p.owners; ++b) {
    const int32_t count = e[b];
    e[b] = run;
    run += count;
  }
  for (int64_t k = first; k < end; ++k) {  // starts -> ends
    const int64_t w = target(k);
    if (w >= 0) slice[e[scatter_owner(p, w)]++] = static_cast<int32_t>(k - first);
  }
}

// Pass 2 for owner b of one line: apply(k) for each of its indices, in increasing k.
template <class Apply>
MIXT_HD void scatter_apply_owner(const ScatterPlan& p, int64_t b, const int32_t* ends, const int32_t* perm,
                                 Apply&& apply) {
  for (int64_t c = 0; c < p.chunks; ++c) {
    const int32_t* e = ends + c * p.owners;
    const int32_t* slice = perm + c * p.chunk;
    for (int32_t i = b > 0 ? e[b - 1] : 0; i < e[b]; ++i) apply(c * p.chunk + slice[i]);
  }
}

}  // namespace mixt
