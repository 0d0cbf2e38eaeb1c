// Per-op attributes in graph files: reading (with defaults and convenience forms), finishing the
// shape-dependent ones once input shapes are known, and writing them back in one fixed order.
// The key lists below are the documentation's tables (docs/graph-format.md); keep them in step.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "ir/json_detail.hpp"

namespace sinter::json_detail {
namespace {

constexpr int64_t kMaxAxis = kMaxRank - 1;
// Python-style slice bounds are clamped to the dimension; this only keeps `v + dim` in range.
constexpr int64_t kMaxSliceBound = int64_t{1} << 62;

std::vector<std::string_view> attr_keys(OpKind op) {
  switch (op_info(op).cls) {
    case OpClass::matmul: return {"compute", "out_dtype"};
    case OpClass::conv:
      return {"stride", "pad_begin", "pad_end", "padding", "dilation", "groups", "out_dtype"};
    case OpClass::sdpa: return {"scale", "causal", "has_bias", "emit_stats"};
    case OpClass::constant: return {"value", "dtype"};
    case OpClass::cast: return {"dtype"};
    case OpClass::reduce: return {"axes", "keepdim", "out_dtype"};
    case OpClass::arg_reduce: return {"axis", "keepdim"};
    case OpClass::norm: return {"epsilon", "has_bias"};
    case OpClass::rope: return {"interleaved"};
    case OpClass::gather: return {"axis"};
    case OpClass::collective:
      switch (op) {
        case OpKind::all_reduce: return {"group", "world", "reduce"};
        case OpKind::all_gather: return {"group", "world", "axis"};
        default: return {"group", "world", "axis", "reduce"};
      }
    case OpClass::layout:
      switch (op) {
        case OpKind::reshape: return {"dims"};
        case OpKind::permute: return {"perm"};
        case OpKind::slice: return {"starts", "ends", "steps", "axes"};
        default: return {"axis"};
      }
    default: return {};
  }
}

template <typename F>
void if_present(const Cursor& a, std::string_view key, F&& f) {
  if (auto c = a.find(key)) f(*c);
}

// Fills `at` from the attrs object `a`; keys that are absent keep the defaults of ops.hpp.
void read(const Cursor& a, MatmulAttrs& at) {
  if_present(a, "compute", [&](const Cursor& c) {
    const std::string s = c.as_string("a compute type");
    auto t = parse_compute_type(s);
    if (!t) {
      c.fail("unknown compute type " + Json(s).dump() + did_you_mean(s, {"f32", "tf32", "f16"}) +
             "; known: f32, tf32, f16");
    }
    at.compute = *t;
  });
  if_present(a, "out_dtype", [&](const Cursor& c) { at.out_dtype = c.as_dtype(); });
}

void read(const Cursor& a, Conv2dAttrs& at) {
  if_present(a, "stride", [&](const Cursor& c) { at.stride = c.as_int_pair(1, kMaxConvAttr); });
  if_present(a, "dilation", [&](const Cursor& c) { at.dilation = c.as_int_pair(1, kMaxConvAttr); });
  if_present(a, "groups", [&](const Cursor& c) { at.groups = c.as_int(1, kMaxConvAttr); });
  if (auto c = a.find("padding")) {
    // Symmetric padding, a convenience for hand-written files; saving writes pad_begin/pad_end.
    if (a.find("pad_begin") || a.find("pad_end")) {
      c->fail("give either \"padding\" (symmetric) or \"pad_begin\"/\"pad_end\", not both");
    }
    at.pad_begin = at.pad_end = c->as_int_pair(0, kMaxConvAttr);
  }
  if_present(a, "pad_begin",
             [&](const Cursor& c) { at.pad_begin = c.as_int_pair(0, kMaxConvAttr); });
  if_present(a, "pad_end", [&](const Cursor& c) { at.pad_end = c.as_int_pair(0, kMaxConvAttr); });
  if_present(a, "out_dtype", [&](const Cursor& c) { at.out_dtype = c.as_dtype(); });
}

void read(const Cursor& a, SdpaAttrs& at) {
  if_present(a, "scale", [&](const Cursor& c) { at.scale = c.as_double(); });
  if_present(a, "causal", [&](const Cursor& c) {
    const std::string s = c.as_string("a causal mask kind");
    auto m = parse_causal(s);
    if (!m) {
      c.fail("unknown causal mask " + Json(s).dump() +
             did_you_mean(s, {"none", "top_left", "bottom_right"}) +
             "; known: none, top_left, bottom_right");
    }
    at.causal = *m;
  });
  if_present(a, "has_bias", [&](const Cursor& c) { at.has_bias = c.as_bool(); });
  if_present(a, "emit_stats", [&](const Cursor& c) { at.emit_stats = c.as_bool(); });
}

void read(const Cursor& a, ConstantAttrs& at) {
  if_present(a, "value", [&](const Cursor& c) { at.value = c.as_double(); });
  if_present(a, "dtype", [&](const Cursor& c) { at.dtype = c.as_dtype(); });
}

void read(const Cursor& a, CastAttrs& at) {
  if_present(a, "dtype", [&](const Cursor& c) { at.dtype = c.as_dtype(); });
}

void read(const Cursor& a, ReduceAttrs& at) {
  // Negative and repeated axes are allowed here; resolve_attrs() normalizes them.
  if_present(a, "axes",
             [&](const Cursor& c) { at.axes = c.as_ints(-kMaxRank, kMaxAxis, kMaxRank); });
  if_present(a, "keepdim", [&](const Cursor& c) { at.keepdim = c.as_bool(); });
  if_present(a, "out_dtype", [&](const Cursor& c) { at.out_dtype = c.as_dtype(); });
}

void read(const Cursor& a, ArgReduceAttrs& at) {
  // Required: torch's argmax without a dim flattens, which is no axis; a file must say which.
  // A negative axis counts from the end; resolve_attrs() normalizes it.
  at.axis = a.at("axis").as_int(-kMaxRank, kMaxAxis);
  if_present(a, "keepdim", [&](const Cursor& c) { at.keepdim = c.as_bool(); });
}

void read(const Cursor& a, NormAttrs& at) {
  if_present(a, "epsilon", [&](const Cursor& c) { at.epsilon = c.as_double(); });
  if_present(a, "has_bias", [&](const Cursor& c) { at.has_bias = c.as_bool(); });
}

void read(const Cursor& a, RopeAttrs& at) {
  if_present(a, "interleaved", [&](const Cursor& c) { at.interleaved = c.as_bool(); });
}

void read(const Cursor& a, ReshapeAttrs& at) {
  // Required: a missing target shape is a mistake, not a request for a scalar.
  const Cursor c = a.at("dims");
  at.dims = c.as_ints(-1, kMaxDim, kMaxRank);
  int64_t product = 1;
  bool wildcard = false;
  for (int64_t d : at.dims) {
    if (d == 0) c.fail("dims " + dims_to_string(at.dims) + ": every entry must be >= 1 or -1");
    if (d == -1) {
      if (wildcard) c.fail("dims " + dims_to_string(at.dims) + ": only one entry may be -1");
      wildcard = true;
    } else if (product > kMaxElements / d) {
      c.fail("dims " + dims_to_string(at.dims) + " have more than " + format_bound(kMaxElements) +
             " elements");
    } else {
      product *= d;
    }
  }
}

void read(const Cursor& a, PermuteAttrs& at) {
  at.perm = a.at("perm").as_ints(0, kMaxAxis, kMaxRank);
}

void read(const Cursor& a, SliceAttrs& at, std::optional<std::vector<int64_t>>& axes) {
  const bool python = a.find("axes").has_value();
  // The stored form is already normalized (0 <= start < end <= dim); the "axes" form takes
  // python-style bounds, which resolve_attrs() clamps like Graph::slice.
  // Python-style bounds take any int64 (INT64_MAX as "to the end" is how ONNX exports write it)
  // and are clamped to +-2^62 here, past every dim, so later arithmetic cannot overflow.
  const int64_t lo = python ? std::numeric_limits<int64_t>::min() : 0;
  const int64_t hi = python ? std::numeric_limits<int64_t>::max() : kMaxDim;
  at.starts = a.at("starts").as_ints(lo, hi, kMaxRank);
  at.ends = a.at("ends").as_ints(lo, hi, kMaxRank);
  for (std::vector<int64_t>* v : {&at.starts, &at.ends}) {
    for (int64_t& b : *v) b = std::clamp(b, -kMaxSliceBound, kMaxSliceBound);
  }
  if (auto c = a.find("steps")) {
    at.steps = c->as_ints(1, kMaxDim, kMaxRank);
  } else {
    at.steps.assign(at.starts.size(), 1);
  }
  if (python) {
    const Cursor c = *a.find("axes");
    axes = c.as_ints(-kMaxRank, kMaxAxis, kMaxRank);
    if (at.starts.size() != axes->size() || at.ends.size() != axes->size() ||
        at.steps.size() != axes->size()) {
      a.fail("axes, starts, ends and steps must have the same length; found " +
             std::to_string(axes->size()) + ", " + std::to_string(at.starts.size()) + ", " +
             std::to_string(at.ends.size()) + ", " + std::to_string(at.steps.size()));
    }
  }
}

void read(const Cursor& a, ConcatAttrs& at) {
  if_present(a, "axis", [&](const Cursor& c) { at.axis = c.as_int(-kMaxRank, kMaxAxis); });
}

void read(const Cursor& a, GatherAttrs& at) {
  if_present(a, "axis", [&](const Cursor& c) { at.axis = c.as_int(-kMaxRank, kMaxAxis); });
}

// The group and world are required: a collective among an unnamed or unsized group says nothing.
// all_gather and reduce_scatter require their axis too (attr_keys() keeps it off all_reduce).
void read(const Cursor& a, CollectiveAttrs& at, OpKind op) {
  at.group = a.at("group").as_name("a group name");
  at.world = a.at("world").as_int(1, kMaxWorld);
  if (op != OpKind::all_reduce) at.axis = a.at("axis").as_int(-kMaxRank, kMaxAxis);
  if_present(a, "reduce", [&](const Cursor& c) {
    const std::string s = c.as_string("a reduction");
    auto r = parse_collective_reduce(s);
    if (!r) c.fail("unknown reduction " + Json(s).dump() + did_you_mean(s, {"sum", "max"}) + "; known: sum, max");
    at.reduce = *r;
  });
}

int64_t normalize_axis(int64_t axis, int64_t rank, const Cursor& where, const std::string& who,
                       const std::string& input) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    where.fail(who + ": axis " + std::to_string(axis) + " is out of range for " + input +
                   " of rank " + std::to_string(rank),
               ErrorCode::invalid_graph);
  }
  return a;
}

}  // namespace

