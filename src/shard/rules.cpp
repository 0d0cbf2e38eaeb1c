// The sharding rules: for each op, how its inputs' shardings determine its outputs' (and pin the
// graph inputs it reads that nothing has constrained yet, so a bias or a KV cache follows the
// activation it meets). Only splits that keep every rank's part one contiguous block of one axis
// are carried; anything else stops the pass with a message naming the node.
#include <algorithm>
#include <optional>

#include "shard/sharding.hpp"
#include "sinter/error.hpp"

namespace sinter::shard {

std::string to_string(Sharding s) {
  switch (s.kind) {
    case Sharding::Kind::unset: return "unconstrained";
    case Sharding::Kind::replicated: return "replicated";
    case Sharding::Kind::split: return "split along axis " + std::to_string(s.axis);
    case Sharding::Kind::partial: return "a partial sum";
  }
  return "?";
}

void fail_at(const Node& n, const std::string& msg) {
  throw Error(ErrorCode::unsupported,
              "shard_tensor_parallel: node '" + n.name + "' (" + std::string(to_string(n.op)) + "): " + msg);
}

void ShardState::require(TensorId t, Sharding want, const Node& reader) {
  const TensorInfo& info = g_.tensor(t);
  Sharding& have = of_[static_cast<size_t>(t)];
  if (have == want) return;
  if (have.kind == Sharding::Kind::unset) {
    if (want.is_split() && info.dims[static_cast<size_t>(want.axis)] % world_ != 0) {
      fail_at(reader, "input '" + info.name + "' " + dims_to_string(info.dims) + " would be split along axis " +
                          std::to_string(want.axis) + ", whose " +
                          std::to_string(info.dims[static_cast<size_t>(want.axis)]) + " entries do not divide among " +
                          std::to_string(world_) + " ranks");
    }
    have = want;
    return;
  }
  fail_at(reader, "needs '" + info.name + "' " + to_string(want) + ", but it is " + to_string(have));
}

namespace {

using Kind = Sharding::Kind;

const Dims& dims_of(const ShardState& s, TensorId t) { return s.graph().tensor(t).dims; }
int64_t rank_of(const ShardState& s, TensorId t) { return static_cast<int64_t>(dims_of(s, t).size()); }

// A value read where a replicated one is fine: an unset input becomes replicated.
Sharding settled(ShardState& s, const Node& n, TensorId t) {
  if (s.of(t).kind == Kind::unset) s.require(t, Sharding::replicated(), n);
  return s.of(t);
}

// Operands that broadcast together to `out` (pointwise ops; rope's cos and sin against x): the
// split axis in output coordinates is the one any operand is split along; every other operand must
// then be split along it too, or be broadcast (absent or of size 1) on it.
Sharding broadcast_rule(ShardState& s, const Node& n, const std::vector<size_t>& operands, const Dims& out) {
  const auto out_rank = static_cast<int64_t>(out.size());
  std::optional<int64_t> axis;
  for (size_t i : operands) {
    const Sharding sh = s.of(n.inputs[i]);
    if (!sh.is_split()) continue;
    const int64_t oa = sh.axis + out_rank - rank_of(s, n.inputs[i]);
    if (axis && *axis != oa) {
      fail_at(n, "its operands are split along different axes (" + std::to_string(*axis) + " and " +
                     std::to_string(oa) + " of the result)");
    }
    axis = oa;
  }
  if (!axis) {
    for (size_t i : operands) s.require(n.inputs[i], Sharding::replicated(), n);
    return Sharding::replicated();
  }
  for (size_t i : operands) {
    const Dims& d = dims_of(s, n.inputs[i]);
    const int64_t ia = *axis - (out_rank - static_cast<int64_t>(d.size()));
    const bool broadcast = ia < 0 || d[static_cast<size_t>(ia)] == 1;
    s.require(n.inputs[i], broadcast ? Sharding::replicated() : Sharding::split(ia), n);
  }
  return Sharding::split(*axis);
}

// Column-parallel: a replicated A times B split along N gives C split along N. Row-parallel: A
// split along K meets B split along K (pinned here when B is an unset input: the attention output
// and down projections) and gives partial sums. A split along M or a batch axis meets a
// replicated B.
Sharding matmul_rule(ShardState& s, const Node& n) {
  const TensorId a = n.inputs[0], b = n.inputs[1];
  const int64_t ra = rank_of(s, a), rb = rank_of(s, b), ro = rank_of(s, n.outputs[0]);
  const Sharding sa = settled(s, n, a);
  if (sa.is_split()) {
    if (sa.axis == ra - 1) {
      s.require(b, Sharding::split(rb - 2), n);
      return Sharding::partial();
    }
    s.require(b, Sharding::replicated(), n);
    const int64_t ib = sa.axis - (ra - rb);  // the same batch axis of B (batch axes align at the right)
    if (sa.axis < ra - 2 && ib >= 0 && dims_of(s, b)[static_cast<size_t>(ib)] != 1) {
      fail_at(n, "its input 0 is split along batch axis " + std::to_string(sa.axis) +
                     ", which its replicated input 1 also has");
    }
    return Sharding::split(sa.axis + ro - ra);
  }
  const Sharding sb = settled(s, n, b);
  if (!sb.is_split()) return Sharding::replicated();
  if (sb.axis == rb - 1) return Sharding::split(ro - 1);
  fail_at(n, "input 1 '" + s.graph().tensor(b).name + "' is " + to_string(sb) +
                 " but input 0 is replicated; only a split along N (column-parallel) fits a replicated input 0");
}

// Heads split by rank: q, k and v split along axis 1 (rank r holds query heads [r H/W, (r+1) H/W)
// and key/value heads [r Hkv/W, (r+1) Hkv/W), which are exactly the ones its query heads read
// under GQA), or all replicated.
Sharding sdpa_rule(ShardState& s, const Node& n) {
  const Sharding sq = settled(s, n, n.inputs[0]);
  if (sq.kind == Kind::replicated) {
    for (size_t i = 1; i < n.inputs.size(); ++i) s.require(n.inputs[i], Sharding::replicated(), n);
    return Sharding::replicated();
  }
  if (sq != Sharding::split(1)) fail_at(n, "q is " + to_string(sq) + "; only a split by heads (axis 1) is supported");
  s.require(n.inputs[1], Sharding::split(1), n);
  s.require(n.inputs[2], Sharding::split(1), n);
  if (n.inputs.size() > 3) {
    const Dims& bias = dims_of(s, n.inputs[3]);
    const int64_t ia = 1 - (4 - static_cast<int64_t>(bias.size()));
    const bool broadcast = ia < 0 || bias[static_cast<size_t>(ia)] == 1;
    s.require(n.inputs[3], broadcast ? Sharding::replicated() : Sharding::split(ia), n);
  }
  return Sharding::split(1);
}

// The split axis of a reshape's output when its input is split along `a`: the input's and the
// output's axes (those of size > 1) fall into groups of equal products; `a` must lead its group,
// and then each rank's part is a contiguous block of the group's leading output axis, which must
// divide by the world. [1, 1, H*dh] split along 2 -> [1, 1, H, dh] split along 2 (by heads).
std::optional<size_t> reshape_axis(const Dims& x, const Dims& y, size_t a, int world) {
  std::vector<size_t> xs, ys;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != 1) xs.push_back(i);
  }
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] != 1) ys.push_back(i);
  }
  size_t p = 0, q = 0;
  while (p < xs.size() && q < ys.size()) {
    const size_t p0 = p, q0 = q;
    int64_t px = x[xs[p++]], py = y[ys[q++]];
    while (px != py) {
      if (px < py) {
        if (p == xs.size()) return std::nullopt;
        px *= x[xs[p++]];
      } else {
        if (q == ys.size()) return std::nullopt;
        py *= y[ys[q++]];
      }
    }
    for (size_t i = p0; i < p; ++i) {
      if (xs[i] != a) continue;
      if (i != p0 || y[ys[q0]] % world != 0) return std::nullopt;
      return ys[q0];
    }
  }
  return std::nullopt;
}

