// Structural hashing. Tensors are numbered canonically (graph inputs first, then node outputs in
// topological order) so names never matter. Without shapes, only ranks remain of the dims, and
// shape-valued attributes (reshape targets, slice bounds) count by their length alone: two graphs
// that differ only in sizes share that hash, which is what a cross-shape cache wants.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unordered_map>

#include "sinter/graph.hpp"

namespace sinter {
namespace {

class Hasher {
 public:
  void add(uint64_t v) {
    // splitmix64 finalizer over a running state: cheap, well mixed, platform independent
    state_ += 0x9e3779b97f4a7c15ull + v;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    state_ = z ^ (z >> 31);
  }
  void add_double(double d) {
    // Every NaN is the same constant: its sign and payload mean nothing to any op, and a graph
    // file cannot keep them.
    if (std::isnan(d)) d = std::numeric_limits<double>::quiet_NaN();
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    add(bits);
  }
  void add_dims(const Dims& d, bool values) {
    add(d.size());
    if (values) {
      for (int64_t x : d) add(static_cast<uint64_t>(x));
    }
  }
  uint64_t value() const { return state_; }

 private:
  uint64_t state_ = 0x5157e4ull;
};

void hash_attrs(Hasher& h, const Attrs& attrs, bool with_shapes) {
  h.add(attrs.index());
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, MatmulAttrs>) {
          h.add(static_cast<uint64_t>(a.compute));
          h.add(a.out_dtype ? 1 + static_cast<uint64_t>(*a.out_dtype) : 0);
        } else if constexpr (std::is_same_v<A, Conv2dAttrs>) {
          for (int i = 0; i < 2; ++i) {
            h.add(a.stride[i]);
            h.add(a.pad_begin[i]);
            h.add(a.pad_end[i]);
            h.add(a.dilation[i]);
          }
          h.add(a.groups);
          h.add(a.out_dtype ? 1 + static_cast<uint64_t>(*a.out_dtype) : 0);
        } else if constexpr (std::is_same_v<A, SdpaAttrs>) {
          h.add(a.scale.has_value());
          if (a.scale) h.add_double(*a.scale);
          h.add(static_cast<uint64_t>(a.causal));
          h.add(a.has_bias);
          h.add(a.emit_stats);
        } else if constexpr (std::is_same_v<A, ConstantAttrs>) {
          h.add_double(a.value);
          h.add(static_cast<uint64_t>(a.dtype));
        } else if constexpr (std::is_same_v<A, CastAttrs>) {
          h.add(static_cast<uint64_t>(a.dtype));
        } else if constexpr (std::is_same_v<A, ReduceAttrs>) {
          h.add_dims(a.axes, true);
          h.add(a.keepdim);
          h.add(a.out_dtype ? 1 + static_cast<uint64_t>(*a.out_dtype) : 0);
        } else if constexpr (std::is_same_v<A, ArgReduceAttrs>) {
          h.add(a.axis);
          h.add(a.keepdim);
        } else if constexpr (std::is_same_v<A, NormAttrs>) {
          h.add_double(a.epsilon);
          h.add(a.has_bias);
        } else if constexpr (std::is_same_v<A, RopeAttrs>) {
          h.add(a.interleaved);
        } else if constexpr (std::is_same_v<A, ReshapeAttrs>) {
          h.add_dims(a.dims, with_shapes);
        } else if constexpr (std::is_same_v<A, PermuteAttrs>) {
          h.add_dims(a.perm, true);
        } else if constexpr (std::is_same_v<A, SliceAttrs>) {
          h.add_dims(a.starts, with_shapes);
          h.add_dims(a.ends, with_shapes);
          h.add_dims(a.steps, with_shapes);
        } else if constexpr (std::is_same_v<A, ConcatAttrs>) {
          h.add(a.axis);
        } else if constexpr (std::is_same_v<A, GatherAttrs>) {
          h.add(a.axis);
        } else if constexpr (std::is_same_v<A, CollectiveAttrs>) {
          // The group is part of the computation (which ranks take part), so its name counts.
          h.add(a.group.size());
          for (char ch : a.group) h.add(static_cast<unsigned char>(ch));
          h.add(static_cast<uint64_t>(a.world));
          h.add(static_cast<uint64_t>(a.reduce));
          h.add(static_cast<uint64_t>(a.axis));
        }
      },
      attrs);
}

}  // namespace

uint64_t structural_hash(const Graph& g, bool with_shapes) {
  Hasher h;
  std::unordered_map<TensorId, uint64_t> canon;
  auto tensor_desc = [&](TensorId id) {
    const TensorInfo& t = g.tensor(id);
    h.add(static_cast<uint64_t>(t.dtype));
    h.add_dims(t.dims, with_shapes);
    if (t.is_input) h.add_dims(t.strides, with_shapes);
  };
  h.add(g.inputs().size());
  for (TensorId id : g.inputs()) {
    canon[id] = canon.size();
    tensor_desc(id);
  }
  for (NodeId ni : g.topological_order()) {
    const Node& n = g.node(ni);
    h.add(static_cast<uint64_t>(n.op));
    hash_attrs(h, n.attrs, with_shapes);
    h.add(n.inputs.size());
    for (TensorId t : n.inputs) h.add(canon.at(t));
    h.add(n.outputs.size());
    for (TensorId t : n.outputs) {
      canon[t] = canon.size();
      tensor_desc(t);
    }
  }
  h.add(g.outputs().size());
  for (TensorId t : g.outputs()) h.add(canon.at(t));
  return h.value();
}

}  // namespace sinter
