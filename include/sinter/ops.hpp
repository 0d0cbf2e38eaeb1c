// The operations of a Sinter graph and their attributes. Every op is listed once in OpKind; its
// family (OpClass), name in JSON files, and arity live in one table (op_info).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sinter/dtype.hpp"

namespace sinter {

enum class OpKind : uint8_t {
  // anchors
  matmul,
  conv2d,
  sdpa,
  // unary pointwise
  identity,
  relu,
  gelu,       // x * Phi(x), with the exact erf
  gelu_tanh,  // the tanh approximation
  silu,
  sigmoid,
  tanh,
  exp,
  log,
  sqrt,
  rsqrt,
  abs,
  neg,
  reciprocal,
  square,
  // binary pointwise, numpy broadcasting
  add,
  sub,
  mul,
  div,
  max,
  min,
  pow,
  // comparisons (bool result) and select
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  select,  // select(cond, a, b) = cond ? a : b
  constant,  // a scalar (rank-0) tensor
  cast,      // cast(x) or cast(x, scale) = round(x * scale) in the target dtype
  // reductions
  reduce_sum,
  reduce_mean,
  reduce_max,
  reduce_min,
  reduce_amax,  // max |x|
  // index reductions along one axis (i64 result)
  argmax,  // index of the first maximum; NaN counts as the maximum
  argmin,  // index of the first minimum; NaN counts as the minimum
  // row-wise (last axis)
  softmax,
  layernorm,
  rmsnorm,
  rope,
  // layout
  reshape,
  permute,
  slice,
  concat,
  // indexing
  gather,  // gather(x, indices, axis): x's slices along `axis` picked by integer indices (GatherAttrs)
  // collectives over a named group of `world` ranks (CollectiveAttrs)
  all_reduce,      // every rank gets the elementwise reduction of every rank's input
  all_gather,      // every rank gets the ranks' inputs concatenated along `axis`, in rank order
  reduce_scatter,  // rank r gets the r-th of `world` equal parts, along `axis`, of the reduction
};

enum class OpClass : uint8_t {
  matmul,
  conv,
  sdpa,
  unary,
  binary,
  compare,
  select,
  constant,
  cast,
  reduce,
  arg_reduce,
  softmax,
  norm,
  rope,
  layout,
  gather,
  collective,
};

struct OpInfo {
  OpKind kind;
  std::string_view name;  // the name in JSON files and messages
  OpClass cls;
  int min_inputs;
  int max_inputs;  // -1: any number (concat)
};

const OpInfo& op_info(OpKind op);
std::string_view to_string(OpKind op);
std::optional<OpKind> parse_op(std::string_view name);
std::vector<OpKind> all_ops();
// The elementwise ops (unary, binary, compare, select, cast): what fuses into a region's prologue
// and epilogue, and what a tensor-parallel split passes through unchanged.
bool is_pointwise(OpKind op);

// ---- attributes, one struct per op family that has any --------------------------------------

// The precision the tensor cores accumulate in. The CPU reference always accumulates in float64;
// engines honour this (tf32 allows f32 inputs to be rounded to tf32 for the multiply).
enum class ComputeType : uint8_t { f32, tf32, f16 };
std::string_view to_string(ComputeType c);
std::optional<ComputeType> parse_compute_type(std::string_view name);

struct MatmulAttrs {
  ComputeType compute = ComputeType::f32;
  std::optional<DType> out_dtype;  // default: the inputs' dtype
  bool operator==(const MatmulAttrs&) const = default;
};

struct Conv2dAttrs {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> pad_begin{0, 0};  // top, left
  std::array<int64_t, 2> pad_end{0, 0};    // bottom, right
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  std::optional<DType> out_dtype;
  bool operator==(const Conv2dAttrs&) const = default;
};

// Causal masks. Query i may see key j when
//   top_left:     j <= i
//   bottom_right: j <= i + (Skv - Sq)   (the last query sees every key: decode and chunked prefill)
enum class CausalMask : uint8_t { none, top_left, bottom_right };
std::string_view to_string(CausalMask c);
std::optional<CausalMask> parse_causal(std::string_view name);

// Inputs: q [B,H,Sq,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv] and, when has_bias, a bias broadcastable
// to [B,H,Sq,Skv]: a float bias is added to the scaled scores, a bool mask keeps keys where true.
// Outputs: o [B,H,Sq,Dv] and, when emit_stats, stats [B,H,Sq,1] f32 = the log-sum-exp of each
// row of the masked, scaled scores. A row with no visible key gives o = 0 and stats = -inf.
struct SdpaAttrs {
  std::optional<double> scale;  // default 1/sqrt(D)
  CausalMask causal = CausalMask::none;
  bool has_bias = false;
  bool emit_stats = false;
  bool operator==(const SdpaAttrs&) const = default;
};

struct ConstantAttrs {
  double value = 0;
  DType dtype = DType::f32;
  bool operator==(const ConstantAttrs&) const = default;
};

// cast(x[, scale]): y = round_to_dtype(x * scale, dtype). The optional scale input is a float
// tensor broadcastable to x (usually a scalar, as in fp8 scaling).
struct CastAttrs {
  DType dtype = DType::f32;
  bool operator==(const CastAttrs&) const = default;
};

struct ReduceAttrs {
  std::vector<int64_t> axes;  // sorted, unique, non-negative; empty means every axis
  bool keepdim = false;
  std::optional<DType> out_dtype;  // default: the input's dtype
  bool operator==(const ReduceAttrs&) const = default;
};

// argmax(x) / argmin(x) along one axis: the i64 index of the first maximum (minimum) of each
// slice, as torch.argmax/argmin: ties give the lowest index, and a NaN beats every number (NaN
// propagates as in reduce_max), so a slice with NaNs gives the index of its first NaN. -0.0 and
// +0.0 are equal.
struct ArgReduceAttrs {
  int64_t axis = 0;  // non-negative once in the graph
  bool keepdim = false;
  bool operator==(const ArgReduceAttrs&) const = default;
};

// layernorm(x, weight[, bias]) and rmsnorm(x, weight[, bias]) over the last axis; weight and bias
// have shape [C] where C is x's last dimension.
struct NormAttrs {
  double epsilon = 1e-5;
  bool has_bias = false;
  bool operator==(const NormAttrs&) const = default;
};

// rope(x, cos, sin): x [..., D]; cos and sin [..., R/2], broadcastable to x's leading dims, with
// R <= D even. The first R channels of each row rotate; the rest pass through.
//   half_split (GPT-NeoX, Llama): pairs (x[i], x[i + R/2])
//   interleaved (GPT-J):          pairs (x[2i], x[2i + 1])
// Each pair (a, b) becomes (a cos_i - b sin_i, b cos_i + a sin_i).
struct RopeAttrs {
  bool interleaved = false;
  bool operator==(const RopeAttrs&) const = default;
};

struct ReshapeAttrs {
  std::vector<int64_t> dims;  // resolved (no -1) once in the graph
  bool operator==(const ReshapeAttrs&) const = default;
};

struct PermuteAttrs {
  std::vector<int64_t> perm;  // output axis i is input axis perm[i]
  bool operator==(const PermuteAttrs&) const = default;
};

// One entry per input axis, normalized: 0 <= start < end <= dim, step >= 1.
struct SliceAttrs {
  std::vector<int64_t> starts, ends, steps;
  bool operator==(const SliceAttrs&) const = default;
};

struct ConcatAttrs {
  int64_t axis = 0;  // non-negative once in the graph
  bool operator==(const ConcatAttrs&) const = default;
};

// gather(x, indices): out[o..., k..., i...] = x[o..., indices[k...], i...], where o are x's axes
// before `axis` and i its axes after it (numpy.take, ONNX Gather, torch.index_select and, with
// axis 0 of a [vocabulary, d] table, an embedding). out dims = x.dims[:axis] + indices.dims +
// x.dims[axis + 1:]. indices are i32 or i64; an index j in [-n, n), n = x.dims[axis], picks slice
// j, or n + j when negative. An index outside that range is an error: the CPU reference raises
// Error(invalid_argument) naming it; a GPU kernel stops with a device-side trap (a CUDA launch
// failure, as torch's device-side assert: the CUDA context cannot be used afterwards).
struct GatherAttrs {
  int64_t axis = 0;  // non-negative once in the graph
  bool operator==(const GatherAttrs&) const = default;
};

// How all_reduce and reduce_scatter combine the ranks' values. The CPU reference reduces in
// rank order (rank 0, 1, ...) in float64 and rounds once to the dtype.
enum class CollectiveReduce : uint8_t { sum, max };
std::string_view to_string(CollectiveReduce r);
std::optional<CollectiveReduce> parse_collective_reduce(std::string_view name);

// all_reduce(x), all_gather(x), reduce_scatter(x) among the `world` ranks of the group named
// `group`. Every rank of the group runs the same collective, in the same order among the group's
// collectives, on an input of the same dtype and dims. With world == 1 each is the identity.
//   all_reduce:     out = reduce(x of every rank), x's dims
//   all_gather:     out dims = x's dims with dims[axis] * world
//   reduce_scatter: out dims = x's dims with dims[axis] / world (must divide evenly)
struct CollectiveAttrs {
  std::string group;  // the communicator group's name, non-empty
  int64_t world = 1;  // ranks in the group, >= 1
  CollectiveReduce reduce = CollectiveReduce::sum;  // all_reduce, reduce_scatter
  int64_t axis = 0;   // all_gather, reduce_scatter; non-negative once in the graph
  bool operator==(const CollectiveAttrs&) const = default;
};
// The most ranks a group may have (far beyond any machine; keeps dims * world inside int64).
inline constexpr int64_t kMaxWorld = int64_t{1} << 16;

using Attrs = std::variant<std::monostate, MatmulAttrs, Conv2dAttrs, SdpaAttrs, ConstantAttrs,
                           CastAttrs, ReduceAttrs, ArgReduceAttrs, NormAttrs, RopeAttrs, ReshapeAttrs, PermuteAttrs,
                           SliceAttrs, ConcatAttrs, GatherAttrs, CollectiveAttrs>;

// The attribute struct an op carries (monostate for ops without attributes).
Attrs default_attrs(OpKind op);

}  // namespace sinter