NodeShard layout_rule(ShardState& s, const Node& n) {
  const TensorId x = n.inputs[0];
  const Dims& xd = dims_of(s, x);
  NodeShard r{{}, n.attrs};
  if (n.op == OpKind::concat) {
    const auto axis = std::get<ConcatAttrs>(n.attrs).axis;
    std::optional<Sharding> split;
    for (TensorId t : n.inputs) {
      if (s.of(t).is_split()) split = s.of(t);
    }
    if (split && split->axis == axis) fail_at(n, "it joins along axis " + std::to_string(axis) + ", the split axis");
    for (TensorId t : n.inputs) s.require(t, split.value_or(Sharding::replicated()), n);
    r.outputs = {split.value_or(Sharding::replicated())};
    return r;
  }
  const Sharding sx = settled(s, n, x);
  if (!sx.is_split()) {
    r.outputs = {sx};
    return r;
  }
  const auto a = static_cast<size_t>(sx.axis);
  switch (n.op) {
    case OpKind::reshape: {
      auto& at = std::get<ReshapeAttrs>(r.attrs);
      const auto o = reshape_axis(xd, at.dims, a, s.world());
      if (!o) {
        fail_at(n, "reshapes '" + s.graph().tensor(x).name + "' " + dims_to_string(xd) + ", split along axis " +
                       std::to_string(a) + ", to " + dims_to_string(at.dims) +
                       ": a rank's part would not be one contiguous block of one axis that divides by " +
                       std::to_string(s.world()) + " (a fused projection split along N does this; split its "
                       "parts into separate weights)");
      }
      at.dims[*o] /= s.world();
      r.outputs = {Sharding::split(static_cast<int64_t>(*o))};
      return r;
    }
    case OpKind::permute: {
      const auto& perm = std::get<PermuteAttrs>(n.attrs).perm;
      const auto it = std::find(perm.begin(), perm.end(), sx.axis);
      r.outputs = {Sharding::split(it - perm.begin())};
      return r;
    }
    case OpKind::slice: {
      auto& at = std::get<SliceAttrs>(r.attrs);
      if (at.starts[a] != 0 || at.ends[a] != xd[a] || at.steps[a] != 1) {
        fail_at(n, "it slices [" + std::to_string(at.starts[a]) + ", " + std::to_string(at.ends[a]) + ") step " +
                       std::to_string(at.steps[a]) + " of axis " + std::to_string(a) +
                       ", the split axis; only the whole axis can be kept");
      }
      at.ends[a] = xd[a] / s.world();
      r.outputs = {sx};
      return r;
    }
    default: break;
  }
  fail_at(n, "has no sharding rule");
}

