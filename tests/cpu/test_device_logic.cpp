// The logic of the CUDA kernels that does not need a GPU, run on the host in every
// build: the per-element index math of the device loops (kernels/common/layout_index.h)
// against a plain walk over the tensors, the dense-run decision, launch shapes, the
// vector width of the fast path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include <mixt/kernels/common/launch_geometry.h>
#include <mixt/kernels/common/layout_index.h>
#include <mixt/mixt.h>

using namespace mixt;

namespace {

// One operand: a tensor whose sizes broadcast to the output's.
struct Operand {
  Shape sizes, strides;
  int64_t element_size;
};

// Byte offset of output multi-index `idx` in `op` (broadcast dims contribute nothing).
int64_t naive_offset(const Operand& op, const std::vector<int64_t>& idx) {
  const int lead = static_cast<int>(idx.size()) - op.sizes.size();
  int64_t off = 0;
  for (int d = 0; d < op.sizes.size(); ++d)
    if (op.sizes[d] != 1) off += idx[static_cast<size_t>(d + lead)] * op.strides[d] * op.element_size;
  return off;
}

using Row = std::vector<int64_t>;  // offsets of one element in every operand

// Every element's offsets, walking the output in row-major order.
std::vector<Row> naive_rows(const Shape& out, const std::vector<Operand>& ops) {
  std::vector<Row> rows;
  std::vector<int64_t> idx(static_cast<size_t>(out.size()), 0);
  for (int64_t n = 0; n < out.numel(); ++n) {
    Row r;
    for (const Operand& op : ops) r.push_back(naive_offset(op, idx));
    rows.push_back(r);
    for (int d = out.size() - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < out[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return rows;
}

// Every element's offsets as the device loop computes them from the layout.
template <int N>
std::vector<Row> layout_rows(const Shape& out, const std::vector<Operand>& ops) {
  std::vector<OperandGeometry> geom;
  for (const Operand& op : ops) geom.push_back({&op.sizes, &op.strides, op.element_size});
  const StridedLayout L = make_strided_layout(out, geom);
  REQUIRE(L.numel == out.numel());
  std::vector<Row> rows;
  for (int64_t i = 0; i < L.numel; ++i) {
    int64_t off[N];
    element_offsets(L, i, off);
    rows.emplace_back(off, off + N);
  }
  return rows;
}

// Contiguous strides of `sizes`, then the dims permuted by `perm` (a transposed view).
Shape permuted_strides(const Shape& sizes, const std::vector<int>& perm) {
  std::vector<int64_t> phys(static_cast<size_t>(sizes.size()));
  for (size_t k = 0; k < perm.size(); ++k) phys[k] = sizes[perm[k]];
  std::vector<int64_t> st(phys.size());
  int64_t s = 1;
  for (int d = static_cast<int>(phys.size()) - 1; d >= 0; --d) st[static_cast<size_t>(d)] = s, s *= phys[static_cast<size_t>(d)];
  std::vector<int64_t> logical(phys.size());
  for (size_t k = 0; k < perm.size(); ++k) logical[static_cast<size_t>(perm[k])] = st[k];
  Shape r;
  for (int64_t v : logical) r.push_back(v);
  return r;
}

}  // namespace

TEST_CASE("element_offsets visits every element of five operands as a plain walk does", "[device-logic]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int nd = 1 + static_cast<int>(rng() % 5);
    Shape out;
    for (int d = 0; d < nd; ++d) out.push_back(1 + static_cast<int64_t>(rng() % 4));
    std::vector<Operand> ops;
    for (int k = 0; k < 5; ++k) {
      // Output: a permuted dense tensor. Inputs: broadcast dims, dropped leading dims, permutations, steps.
      Shape s;
      const int drop = k == 0 ? 0 : static_cast<int>(rng() % static_cast<unsigned>(nd));
      for (int d = drop; d < nd; ++d) s.push_back(k > 0 && rng() % 3 == 0 ? 1 : out[d]);
      std::vector<int> perm(static_cast<size_t>(s.size()));
      for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int>(d);
      std::shuffle(perm.begin(), perm.end(), rng);
      Shape st = permuted_strides(s, perm);
      if (k > 0 && rng() % 2 == 0)
        for (int d = 0; d < st.size(); ++d) st[d] *= 2;  // a stepped slice
      const int64_t es = int64_t{1} << (rng() % 4);
      ops.push_back({s, st, es});
    }
    std::vector<Row> want = naive_rows(out, ops), got = layout_rows<5>(out, ops);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    INFO("trial " << trial << " shape " << out.str());
    REQUIRE(got == want);
  }
}

TEST_CASE("is_dense: one run for contiguous operands, never for transposed or stepped ones", "[device-logic]") {
  const Shape sizes{4, 6}, dense{6, 1}, transposed{1, 4}, stepped{12, 2}, none;
  auto check = [&](const Shape& in_strides, bool scalar_in, bool want) {
    const OperandGeometry g[2] = {{&sizes, &dense, 4}, {scalar_in ? &none : &sizes, scalar_in ? &none : &in_strides, 4}};
    const bool ignore[2] = {false, scalar_in};
    const StridedLayout L = make_strided_layout(sizes, g);
    CHECK(is_dense(L, g, ignore) == want);
  };
  check(dense, false, true);
  check(transposed, false, false);
  check(stepped, false, false);
  check(none, true, true);  // a scalar operand does not break the run
}

TEST_CASE("launch shapes: blocks of a grid-stride loop and the vector width", "[device-logic]") {
  CHECK(blocks_for(0) == 1);
  CHECK(blocks_for(1) == 1);
  CHECK(blocks_for(kBlockThreads) == 1);
  CHECK(blocks_for(kBlockThreads + 1) == 2);
  CHECK(blocks_for(int64_t{1} << 40) == static_cast<unsigned>(kMaxBlocks));
  const uintptr_t aligned[3] = {4096, 8192, 0}, misaligned[2] = {4096, 4100};
  CHECK(vector_elements(4, aligned, 3) == 4);
  CHECK(vector_elements(2, aligned, 3) == 8);
  CHECK(vector_elements(1, aligned, 3) == 16);
  CHECK(vector_elements(8, aligned, 3) == 2);
  CHECK(vector_elements(4, misaligned, 2) == 1);
  CHECK(vector_elements(3, aligned, 3) == 1);
}

TEST_CASE("div_nonneg agrees with 64-bit division on both sides of 2^32", "[device-logic]") {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const int64_t a = static_cast<int64_t>(rng() >> (1 + rng() % 62)), b = 1 + static_cast<int64_t>(rng() >> (1 + rng() % 62));
    REQUIRE(div_nonneg(a, b) == a / b);
  }
}
