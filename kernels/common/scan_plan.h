// The launch plan of the CUDA scans (cumsum, cumprod: kernels/cuda/scan.cu) and the
// order in which they fold, as plain C++ with MIXT_HD so that
// tests/cpu/test_device_kernels_logic.cpp runs both on the host.
//
// Note [Chunked scans] (docs/notes/cuda.md): a scan has `lines` independent lines of n
// elements. Short lines, or enough lines to fill the device, are scanned one thread per
// line in order: the CPU's order, so the CPU's bits. A few long lines are cut into
// `chunks` consecutive chunks of `chunk` elements (the last may be shorter), one thread
// per (line, chunk), in three passes:
//   1. totals:  thread (line, c) folds chunk c from the identity, for c < chunks - 1;
//   2. carries: thread (line) folds the totals in chunk order, in place, so that slot c
//               holds the fold of chunks 0..c;
//   3. rescan:  thread (line, c) folds chunk c in order starting from slot c - 1 (the
//               identity for c = 0) and stores every prefix.
// The plan depends on the shape only: no atomics, the same bits on every run.
#pragma once

#include <cstdint>
#include <vector>

#include <mixt/kernels/common/launch_geometry.h>
#include <mixt/runtime/macros.h>

namespace mixt {

struct ScanPlan {
  int64_t lines = 0;   // independent lines
  int64_t n = 0;       // elements per line
  int64_t chunks = 1;  // per line; 1: one thread scans its whole line in order
  int64_t chunk = 0;   // elements per chunk (n when chunks == 1)
};

constexpr int64_t kScanTargetThreads = int64_t{1} << 18;  // about the resident threads of a large GPU
constexpr int64_t kScanMinChunk = 128;                     // elements a thread scans before a split pays
constexpr int64_t kScanMaxChunks = 4096;                   // bounds pass 2's serial walk over a line's chunks

// The plan of `lines` lines of n elements (both >= 0).
// Chunks are used when the lines alone leave the device mostly idle and a line has at
// least three chunks of kScanMinChunk: enough chunks per line to fill the device, at most
// kScanMaxChunks (pass 2 walks them in order).
inline ScanPlan make_scan_plan(int64_t lines, int64_t n) {
  ScanPlan p;
  p.lines = lines;
  p.n = n;
  p.chunk = n;
  if (lines <= 0 || lines >= kScanTargetThreads || n < 3 * kScanMinChunk) return p;
  int64_t chunks = (kScanTargetThreads + lines - 1) / lines;
  if (chunks > n / kScanMinChunk) chunks = n / kScanMinChunk;
  if (chunks > kScanMaxChunks) chunks = kScanMaxChunks;
  if (chunks < 3) return p;  // two chunks would not shorten the longest walk
  p.chunk = (n + chunks - 1) / chunks;
  p.chunks = (n + p.chunk - 1) / p.chunk;  // no empty chunk
  return p;
}

// Threads of the per-(line, chunk) passes (1 and 3): a grid-stride loop over them.
MIXT_HD inline int64_t scan_chunk_threads(const ScanPlan& p) { return p.lines * p.chunks; }

// Elements [*first, *end) of chunk c.
MIXT_HD inline void scan_chunk_bounds(const ScanPlan& p, int64_t c, int64_t* first, int64_t* end) {
  *first = c * p.chunk;
  *end = *first + p.chunk < p.n ? *first + p.chunk : p.n;
}

// Accumulator slots of the workspace (one per chunk of every line; none without chunks).
inline int64_t scan_workspace_slots(const ScanPlan& p) { return p.chunks > 1 ? p.lines * p.chunks : 0; }

// The longest walk one thread makes: the whole line, or a chunk twice plus the carries.
inline int64_t scan_serial_steps(const ScanPlan& p) { return p.chunks > 1 ? 2 * p.chunk + p.chunks : p.n; }

// The passes, as the kernels run them (one call per thread) and the host replays them.
// value(k) gives element k of the line in the accumulator's type, op(acc, v) folds and
// store(k, acc) receives prefix k.

// Pass 1: the fold of chunk c from the identity.
template <class Acc, class Op, class Value>
MIXT_HD Acc scan_chunk_total(const ScanPlan& p, int64_t c, Acc identity, const Op& op, Value&& value) {
  int64_t first, end;
  scan_chunk_bounds(p, c, &first, &end);
  Acc acc = identity;
  for (int64_t k = first; k < end; ++k) acc = op(acc, value(k));
  return acc;
}

// Pass 2: one line's slots (chunk totals, chunks - 1 of them) folded in place in chunk
// order: slot c becomes the fold of chunks 0..c.
template <class Acc, class Op>
MIXT_HD void scan_fold_slots(const ScanPlan& p, Acc* slots, const Op& op) {
  for (int64_t c = 1; c + 1 < p.chunks; ++c) slots[c] = op(slots[c - 1], slots[c]);
}

// Pass 3 (with chunks == 1, the whole line): chunk c scanned in order from `carry`,
// which is slots[c - 1] of pass 2, or the identity for c = 0.
template <class Acc, class Op, class Value, class Store>
MIXT_HD void scan_chunk(const ScanPlan& p, int64_t c, Acc carry, const Op& op, Value&& value, Store&& store) {
  int64_t first, end;
  scan_chunk_bounds(p, c, &first, &end);
  for (int64_t k = first; k < end; ++k) {
    carry = op(carry, value(k));
    store(k, carry);
  }
}

// One line scanned on the host in the device's order under plan `p` (the three passes).
template <class Acc, class Op, class Value, class Store>
void scan_in_device_order(const ScanPlan& p, Acc identity, const Op& op, Value&& value, Store&& store) {
  std::vector<Acc> slots(static_cast<size_t>(p.chunks));
  for (int64_t c = 0; c + 1 < p.chunks; ++c) slots[static_cast<size_t>(c)] = scan_chunk_total(p, c, identity, op, value);
  scan_fold_slots(p, slots.data(), op);
  for (int64_t c = 0; c < p.chunks; ++c)
    scan_chunk(p, c, c == 0 ? identity : slots[static_cast<size_t>(c - 1)], op, value, store);
}

}  // namespace mixt