// A reduction keeps a split along an axis it does not reduce.
Sharding reduce_rule(ShardState& s, const Node& n) {
  const Sharding sx = settled(s, n, n.inputs[0]);
  if (!sx.is_split()) return sx;
  std::vector<int64_t> axes;
  bool keepdim = false;
  if (const auto* r = std::get_if<ReduceAttrs>(&n.attrs)) {
    axes = r->axes;
    keepdim = r->keepdim;
    if (axes.empty()) {
      for (int64_t i = 0; i < rank_of(s, n.inputs[0]); ++i) axes.push_back(i);
    }
  } else {
    const auto& ar = std::get<ArgReduceAttrs>(n.attrs);
    axes = {ar.axis};
    keepdim = ar.keepdim;
  }
  if (std::find(axes.begin(), axes.end(), sx.axis) != axes.end()) {
    fail_at(n, "it reduces axis " + std::to_string(sx.axis) + ", the split axis");
  }
  const auto before = std::count_if(axes.begin(), axes.end(), [&](int64_t x) { return x < sx.axis; });
  return Sharding::split(keepdim ? sx.axis : sx.axis - before);
}

std::vector<size_t> all_inputs(const Node& n) {
  std::vector<size_t> v(n.inputs.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

}  // namespace

NodeShard shard_node(ShardState& s, const Node& n) {
  const Dims& out = dims_of(s, n.outputs[0]);
  const auto one = [&](Sharding sh) { return NodeShard{{sh}, n.attrs}; };
  switch (op_info(n.op).cls) {
    case OpClass::unary:
    case OpClass::binary:
    case OpClass::compare:
    case OpClass::select:
    case OpClass::cast: return one(broadcast_rule(s, n, all_inputs(n), out));
    case OpClass::constant: return one(Sharding::replicated());
    case OpClass::matmul: return one(matmul_rule(s, n));
    case OpClass::sdpa: {
      const Sharding sh = sdpa_rule(s, n);
      return NodeShard{std::vector<Sharding>(n.outputs.size(), sh), n.attrs};
    }
    case OpClass::softmax:
    case OpClass::norm:
    case OpClass::rope: {
      const Sharding sx = settled(s, n, n.inputs[0]);
      if (sx.is_split() && sx.axis == rank_of(s, n.inputs[0]) - 1) {
        fail_at(n, "it works along the last axis of '" + s.graph().tensor(n.inputs[0]).name +
                       "', which is split; it must stay whole on every rank");
      }
      if (n.op == OpKind::rope) {
        broadcast_rule(s, n, {0, 1, 2}, out);
      } else {
        for (size_t i = 1; i < n.inputs.size(); ++i) s.require(n.inputs[i], Sharding::replicated(), n);
      }
      return one(sx);
    }
    case OpClass::reduce:
    case OpClass::arg_reduce: return one(reduce_rule(s, n));
    case OpClass::layout: return layout_rule(s, n);
    case OpClass::conv:
    case OpClass::gather:
      // an embedding table (and any gathered tensor) stays whole on every rank
      for (TensorId t : n.inputs) s.require(t, Sharding::replicated(), n);
      return one(Sharding::replicated());
    case OpClass::collective:
      fail_at(n, "the graph already holds collectives; shard_tensor_parallel takes a one-device graph");
  }
  fail_at(n, "has no sharding rule");
}

}  // namespace sinter::shard
