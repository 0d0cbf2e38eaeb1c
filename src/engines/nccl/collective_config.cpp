#include "engines/nccl/collective_config.hpp"

#include <algorithm>


namespace sinter::nccl {
namespace {

std::optional<ncclDataType_t> nccl_type(DType t, OpKind op) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::fp8_e4m3: return ncclFloat8e4m3;
    case DType::fp8_e5m2: return ncclFloat8e5m2;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    // gathered as bytes; bool never reduces (the graph refuses it)
    case DType::boolean:
      if (op == OpKind::all_gather) return ncclUint8;
      return std::nullopt;
  }
  return std::nullopt;
}

bool is_collective(OpKind op) {
  return op == OpKind::all_reduce || op == OpKind::all_gather || op == OpKind::reduce_scatter;
}

}  // namespace

CollectiveMatch match_collective(const Graph& g, const fuse::Region& r) {
  if (r.kind != fuse::RegionKind::collective || r.anchor < 0) {
    return {std::nullopt, "only collectives (all_reduce, all_gather, reduce_scatter) run on NCCL"};
  }
  const Node& n = g.node(r.anchor);
  if (!is_collective(n.op) || !std::holds_alternative<CollectiveAttrs>(n.attrs)) {
    return {std::nullopt, "node '" + n.name + "' (" + std::string(to_string(n.op)) + ") is not a collective"};
  }
  const TensorInfo& x = g.tensor(n.inputs[0]);
  const TensorInfo& y = g.tensor(n.outputs[0]);
  CollectiveConfig c;
  c.op = n.op;
  c.attrs = std::get<CollectiveAttrs>(n.attrs);
  c.dtype = x.dtype;
  const std::string what = std::string(to_string(n.op)) + " '" + n.name + "'";
  const auto type = nccl_type(x.dtype, n.op);
  if (!type) {
    return {std::nullopt, what + ": NCCL has no " + std::string(to_string(n.op)) + " of " +
                              std::string(to_string(x.dtype)) + " (it runs f32, f16, bf16, fp8, i32, i64; bool only gathers)"};
  }
  c.type = *type;
  c.reduce = c.attrs.reduce == CollectiveReduce::max ? ncclMax : ncclSum;
  for (const TensorInfo* t : {&x, &y}) {
    if (t->strides != contiguous_strides(t->dims)) {
      return {std::nullopt, what + ": '" + t->name + "' is a strided view (strides " + dims_to_string(t->strides) +
                                ", dims " + dims_to_string(t->dims) +
                                "); NCCL sends and receives contiguous buffers (copy it to a contiguous tensor first)"};
    }
  }
  if (n.op != OpKind::all_reduce) {
    const auto axis = static_cast<size_t>(c.attrs.axis);
    int64_t outer = 1;
    for (size_t a = 0; a < axis; ++a) outer *= x.dims[a];
    if (outer != 1) {
      const char* how = n.op == OpKind::all_gather ? "gathers whole rank buffers one after another"
                                                   : "scatters the buffer in contiguous parts, one per rank";
      return {std::nullopt, what + " along axis " + std::to_string(axis) + " of '" + x.name + "' with dims " +
                                dims_to_string(x.dims) + ": NCCL " + how +
                                ", which is along the outermost axis only; axis " +
                                std::to_string(axis) + " has " + std::to_string(outer) +
                                " elements outside it (every axis before it must have size 1: permute axis " +
                                std::to_string(axis) + " to the front)"};
    }
  }
  c.input_bytes = static_cast<uint64_t>(num_elements(x.dims) * dtype_size(x.dtype));
  c.output_bytes = static_cast<uint64_t>(num_elements(y.dims) * dtype_size(y.dtype));
  c.count = static_cast<uint64_t>(n.op == OpKind::reduce_scatter ? num_elements(y.dims) : num_elements(x.dims));
  return {c, ""};
}

std::string library_problem(const CollectiveConfig& c, const Library& lib) {
  if (c.attrs.world == 1) return "";
  if (!lib.loaded) return "NCCL not found (" + lib.reason + "); a collective of world 1 runs without it";
  if (is_fp8(c.dtype) && lib.version < kFirstVersionWithFp8) {
    return lib.path + " is NCCL " + version_string(lib.version) + ", which has no fp8 types (" +
           std::string(to_string(c.dtype)) + " needs NCCL " + version_string(kFirstVersionWithFp8) + " or later)";
  }
  return "";
}

std::string communicator_problem(const CollectiveConfig& c, const Communicator* comm, int device) {
  const std::string group = "group '" + c.attrs.group + "'";
  if (!comm || !comm->valid()) {
    if (c.attrs.world == 1) return "";
    return "no communicator is bound to " + group + " (world " + std::to_string(c.attrs.world) +
           "); bind one with RunnerOptions::communicators[\"" + c.attrs.group + "\"] (Communicator::create or create_local)";
  }
  if (comm->world() != c.attrs.world) {
    return "the communicator bound to " + group + " has world " + std::to_string(comm->world()) + " (" +
           comm->describe() + "), but the graph's " + std::string(to_string(c.op)) + " runs among world " +
           std::to_string(c.attrs.world) + " ranks";
  }
  if (comm->device() != device) {
    return "the communicator bound to " + group + " is on GPU " + std::to_string(comm->device()) +
           ", but this runner runs on GPU " + std::to_string(device);
  }
  return "";
}

std::string config_text(const CollectiveConfig& c) {
  std::string s(to_string(c.op));
  if (c.op != OpKind::all_gather) s += " " + std::string(to_string(c.attrs.reduce));
  if (c.op != OpKind::all_reduce) s += " axis=" + std::to_string(c.attrs.axis);
  return s + " " + std::string(to_string(c.dtype)) + " count=" + std::to_string(c.count) + " group=" + c.attrs.group +
         " world=" + std::to_string(c.attrs.world);
}

CollectiveRecord record_of(const CollectiveConfig& c) {
  CollectiveRecord r;
  r.op = std::string(to_string(c.op));
  r.group = c.attrs.group;
  r.world = c.attrs.world;
  r.reduce = c.op == OpKind::all_gather ? "" : std::string(to_string(c.attrs.reduce));
  r.axis = c.op == OpKind::all_reduce ? 0 : c.attrs.axis;
  r.dtype = c.dtype;
  r.count = c.count;
  return r;
}

std::string record_mismatch(const CollectiveConfig& c, const CollectiveRecord& saved) {
  const CollectiveRecord want = record_of(c);
  auto differs = [](const char* field, const std::string& have, const std::string& need) {
    return std::string("its collective record says ") + field + " " + have + ", the graph's node has " + need;
  };
  if (saved.op != want.op) return differs("op", saved.op, want.op);
  if (saved.group != want.group) return differs("group", "'" + saved.group + "'", "'" + want.group + "'");
  if (saved.world != want.world) return differs("world", std::to_string(saved.world), std::to_string(want.world));
  if (saved.reduce != want.reduce) return differs("reduce", "'" + saved.reduce + "'", "'" + want.reduce + "'");
  if (saved.axis != want.axis) return differs("axis", std::to_string(saved.axis), std::to_string(want.axis));
  if (saved.dtype != want.dtype) {
    return differs("dtype", std::string(to_string(saved.dtype)), std::string(to_string(want.dtype)));
  }
  if (saved.count != want.count) return differs("count", std::to_string(saved.count), std::to_string(want.count));
  return "";
}

}  // namespace sinter::nccl
