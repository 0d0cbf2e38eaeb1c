#include "engines/jit/codegen_common.hpp"

#include <algorithm>

#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {

BodyEmitter::BodyEmitter(const Graph& g, const fuse::Region& r, ExprOptions options) : g_(g), r_(r), options_(options) {
  bool any = false;
  auto see = [&](NodeId n) {
    for (TensorId t : g_.node(n).outputs) {
      first_value_ = any ? std::min(first_value_, t) : t;
      any = true;
    }
  };
  for (NodeId n : r_.nodes()) see(n);
  for (NodeId n : r_.constants) see(n);
}

std::string BodyEmitter::name_of(TensorId t) const {
  auto it = names_.find(t);
  if (it == names_.end()) {
    throw Error(ErrorCode::internal, "codegen: no value for tensor '" + g_.tensor(t).name + "'");
  }
  return it->second;
}

std::string BodyEmitter::constants() const {
  std::string s;
  for (NodeId c : r_.constants) {
    const Node& n = g_.node(c);
    s += "  " + emit_pointwise(g_, n, {}, value_name(n.outputs[0]), options_) + "\n";
  }
  return s;
}

std::string BodyEmitter::emit(const std::vector<NodeId>& nodes) {
  for (NodeId c : r_.constants) {
    const TensorId t = g_.node(c).outputs[0];
    names_[t] = value_name(t);
  }
  std::string s;
  for (NodeId n : nodes) {
    const Node& nd = g_.node(n);
    std::vector<std::string> in;
    for (TensorId t : nd.inputs) in.push_back(name_of(t));
    const TensorId out = nd.outputs[0];
    const std::string name = value_name(out);
    s += "    " + emit_pointwise(g_, nd, in, name, options_) + "  // " + nd.name + "\n";
    names_[out] = name;
  }
  return s;
}

std::string reduce_kind(OpKind op) {
  switch (op) {
    case OpKind::reduce_sum: return "kReduceSum";
    case OpKind::reduce_mean: return "kReduceMean";
    case OpKind::reduce_max: return "kReduceMax";
    case OpKind::reduce_min: return "kReduceMin";
    case OpKind::reduce_amax: return "kReduceAmax";
    default: break;
  }
  throw Error(ErrorCode::internal, "not a reduction: " + std::string(to_string(op)));
}

int64_t balanced_grid(int64_t work, int64_t max_grid) {
  if (work <= 0 || max_grid <= 0) return 1;
  const int64_t rounds = (work + max_grid - 1) / max_grid;
  return (work + rounds - 1) / rounds;
}

bool set_work_grid(KernelSpec& spec, int64_t work, bool want_flat, const cuda::DeviceProperties& dev) {
  constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
  if (want_flat && work <= kMaxGridX) {
    spec.launch.grid = dim3(static_cast<unsigned>(std::max<int64_t>(work, 1)));
    return true;
  }
  const int per_sm = std::max(1, 2048 / static_cast<int>(std::max(spec.launch.block.x, 1u)));
  const int64_t max_grid = int64_t{dev.sm_count > 0 ? dev.sm_count : 132} * per_sm;
  spec.launch.grid = dim3(static_cast<unsigned>(balanced_grid(work, max_grid)));
  spec.persistent_work = work;
  return false;
}

namespace {

Dims without_leading_ones(const Dims& d) {
  size_t i = 0;
  while (i + 1 < d.size() && d[i] == 1) ++i;
  return Dims(d.begin() + static_cast<std::ptrdiff_t>(i), d.end());
}

}  // namespace

std::vector<TaskBox> flat_task_boxes(const Graph& g, const fuse::Region& r, const Dims& shape, int64_t rows, int64_t cols,
                                     int64_t box_rows, int64_t box_cols, int64_t tasks) {
  std::vector<TaskBox> boxes;
  const Dims want = without_leading_ones(shape);
  auto add = [&](TensorId t, bool write, int slot) {
    const TensorInfo& info = g.tensor(t);
    if (without_leading_ones(info.dims) != want || info.strides != contiguous_strides(info.dims)) return;
    TaskBox b;
    b.write = write;
    b.slot = slot;
    b.elem_bytes = static_cast<int>(dtype_size(info.dtype));
    b.rows = rows, b.cols = cols, b.pitch = cols;
    b.digits = {{tasks, box_cols == cols ? box_rows : 0, box_cols == cols ? 0 : box_cols}};
    b.box_rows = box_rows, b.box_cols = box_cols;
    boxes.push_back(b);
  };
  for (size_t i = 0; i < r.inputs.size(); ++i) add(r.inputs[i], false, static_cast<int>(i));
  for (size_t o = 0; o < r.outputs.size(); ++o) add(r.outputs[o], true, static_cast<int>(o));
  return boxes;
}

