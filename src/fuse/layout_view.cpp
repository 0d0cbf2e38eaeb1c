#include "fuse/layout_view.hpp"

#include <algorithm>
#include <variant>

#include "sinter/ops.hpp"

namespace sinter::fuse {

std::optional<Dims> reshape_strides(const Dims& from, const Dims& from_strides, const Dims& to) {
  int64_t numel = 1;
  for (int64_t d : from) numel *= d;
  Dims out(to.size(), 1);
  if (numel == 0) {
    // no element is ever addressed: any strides will do
    for (size_t i = to.size(); i-- > 1;) out[i - 1] = out[i] * std::max<int64_t>(to[i], 1);
    return out;
  }
  // Walk both shapes from the innermost dim. The dims of `from` fall into chunks whose elements
  // lie one after the other (each dim's stride = the next dim's stride x its size, size-1 dims
  // skipped); dims of `to` may split and merge only within one chunk.
  int64_t view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t chunk_stride = from.empty() ? 1 : from_strides.back();
  int64_t chunk_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
    chunk_numel *= from[static_cast<size_t>(d)];
    const bool chunk_ends = d == 0 || (from[static_cast<size_t>(d - 1)] != 1 &&
                                       from_strides[static_cast<size_t>(d - 1)] != chunk_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < chunk_numel || to[static_cast<size_t>(view_d)] == 1)) {
      out[static_cast<size_t>(view_d)] = view_numel * chunk_stride;
      view_numel *= to[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != chunk_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = from_strides[static_cast<size_t>(d - 1)];
      chunk_numel = 1;
      view_numel = 1;
    }
  }
  // leading size-1 dims of `to` left over
  while (view_d >= 0) {
    if (to[static_cast<size_t>(view_d)] != 1) return std::nullopt;
    out[static_cast<size_t>(view_d)] = view_numel * chunk_stride;
    --view_d;
  }
  return out;
}

std::optional<StridedView> apply_layout_op(const Node& op, const StridedView& base) {
  StridedView v;
  switch (op.op) {
    case OpKind::slice: {
      const auto& at = std::get<SliceAttrs>(op.attrs);
      v.offset = base.offset;
      for (size_t i = 0; i < base.dims.size(); ++i) {
        v.offset += at.starts[i] * base.strides[i];
        v.strides.push_back(base.strides[i] * at.steps[i]);
      }
      return v;  // dims: filled by the caller from the node's output
    }
    case OpKind::permute: {
      const auto& perm = std::get<PermuteAttrs>(op.attrs).perm;
      v.offset = base.offset;
      for (int64_t p : perm) {
        v.dims.push_back(base.dims[static_cast<size_t>(p)]);
        v.strides.push_back(base.strides[static_cast<size_t>(p)]);
      }
      return v;
    }
    case OpKind::reshape:
      v.offset = base.offset;
      return v;  // strides: from the output dims, by the caller
    default:
      return std::nullopt;
  }
}

std::optional<StridedView> compose_layout_chain(const Graph& g, const std::vector<NodeId>& chain) {
  if (chain.empty()) return std::nullopt;
  const TensorInfo& first = g.tensor(g.node(chain.front()).inputs.at(0));
  StridedView v{first.dims, first.strides, 0};
  for (NodeId n : chain) {
    const Node& nd = g.node(n);
    const Dims& out = g.tensor(nd.outputs.at(0)).dims;
    std::optional<StridedView> next = apply_layout_op(nd, v);
    if (!next) return std::nullopt;
    if (nd.op == OpKind::reshape) {
      std::optional<Dims> st = reshape_strides(v.dims, v.strides, out);
      if (!st) return std::nullopt;
      next->strides = *st;
    }
    next->dims = out;
    v = std::move(*next);
  }
  return v;
}

}  // namespace sinter::fuse