ParsedAttrs parse_attrs(OpKind op, const Cursor& node) {
  const std::optional<Cursor> attrs = node.find("attrs");
  ParsedAttrs p{default_attrs(op), attrs, std::nullopt};
  if (!attrs) {
    // Absent attributes take their defaults, except those that have no sensible default.
    switch (op) {
      case OpKind::reshape: node.fail("reshape needs \"attrs\": {\"dims\": [...]}");
      case OpKind::permute: node.fail("permute needs \"attrs\": {\"perm\": [...]}");
      case OpKind::slice: node.fail("slice needs \"attrs\": {\"starts\": [...], \"ends\": [...]}");
      case OpKind::argmax:
      case OpKind::argmin:
        node.fail(std::string(to_string(op)) + " needs \"attrs\": {\"axis\": ...}");
      case OpKind::all_reduce:
        node.fail("all_reduce needs \"attrs\": {\"group\": ..., \"world\": ...}");
      case OpKind::all_gather:
      case OpKind::reduce_scatter:
        node.fail(std::string(to_string(op)) + " needs \"attrs\": {\"group\": ..., \"world\": ..., \"axis\": ...}");
      default: return p;
    }
  }
  const Cursor& a = *attrs;
  const std::string what = "the attributes of " + std::string(to_string(op));
  a.expect_object(what);
  const auto keys = attr_keys(op);
  if (keys.empty() && !a.json().empty()) {
    a.fail("op '" + std::string(to_string(op)) + "' takes no attributes; found key " +
           Json(a.json().begin().key()).dump());
  }
  a.check_keys(keys, what);
  std::visit(
      [&](auto& at) {
        using A = std::decay_t<decltype(at)>;
        if constexpr (std::is_same_v<A, SliceAttrs>) {
          read(a, at, p.slice_axes);
        } else if constexpr (std::is_same_v<A, CollectiveAttrs>) {
          read(a, at, op);
        } else if constexpr (!std::is_same_v<A, std::monostate>) {
          read(a, at);
        }
      },
      p.attrs);
  return p;
}