std::vector<TaskBox> result_tile_boxes(const Graph& g, const fuse::Region& r, int64_t m, int64_t n,
                                       const std::vector<BoxDigit>& digits, int64_t box_cols,
                                       const std::vector<TensorId>& operands) {
  std::vector<TaskBox> boxes;
  auto add = [&](TensorId t, bool write, int slot) {
    const TensorInfo& info = g.tensor(t);
    if (num_elements(info.dims) != m * n || info.dims.empty() || info.dims.back() != n ||
        info.strides != contiguous_strides(info.dims)) {
      return;
    }
    TaskBox b;
    b.write = write;
    b.slot = slot;
    b.elem_bytes = static_cast<int>(dtype_size(info.dtype));
    b.rows = m, b.cols = n, b.pitch = n;
    b.digits = digits;
    b.box_rows = m, b.box_cols = box_cols;
    boxes.push_back(b);
  };
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    if (std::find(operands.begin(), operands.end(), r.inputs[i]) == operands.end()) add(r.inputs[i], false, static_cast<int>(i));
  }
  for (size_t o = 0; o < r.outputs.size(); ++o) add(r.outputs[o], true, static_cast<int>(o));
  return boxes;
}

int region_output_index(const fuse::Region& r, TensorId t) {
  auto it = std::find(r.outputs.begin(), r.outputs.end(), t);
  if (it == r.outputs.end()) return -1;
  return static_cast<int>(it - r.outputs.begin());
}

int region_input_index(const fuse::Region& r, TensorId t) {
  auto it = std::find(r.inputs.begin(), r.inputs.end(), t);
  if (it == r.inputs.end()) return -1;
  return static_cast<int>(it - r.inputs.begin());
}

std::vector<ExitSlot> plan_exit_slots(const Graph& g, const fuse::Region& r, size_t& workspace) {
  std::vector<ExitSlot> slots;
  for (const fuse::ExitReduce& e : r.reductions) {
    const Node& n = g.node(e.node);
    ExitSlot s;
    s.exit = e;
    s.input = n.inputs[0];
    s.output = n.outputs[0];
    s.output_index = region_output_index(r, s.output);
    if (s.output_index < 0) {
      throw Error(ErrorCode::internal, "exit reduction '" + n.name + "' is not stored");
    }
    s.n_out = num_elements(g.tensor(s.output).dims);
    const int64_t count = num_elements(g.tensor(s.input).dims) / std::max<int64_t>(s.n_out, 1);
    s.scale = n.op == OpKind::reduce_mean ? 1.0f / static_cast<float>(count) : 1.0f;
    workspace = (workspace + 255) / 256 * 256;
    s.acc_offset = workspace;
    workspace += static_cast<size_t>(s.n_out) * sizeof(float);
    workspace = (workspace + 255) / 256 * 256;
    s.count_offset = workspace;
    workspace += sizeof(unsigned int);
    slots.push_back(s);
  }
  return slots;
}

void pack_exit_slots(KernelSpec& spec, const std::vector<ExitSlot>& slots) {
  using Src = PointerSlot::Source;
  for (const ExitSlot& s : slots) {
    SinterReduceSlot slot{};
    slot.n_out = s.n_out;
    slot.scale = s.scale;
    const size_t base = spec.args.add(slot);
    spec.pointers.push_back({Src::workspace, 0, s.acc_offset, base + offsetof(SinterReduceSlot, acc), 4});
    spec.pointers.push_back(
        {Src::workspace, 0, s.count_offset, base + offsetof(SinterReduceSlot, count), 4});
    spec.pointers.push_back({Src::output, s.output_index, 0, base + offsetof(SinterReduceSlot, out), 1});
  }
}

std::string kernel_includes(const std::vector<std::string>& extra) {
  std::string s =
      "#include \"common/types.cuh\"\n#include \"common/abi.h\"\n#include \"common/index.cuh\"\n"
      "#include \"common/memory.cuh\"\n#include \"common/math.cuh\"\n#include \"common/reduce.cuh\"\n"
      "#include \"common/pdl.cuh\"\n";
  for (const std::string& e : extra) s += "#include \"" + e + "\"\n";
  return s;
}

}  // namespace sinter::jit
