// Op cases of the spatial nn ops (conv3d, the transposed convolutions, pooling,
// padding, interpolation, grid sampling) against the loops of reference_spatial.h.
// The composites compute narrow floats in float32 (float64 in float64) and round once:
// each case allows half an ulp of the result's dtype plus `work` roundings of the
// compute type at `magnitude` (Note [Tolerances in ulps]).
#include "op_case_builder.h"
#include "reference_spatial.h"

namespace mixt::testing {
namespace {

namespace nnf = nn::functional;
using Ins = std::vector<Tensor>;

// Data inputs of the given shapes and ranges (seeded by position).
std::function<CaseInputs(ScalarType)> ranged(std::vector<std::tuple<Shape, double, double>> shapes) {
  return [shapes](ScalarType dt) {
    CaseInputs ci;
    for (const auto& [shape, lo, hi] : shapes) {
      ci.data |= 1u << ci.in.size();
      ci.in.push_back(data(dt, shape, lo, hi, 60 + static_cast<uint32_t>(ci.in.size())));
    }
    return ci;
  };
}

// A run of f on the inputs alone.
Run on_inputs(std::function<Tensor(const Ins&)> f) {
  return [f](const Ins& in, ScalarType, Device) { return f(in); };
}

// `r` with a size-1 dim inserted at `d` or removed from it (unbatched and 1-D-as-2-D cases).
ref::Ref with_dim(ref::Ref r, size_t d) {
  r.sizes.insert(r.sizes.begin() + static_cast<std::ptrdiff_t>(d), 1);
  return r;
}
ref::Ref without_dim(ref::Ref r, size_t d) {
  r.sizes.erase(r.sizes.begin() + static_cast<std::ptrdiff_t>(d));
  return r;
}

// x (|x| <= 2) times w (|w| <= 1) over `taps` products, then the bias: one rounding per tap at the size of
// the sum of |products|.
Tolerance taps_tol(double taps) { return {0.5, taps + 1, 2 * taps + 1}; }

void add_conv_cases(Builder& b) {
  b.add("conv3d", OpId::conv3d, F, kNoCuda, ranged({{{1, 2, 4, 5, 4}, -2, 2}, {{4, 1, 2, 3, 2}, -1, 1}, {{4}, -1, 1}}),
        on_inputs([](const Ins& in) { return nnf::conv3d(in[0], in[1], in[2], {1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 2); }))
      .with([](const Refs& in, ScalarType) {
        return ref::conv_nd(in[0], in[1], in[2].v, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 2);
      }, taps_tol(12));
  b.add("conv3d/unbatched", OpId::conv3d, F, kNoCuda, ranged({{{2, 3, 3, 4}, -2, 2}, {{3, 2, 2, 2, 3}, -1, 1}}),
        on_inputs([](const Ins& in) { return nnf::conv3d(in[0], in[1], {}, {2}, {1}); }))
      .with([](const Refs& in, ScalarType) {
        return without_dim(ref::conv_nd(with_dim(in[0], 0), in[1], {}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 1), 0);
      }, taps_tol(24));
  b.add("conv_transpose1d", OpId::conv_transpose1d, F, kNoCuda,
        ranged({{{2, 4, 5}, -2, 2}, {{4, 3, 3}, -1, 1}, {{6}, -1, 1}}), on_inputs([](const Ins& in) {
          return nnf::conv_transpose1d(in[0], in[1], in[2], 2, 1, 1, 2);
        }))
      .with([](const Refs& in, ScalarType) { return ref::conv_transpose_nd(in[0], in[1], in[2].v, {2}, {1}, {1}, {1}, 2); },
            taps_tol(6));
  b.add("conv_transpose1d/unbatched_dilated", OpId::conv_transpose1d, F, kNoCuda,
        ranged({{{3, 4}, -2, 2}, {{3, 2, 2}, -1, 1}}),
        on_inputs([](const Ins& in) { return nnf::conv_transpose1d(in[0], in[1], {}, 1, 2, 1, 1, 3); }))
      .with([](const Refs& in, ScalarType) {
        return without_dim(ref::conv_transpose_nd(with_dim(in[0], 0), in[1], {}, {1}, {2}, {1}, {3}, 1), 0);
      }, taps_tol(6));
  b.add("conv_transpose2d", OpId::conv_transpose2d, F, kNoCuda,
        ranged({{{1, 3, 3, 4}, -2, 2}, {{3, 2, 3, 2}, -1, 1}, {{2}, -1, 1}}), on_inputs([](const Ins& in) {
          return nnf::conv_transpose2d(in[0], in[1], in[2], {2, 1}, {1, 0}, {1, 0}, 1, {1, 2});
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::conv_transpose_nd(in[0], in[1], in[2].v, {2, 1}, {1, 0}, {1, 0}, {1, 2}, 1);
      }, taps_tol(18));
  // output_padding 1 with stride 1: allowed by the dilation 2, and reaching past the last window.
  b.add("conv_transpose2d/groups_output_padding", OpId::conv_transpose2d, F, kNoCuda,
        ranged({{{2, 4, 3, 3}, -2, 2}, {{4, 1, 2, 2}, -1, 1}}), on_inputs([](const Ins& in) {
          return nnf::conv_transpose2d(in[0], in[1], {}, {1}, {0}, {1}, 2, {2});
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::conv_transpose_nd(in[0], in[1], {}, {1, 1}, {0, 0}, {1, 1}, {2, 2}, 2);
      }, taps_tol(8));
  b.add("conv_transpose3d", OpId::conv_transpose3d, F, kNoCuda,
        ranged({{{1, 2, 2, 3, 2}, -2, 2}, {{2, 2, 2, 2, 2}, -1, 1}, {{2}, -1, 1}}), on_inputs([](const Ins& in) {
          return nnf::conv_transpose3d(in[0], in[1], in[2], {2, 1, 2}, {0, 1, 1}, {1, 0, 0}, 1, {1, 2, 1});
        }))
      .with([](const Refs& in, ScalarType) {
        return ref::conv_transpose_nd(in[0], in[1], in[2].v, {2, 1, 2}, {0, 1, 1}, {1, 0, 0}, {1, 2, 1}, 1);
      }, taps_tol(16));
}

void add_pool_cases(Builder& b) {
  // A sum in double rounded to the compute type, then the division: two roundings.
  const Tolerance mean_tol{0.5, 2};
  b.add("avg_pool1d", OpId::avg_pool1d, F, kNoCuda, ranged({{{2, 3, 9}, -3, 3}}), on_inputs([](const Ins& in) {
          return nnf::avg_pool1d(in[0], 3, 2, 1, /*ceil_mode=*/true, /*count_include_pad=*/false);
        }))
      .with([](const Refs& in, ScalarType) { return ref::avg_pool_nd(in[0], {{3}, {2}, {1}, {1}}, true, false); },
            mean_tol);
  b.add("avg_pool2d", OpId::avg_pool2d, F, kNoCuda, ranged({{{1, 2, 5, 6}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::avg_pool2d(in[0], {3, 2}, {2}, {1}); }))
      .with([](const Refs& in, ScalarType) {
        return ref::avg_pool_nd(in[0], {{3, 2}, {2, 2}, {1, 1}, {1, 1}}, false, true);
      }, mean_tol);
  // The last window starts inside the input but reaches past the padding: its divisor stops there.
  b.add("avg_pool2d/ceil_unbatched", OpId::avg_pool2d, F, kNoCuda, ranged({{{2, 6, 7}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::avg_pool2d(in[0], {3}, {2}, {1}, true, true); }))
      .with([](const Refs& in, ScalarType) {
        return without_dim(ref::avg_pool_nd(with_dim(in[0], 0), {{3, 3}, {2, 2}, {1, 1}, {1, 1}}, true, true), 0);
      }, mean_tol);
  b.add("avg_pool3d", OpId::avg_pool3d, F, kNoCuda, ranged({{{1, 2, 4, 5, 3}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::avg_pool3d(in[0], {2, 3, 2}, {2, 1, 1}, {1, 1, 0}, true, false); }))
      .with([](const Refs& in, ScalarType) {
        return ref::avg_pool_nd(in[0], {{2, 3, 2}, {2, 1, 1}, {1, 1, 0}, {1, 1, 1}}, true, false);
      }, mean_tol);
  // Maxima are values of the input; ties (after rounding to a narrow dtype) pick the first tap.
  auto max_case = [&](const char* label, OpId op, Shape shape, ref::Window win, bool ceil, bool indices,
                      std::function<Tensor(const Ins&)> f) {
    b.add(label, op, F, kNoCuda, ranged({{shape, -3, 3}}), on_inputs(f), indices ? kInt64Out : kSame)
        .with([=](const Refs& in, ScalarType) { return ref::max_pool_nd(in[0], win, ceil, indices); }, kExact);
  };
  const ref::Window w1{{3}, {2}, {1}, {2}};
  max_case("max_pool1d", OpId::max_pool1d, {2, 3, 8}, w1, true, false,
           [](const Ins& in) { return nnf::max_pool1d(in[0], 3, 2, 1, 2, true); });
  max_case("max_pool1d/indices", OpId::max_pool1d, {2, 3, 8}, w1, true, true,
           [](const Ins& in) { return nnf::max_pool1d_with_indices(in[0], 3, 2, 1, 2, true).indices; });
  const ref::Window w2{{2, 3}, {2, 1}, {1, 1}, {1, 2}};
  max_case("max_pool2d", OpId::max_pool2d, {1, 2, 5, 6}, w2, false, false,
           [](const Ins& in) { return nnf::max_pool2d(in[0], {2, 3}, {2, 1}, {1}, {1, 2}); });
  max_case("max_pool2d/indices", OpId::max_pool2d, {1, 2, 5, 6}, w2, false, true,
           [](const Ins& in) { return nnf::max_pool2d_with_indices(in[0], {2, 3}, {2, 1}, {1}, {1, 2}).indices; });
  const ref::Window w3{{3, 3}, {2, 2}, {1, 1}, {1, 1}};
  max_case("max_pool2d/ceil", OpId::max_pool2d, {1, 2, 6, 5}, w3, true, false,
           [](const Ins& in) { return nnf::max_pool2d(in[0], {3}, {2}, {1}, {1}, true); });
  // Products with 1 / count in the compute type, summed (GEMM): about two roundings per window element.
  b.add("adaptive_avg_pool1d", OpId::adaptive_avg_pool1d, F, kNoCuda, ranged({{{2, 3, 7}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::adaptive_avg_pool1d(in[0], 3); }))
      .with([](const Refs& in, ScalarType) { return ref::adaptive_avg_pool_nd(in[0], {3}); }, {0.5, 8, 3});
  b.add("adaptive_avg_pool2d", OpId::adaptive_avg_pool2d, F, kNoCuda, ranged({{{2, 5, 7}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::adaptive_avg_pool2d(in[0], {3, 4}); }))
      .with([](const Refs& in, ScalarType) {
        return without_dim(ref::adaptive_avg_pool_nd(with_dim(in[0], 0), {3, 4}), 0);
      }, {0.5, 16, 3});
}

void add_pad_cases(Builder& b) {
  // Padding copies values: exact.
  b.add("constant_pad_nd", OpId::constant_pad_nd, A, A, ranged({{{2, 3, 4}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::constant_pad_nd(in[0], {1, 2, 0, 1}, 1); }))
      .with([](const Refs& in, ScalarType dt) { return ref::pad_nd(in[0], {1, 2, 0, 1}, 'c', stored(dt, 1)); }, kExact);
  b.add("constant_pad_nd/crop", OpId::constant_pad_nd, A, A, ranged({{{2, 3, 4}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::pad(in[0], {-1, 2, 1, -2, 1, 0}, "constant", 2); }))
      .with([](const Refs& in, ScalarType dt) {
        // A crop is a pad that reads nothing: take the kept block, then pad.
        const ref::Ref kept = ref::pad_nd(in[0], {-1, 0, 0, -2}, 'c', 0);
        return ref::pad_nd(kept, {0, 2, 1, 0, 1, 0}, 'c', stored(dt, 2));
      }, kExact);
  auto pad_case = [&](const char* label, OpId op, Shape shape, Shape pads, char mode, const char* name) {
    const std::string m = name;
    b.add(label, op, A, A, ranged({{shape, -3, 3}}), on_inputs([=](const Ins& in) { return nnf::pad(in[0], pads, m); }))
        .with([=](const Refs& in, ScalarType) { return ref::pad_nd(in[0], pads.vec(), mode, 0); }, kExact);
  };
  pad_case("reflection_pad1d", OpId::reflection_pad1d, {2, 3, 5}, {2, 4}, 'r', "reflect");
  pad_case("reflection_pad2d", OpId::reflection_pad2d, {1, 2, 4, 5}, {1, 3, 2, 0}, 'r', "reflect");
  pad_case("replication_pad1d", OpId::replication_pad1d, {3, 4}, {3, 1}, 'e', "replicate");
  pad_case("replication_pad2d", OpId::replication_pad2d, {2, 3, 4}, {2, 0, 1, 4}, 'e', "replicate");
}

void add_resample_cases(Builder& b) {
  b.add("upsample_nearest2d", OpId::upsample_nearest2d, F, kNoCuda, ranged({{{1, 2, 3, 4}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::interpolate(in[0], {5, 7}); }))
      .with([](const Refs& in, ScalarType) { return ref::upsample_nearest2d(in[0], 5, 7, {}, {}); }, kExact);
  // floor(3 * 1.7) = 5 rows and floor(4 * 0.6) = 2 columns, read at out / scale.
  b.add("upsample_nearest2d/scale", OpId::upsample_nearest2d, F, kNoCuda, ranged({{{2, 1, 3, 4}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::interpolate(in[0], {}, {1.7, 0.6}); }))
      .with([](const Refs& in, ScalarType) { return ref::upsample_nearest2d(in[0], 5, 2, 1.7, 0.6); }, kExact);
  b.add("upsample_nearest2d/1d", OpId::upsample_nearest2d, F, kNoCuda, ranged({{{2, 2, 5}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::interpolate(in[0], {10}); }))
      .with([](const Refs& in, ScalarType) {
        return without_dim(ref::upsample_nearest2d(with_dim(in[0], 2), 1, 10, {}, {}), 2);
      }, kExact);
  // The weights in the compute type (a rounding or two each), four products summed: values <= 3.
  const Tolerance lerp{0.5, 8, 3};
  b.add("upsample_bilinear2d", OpId::upsample_bilinear2d, F, kNoCuda, ranged({{{1, 2, 4, 5}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::interpolate(in[0], {7, 3}, {}, "bilinear"); }))
      .with([](const Refs& in, ScalarType) { return ref::upsample_bilinear2d(in[0], 7, 3, false, {}, {}); }, lerp);
  b.add("upsample_bilinear2d/align_corners", OpId::upsample_bilinear2d, F, kNoCuda, ranged({{{2, 1, 3, 4}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::interpolate(in[0], {5, 6}, {}, "bilinear", true); }))
      .with([](const Refs& in, ScalarType) { return ref::upsample_bilinear2d(in[0], 5, 6, true, {}, {}); }, lerp);
  b.add("upsample_bilinear2d/scale", OpId::upsample_bilinear2d, F, kNoCuda, ranged({{{1, 2, 3, 4}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::interpolate(in[0], {}, {2.5}, "bilinear"); }))
      .with([](const Refs& in, ScalarType) { return ref::upsample_bilinear2d(in[0], 7, 10, false, 2.5, 2.5); },
            lerp);
  b.add("upsample_bilinear2d/linear_1d", OpId::upsample_bilinear2d, F, kNoCuda, ranged({{{2, 3, 6}, -3, 3}}),
        on_inputs([](const Ins& in) { return nnf::interpolate(in[0], {4}, {}, "linear"); }))
      .with([](const Refs& in, ScalarType) {
        return without_dim(ref::upsample_bilinear2d(with_dim(in[0], 2), 1, 4, false, {}, {}), 2);
      }, lerp);
  // Grid points partly outside [-1, 1]; the corner weights in the compute type, four products summed.
  auto grid_case = [&](const char* label, const char* mode, const char* padding, bool align) {
    const std::string m = mode, p = padding;
    b.add(label, OpId::grid_sampler_2d, F, kNoCuda, ranged({{{2, 3, 4, 5}, -3, 3}, {{2, 3, 4, 2}, -1.2, 1.2}}),
          on_inputs([=](const Ins& in) { return nnf::grid_sample(in[0], in[1], m, p, align); }))
        .with([=](const Refs& in, ScalarType) {
          return ref::grid_sample2d(in[0], in[1], m == "nearest", p == "border", align);
        }, {0.5, 12, 3});
  };
  grid_case("grid_sampler_2d", "bilinear", "zeros", false);
  grid_case("grid_sampler_2d/border_align", "bilinear", "border", true);
  grid_case("grid_sampler_2d/nearest", "nearest", "zeros", true);
  grid_case("grid_sampler_2d/nearest_border", "nearest", "border", false);
}

}  // namespace

void add_spatial_cases(Builder& b) {
  add_conv_cases(b);
  add_pool_cases(b);
  add_pad_cases(b);
  add_resample_cases(b);
}

}  // namespace mixt::testing