void resolve_attrs(OpKind op, ParsedAttrs& p, const std::vector<const TensorInfo*>& inputs,
                   const std::string& who) {
  if (inputs.empty() || !p.where) return;  // arity errors are inference's to report
  const TensorInfo& x = *inputs[0];
  const auto rank = static_cast<int64_t>(x.dims.size());
  const std::string input = "input 0 '" + x.name + "'";
  if (auto* r = std::get_if<ReduceAttrs>(&p.attrs)) {
    const Cursor c = p.where->find("axes").value_or(*p.where);
    for (int64_t& a : r->axes) a = normalize_axis(a, rank, c, who, input);
    std::sort(r->axes.begin(), r->axes.end());
    r->axes.erase(std::unique(r->axes.begin(), r->axes.end()), r->axes.end());
  } else if (auto* arg = std::get_if<ArgReduceAttrs>(&p.attrs)) {
    const Cursor c = p.where->find("axis").value_or(*p.where);
    arg->axis = normalize_axis(arg->axis, rank, c, who, input);
  } else if (auto* cat = std::get_if<ConcatAttrs>(&p.attrs)) {
    const Cursor c = p.where->find("axis").value_or(*p.where);
    cat->axis = normalize_axis(cat->axis, rank, c, who, input);
  } else if (auto* ga = std::get_if<GatherAttrs>(&p.attrs)) {
    const Cursor c = p.where->find("axis").value_or(*p.where);
    ga->axis = normalize_axis(ga->axis, rank, c, who, input);
  } else if (auto* col = std::get_if<CollectiveAttrs>(&p.attrs); col && op != OpKind::all_reduce) {
    const Cursor c = p.where->find("axis").value_or(*p.where);
    col->axis = normalize_axis(col->axis, rank, c, who, input);
  } else if (auto* rs = std::get_if<ReshapeAttrs>(&p.attrs)) {
    auto wild = std::find(rs->dims.begin(), rs->dims.end(), -1);
    if (wild == rs->dims.end()) return;
    int64_t known = 1;
    for (int64_t d : rs->dims) known *= d == -1 ? 1 : d;  // bounded by read()
    const int64_t total = num_elements(x.dims);
    if (total % known != 0) {
      p.where->at("dims").fail(
          who + ": cannot reshape " + input + " with dims " + dims_to_string(x.dims) + " (" +
              std::to_string(total) + " elements) to " + dims_to_string(rs->dims) + ": " +
              std::to_string(total) + " is not a multiple of " + std::to_string(known),
          ErrorCode::invalid_graph);
    }
    *wild = total / known;
  } else if (auto* s = std::get_if<SliceAttrs>(&p.attrs); s && p.slice_axes) {
    SliceAttrs full;
    full.starts.assign(rank, 0);
    full.ends = x.dims;
    full.steps.assign(rank, 1);
    std::vector<bool> seen(rank, false);
    const Cursor c = p.where->at("axes");
    for (size_t i = 0; i < p.slice_axes->size(); ++i) {
      const int64_t a = normalize_axis((*p.slice_axes)[i], rank, c, who, input);
      if (seen[a]) {
        c.fail(who + ": axis " + std::to_string(a) + " is listed twice", ErrorCode::invalid_graph);
      }
      seen[a] = true;
      const auto clamp = [&](int64_t v) {
        return std::clamp<int64_t>(v < 0 ? v + x.dims[a] : v, 0, x.dims[a]);
      };
      full.starts[a] = clamp(s->starts[i]);
      full.ends[a] = clamp(s->ends[i]);
      full.steps[a] = s->steps[i];
    }
    *s = std::move(full);
  }
}

