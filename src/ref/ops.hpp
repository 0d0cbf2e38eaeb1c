// The reference op families, one file each. Every function computes in float64 from inputs that
// are already exact values of their dtypes, and returns unrounded results: the executor rounds
// each output to its tensor's dtype exactly once. Inputs are assumed to have passed shape
// inference (infer.cpp), so these functions do not re-validate shapes; the executor compares the
// dims they produce with the inferred ones.
#pragma once

#include <string>
#include <vector>

#include "ref/ref_tensor.hpp"
#include "sinter/ops.hpp"

namespace sinter::ref {

// matmul.cpp --------------------------------------------------------------------------------------
// a [..., M, K] x b [..., K, N] -> [broadcast(...), M, N]
RefTensor matmul(const RefTensor& a, const RefTensor& b);

// conv.cpp ----------------------------------------------------------------------------------------
// x [N, H, W, C], w [K, R, S, C/groups] -> [N, P, Q, K]; cross-correlation, zero padding
RefTensor conv2d(const RefTensor& x, const RefTensor& w, const Conv2dAttrs& at);

// sdpa.cpp ----------------------------------------------------------------------------------------
struct SdpaOutputs {
  RefTensor o;      // [B, H, Sq, Dv]
  RefTensor stats;  // [B, H, Sq, 1], natural log-sum-exp; empty unless emit_stats
};
// q [B, H, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv]; bias (may be null) broadcastable to
// [B, H, Sq, Skv], a keep-mask when bias_is_mask (nonzero = visible), else added to the scores.
SdpaOutputs sdpa(const RefTensor& q, const RefTensor& k, const RefTensor& v, const RefTensor* bias,
                 bool bias_is_mask, const SdpaAttrs& at);

// pointwise.cpp -----------------------------------------------------------------------------------
// Unary op of OpClass::unary, elementwise.
RefTensor unary(OpKind op, const RefTensor& x);
// Binary op of OpClass::binary with numpy broadcasting.
RefTensor binary(OpKind op, const RefTensor& a, const RefTensor& b);
// Comparison of OpClass::compare with numpy broadcasting: 1 or 0.
RefTensor compare(OpKind op, const RefTensor& a, const RefTensor& b);
// cond ? a : b with three-way broadcasting.
RefTensor select(const RefTensor& cond, const RefTensor& a, const RefTensor& b);
// A rank-0 tensor holding the attribute's value (the executor rounds it to at.dtype).
RefTensor constant(const ConstantAttrs& at);
// x, or x * scale with scale broadcast to x (may be null); the executor's rounding is the cast.
RefTensor cast(const RefTensor& x, const RefTensor* scale);

// reduce.cpp --------------------------------------------------------------------------------------
// reduce_sum / mean / max / min / amax over at.axes (all when empty); NaN propagates.
RefTensor reduce(OpKind op, const RefTensor& x, const ReduceAttrs& at);

// arg_reduce.cpp ----------------------------------------------------------------------------------
// argmax / argmin along at.axis: the index of the first extreme; the first NaN wins.
RefTensor arg_reduce(OpKind op, const RefTensor& x, const ArgReduceAttrs& at);

// rowwise.cpp -------------------------------------------------------------------------------------
// All over the last axis of x [..., C].
RefTensor softmax(const RefTensor& x);
RefTensor layernorm(const RefTensor& x, const RefTensor& weight, const RefTensor* bias,
                    double epsilon);
RefTensor rmsnorm(const RefTensor& x, const RefTensor& weight, const RefTensor* bias,
                  double epsilon);
// x [..., D], cos and sin [..., R/2] broadcast over x's leading dims.
RefTensor rope(const RefTensor& x, const RefTensor& cos, const RefTensor& sin,
               const RopeAttrs& at);

// layout.cpp --------------------------------------------------------------------------------------
RefTensor reshape(const RefTensor& x, const ReshapeAttrs& at);
RefTensor permute(const RefTensor& x, const PermuteAttrs& at);
RefTensor slice(const RefTensor& x, const SliceAttrs& at);
RefTensor concat(const std::vector<const RefTensor*>& xs, const ConcatAttrs& at);
// Error(invalid_argument) naming `who` and the index for an index outside [-n, n).
RefTensor gather(const RefTensor& x, const RefTensor& indices, const GatherAttrs& at, const std::string& who);

// collective.cpp ----------------------------------------------------------------------------------
// all_reduce / all_gather / reduce_scatter among at.world ranks: xs[r] is the input of the group's
// rank r (same dims on every rank); returns each rank's output, in rank order.
std::vector<RefTensor> collective(OpKind op, const CollectiveAttrs& at, const std::vector<const RefTensor*>& xs);

}  // namespace sinter::ref
