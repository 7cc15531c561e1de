// The meta rules: how each op's output shapes and dtypes follow from its inputs and
// attributes. op_table.def names one per op; they serve the meta device (the Meta
// dispatch key's kernel), autocast's output-dtype prediction and explain, and the
// tests that check every backend against them. Host code. See Note [Meta functions].
#pragma once

#include <mixt/dispatcher/op.h>

namespace mixt::meta {

// Markers, never called: the op's one device-independent kernel (views, `to`, `cat`)
// or its composite implementation computes its outputs on meta tensors as on any device.
void uses_kernel(const OpCall&, OutputMeta*);
void uses_composite(const OpCall&, OutputMeta*);

// ---- creation (kernels/meta/creation.cpp) ----
void factory(const OpCall&, OutputMeta*);   // empty, full: the sizes and dtype attributes
void arange(const OpCall&, OutputMeta*);
void linspace(const OpCall&, OutputMeta*);
void eye(const OpCall&, OutputMeta*);
void self(const OpCall&, OutputMeta*);      // in-place fills: input 0 as it is
void random_fill(const OpCall&, OutputMeta*);  // uniform_, normal_: a floating input 0
void random_ints(const OpCall&, OutputMeta*);  // random_: [low, high) exact in input 0's dtype
void copy(const OpCall&, OutputMeta*);      // copy_: the source broadcasts to the destination

// ---- elementwise (kernels/meta/elementwise.cpp) ----
void unary_numeric(const OpCall&, OutputMeta*);  // the input's dtype; bool refused
void unary_any(const OpCall&, OutputMeta*);      // the input's dtype, bool included
void unary_float(const OpCall&, OutputMeta*);    // floating results (integers give float32)
void unary_floating(const OpCall&, OutputMeta*); // the input's dtype, floating inputs only
void hardtanh(const OpCall&, OutputMeta*);       // unary_numeric; uint8 only with nonnegative bounds
void round(const OpCall&, OutputMeta*);          // unary_numeric; integers only to 0 decimals
void predicate(const OpCall&, OutputMeta*);      // bool results (isnan, logical_not, ...)
void clamp(const OpCall&, OutputMeta*);
void binary_any(const OpCall&, OutputMeta*);     // promoted, bool included (add, mul, maximum)
void binary_numeric(const OpCall&, OutputMeta*); // promoted, bool refused (sub, pow)
void binary_float(const OpCall&, OutputMeta*);   // promoted to floating (atan2)
void div(const OpCall&, OutputMeta*);            // floating for true division, promoted when rounded
void compare(const OpCall&, OutputMeta*);
void logical(const OpCall&, OutputMeta*);
void addcmul(const OpCall&, OutputMeta*);
void addcdiv(const OpCall&, OutputMeta*);
void lerp(const OpCall&, OutputMeta*);
void where(const OpCall&, OutputMeta*);

// ---- indexing (kernels/meta/index.cpp) ----
void index_select(const OpCall&, OutputMeta*);
void gather(const OpCall&, OutputMeta*);
void scatter(const OpCall&, OutputMeta*);
void masked_fill(const OpCall&, OutputMeta*);
void embedding(const OpCall&, OutputMeta*);
// Ops whose result size depends on the data (nonzero, masked_select, unique): they raise.
void data_dependent(const OpCall&, OutputMeta*);
void sort(const OpCall&, OutputMeta*);  // sort: values and int64 indices; argsort: the indices
void topk(const OpCall&, OutputMeta*);

// ---- reductions and scans (kernels/meta/reduce.cpp) ----
void reduce_sum(const OpCall&, OutputMeta*);           // sum, prod: integers accumulate as int64
void reduce_mean(const OpCall&, OutputMeta*);
void reduce_same(const OpCall&, OutputMeta*);          // amax, amin
void reduce_with_indices(const OpCall&, OutputMeta*);  // max, min along a dim: values, int64 indices
void arg_reduce(const OpCall&, OutputMeta*);
void variance(const OpCall&, OutputMeta*);
void norm(const OpCall&, OutputMeta*);
void logsumexp(const OpCall&, OutputMeta*);
void reduce_bool(const OpCall&, OutputMeta*);          // all, any
void scan(const OpCall&, OutputMeta*);                 // cumsum, cumprod

// ---- matmul (kernels/meta/matmul.cpp) ----
void mm(const OpCall&, OutputMeta*);
void bmm(const OpCall&, OutputMeta*);
void addmm(const OpCall&, OutputMeta*);
void baddbmm(const OpCall&, OutputMeta*);
void linear_backward(const OpCall&, OutputMeta*);  // the asked-for grads: input's shape, [out, in], [out]
void scaled_mm(const OpCall&, OutputMeta*);  // the result in out_dtype; amax (float32) for float8 results

// ---- neural-network ops (kernels/meta/nn.cpp) ----
void softmax(const OpCall&, OutputMeta*);  // softmax, log_softmax
void layer_norm(const OpCall&, OutputMeta*);
void rms_norm(const OpCall&, OutputMeta*);
void softmax_backward(const OpCall&, OutputMeta*);  // softmax_backward, log_softmax_backward
void cross_entropy_rows(const OpCall&, OutputMeta*);  // cross_entropy_rows and its backward
void activation_backward(const OpCall&, OutputMeta*);  // gelu_backward, silu_backward
void norm_backward(const OpCall&, OutputMeta*);     // layer_norm_backward, rms_norm_backward
void im2col(const OpCall&, OutputMeta*);
void col2im(const OpCall&, OutputMeta*);

// ---- grad scaler and fused optimizer steps (kernels/meta/amp.cpp) ----
void amp_unscale_check(const OpCall&, OutputMeta*);
void amp_update_scale(const OpCall&, OutputMeta*);
void optim_step(const OpCall&, OutputMeta*);

// True when `rule` is a real meta function (not uses_kernel / uses_composite).
inline bool is_rule(MetaFn rule) { return rule != nullptr && rule != &uses_kernel && rule != &uses_composite; }

}  // namespace mixt::meta