std::string write_attrs(const Node& n) {
  ObjectWriter w;
  std::visit(
      [&](const auto& at) {
        using A = std::decay_t<decltype(at)>;
        if constexpr (std::is_same_v<A, MatmulAttrs>) {
          w.name("compute", to_string(at.compute)).dtype("out_dtype", at.out_dtype);
        } else if constexpr (std::is_same_v<A, Conv2dAttrs>) {
          w.ints("stride", at.stride).ints("pad_begin", at.pad_begin).ints("pad_end", at.pad_end);
          w.ints("dilation", at.dilation)
              .integer("groups", at.groups)
              .dtype("out_dtype", at.out_dtype);
        } else if constexpr (std::is_same_v<A, SdpaAttrs>) {
          if (at.scale) w.number("scale", *at.scale);
          w.name("causal", to_string(at.causal)).boolean("has_bias", at.has_bias);
          w.boolean("emit_stats", at.emit_stats);
        } else if constexpr (std::is_same_v<A, ConstantAttrs>) {
          w.number("value", at.value).name("dtype", to_string(at.dtype));
        } else if constexpr (std::is_same_v<A, CastAttrs>) {
          w.name("dtype", to_string(at.dtype));
        } else if constexpr (std::is_same_v<A, ReduceAttrs>) {
          w.ints("axes", at.axes).boolean("keepdim", at.keepdim).dtype("out_dtype", at.out_dtype);
        } else if constexpr (std::is_same_v<A, ArgReduceAttrs>) {
          w.integer("axis", at.axis).boolean("keepdim", at.keepdim);
        } else if constexpr (std::is_same_v<A, NormAttrs>) {
          w.number("epsilon", at.epsilon).boolean("has_bias", at.has_bias);
        } else if constexpr (std::is_same_v<A, RopeAttrs>) {
          w.boolean("interleaved", at.interleaved);
        } else if constexpr (std::is_same_v<A, ReshapeAttrs>) {
          w.ints("dims", at.dims);
        } else if constexpr (std::is_same_v<A, PermuteAttrs>) {
          w.ints("perm", at.perm);
        } else if constexpr (std::is_same_v<A, SliceAttrs>) {
          w.ints("starts", at.starts).ints("ends", at.ends).ints("steps", at.steps);
        } else if constexpr (std::is_same_v<A, ConcatAttrs>) {
          w.integer("axis", at.axis);
        } else if constexpr (std::is_same_v<A, GatherAttrs>) {
          w.integer("axis", at.axis);
        } else if constexpr (std::is_same_v<A, CollectiveAttrs>) {
          w.name("group", at.group).integer("world", at.world);
          if (n.op != OpKind::all_reduce) w.integer("axis", at.axis);
          if (n.op != OpKind::all_gather) w.name("reduce", to_string(at.reduce));
        }
      },
      n.attrs);
  // Ops without attributes write none; so do those whose attrs variant is empty.
  return std::holds_alternative<std::monostate>(n.attrs) ? "" : w.str();
}

}  // namespace sinter::json_detail
