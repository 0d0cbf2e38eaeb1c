#include "engines/jit/codegen_anchor.hpp"

#include <algorithm>
#include <cstddef>
#include <sstream>

#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {

// ---- ArgsWriter ------------------------------------------------------------------------------------

void ArgsWriter::add(const std::string& type, const std::string& name, size_t offset) {
  fields_.push_back({type, name, offset});
}

void ArgsWriter::pointer(const std::string& type, const std::string& name,
                         PointerSlot::Source source, int index, int alignment) {
  if (index < 0) throw Error(ErrorCode::internal, "codegen: '" + name + "' is not a region input or output");
  const size_t offset = spec_.args.add_pointer(nullptr);
  spec_.pointers.push_back({source, index, 0, offset, alignment});
  add(type, name, offset);
}

void ArgsWriter::workspace_pointer(const std::string& type, const std::string& name, size_t offset,
                                   int alignment) {
  const size_t arg = spec_.args.add_pointer(nullptr);
  spec_.pointers.push_back({PointerSlot::Source::workspace, 0, offset, arg, alignment});
  add(type, name, arg);
}

void ArgsWriter::reduce_slot(const ExitSlot& slot, const std::string& name) {
  const size_t first = spec_.pointers.size();
  pack_exit_slots(spec_, {slot});
  add("SinterReduceSlot", name, spec_.pointers[first].arg_offset - offsetof(SinterReduceSlot, acc));
}

namespace {
// Host image of SinterTensorMap: 128 opaque bytes, 64-byte aligned (CUtensorMap's rules).
struct alignas(64) HostTensorMap {
  unsigned char bytes[128];
};
}  // namespace

void ArgsWriter::tensor_map(const std::string& name, TensorMapSlot slot) {
  slot.arg_offset = spec_.args.add(HostTensorMap{});
  spec_.tensor_maps.push_back(slot);
  add("SinterTensorMap", name, slot.arg_offset);
}

std::string ArgsWriter::finish() {
  spec_.args.finish();
  std::ostringstream s;
  s << "struct Args {\n";
  for (const Field& f : fields_) s << "  " << f.type << " " << f.name << ";\n";
  s << "};\n";
  // The host packed these bytes; a mismatch is a generator bug, caught at compile time. (NVRTC
  // has no constant offsetof; fields are declared and packed from one list, in one order, so a
  // type that disagrees with its packed value shows up as a size difference.)
  s << "static_assert(sizeof(Args) == " << spec_.args.size() << ", \"Args size differs from the host packer\");\n";
  return s.str();
}

// ---- AnchorEpilogue ----------------------------------------------------------------------------------

AnchorEpilogue::AnchorEpilogue(const Graph& g, const fuse::Region& r, TensorId value)
    : g_(g), r_(r), value_(value) {
  const Dims& shape = r.iteration_shape;
  if (shape.empty()) throw Error(ErrorCode::internal, "anchor epilogue: rank-0 iteration shape");
  cols_ = shape.back();
  rows_ = num_elements(shape) / cols_;
  index64_ = rows_ >= (int64_t{1} << 31);
  const Dims lead(shape.begin(), shape.end() - 1);

  // Operands: region inputs that epilogue nodes read (which may include the anchor's own inputs).
  std::vector<TensorId> reads;
  for (NodeId n : r.epilogue) {
    for (TensorId t : g.node(n).inputs) {
      if (region_input_index(r, t) >= 0 && std::find(reads.begin(), reads.end(), t) == reads.end()) {
        reads.push_back(t);
      }
    }
  }
  std::vector<Dims> lead_strides;
  for (TensorId t : reads) {
    const TensorInfo& info = g.tensor(t);
    const Dims full = broadcast_strides(info.dims, info.strides, shape);
    operands_.push_back({t, {}, full.back()});
    lead_strides.push_back(Dims(full.begin(), full.end() - 1));
  }
  lead_strides.push_back(contiguous_strides(lead));  // keeps the collapse honest for the outputs
  lead_ = collapse(lead, lead_strides);
  for (size_t i = 0; i < operands_.size(); ++i) operands_[i].lead_strides = lead_.strides[i];
  // 64-bit index arithmetic also where an operand's largest element offset needs it: kIndex64
  // false promises every operand offset below 2^31 (operand_offset, kernels/common/index.cuh)
  for (const Operand& op : operands_) {
    int64_t last = (cols_ - 1) * op.col_stride;
    for (size_t d = 0; d < lead_.sizes.size(); ++d) last += (lead_.sizes[d] - 1) * op.lead_strides[d];
    index64_ = index64_ || last >= (int64_t{1} << 31);
  }

  for (TensorId o : r.outputs) {
    const NodeId p = g.tensor(o).producer;
    const bool exit = std::any_of(r.reductions.begin(), r.reductions.end(),
                                  [&](const fuse::ExitReduce& e) { return e.node == p; });
    if (exit) continue;
    if (p == r.anchor && o != value) continue;  // sdpa statistics: the generator stores them
    if (g.tensor(o).dims != shape) {
      throw Error(ErrorCode::internal, "anchor epilogue: output '" + g.tensor(o).name + "' is " +
                                           dims_to_string(g.tensor(o).dims) + ", not the iteration shape");
    }
    outs_.push_back(o);
  }
  exits_ = plan_exit_slots(g, r, workspace_);
}

void AnchorEpilogue::declare(ArgsWriter& w) const {
  using Src = PointerSlot::Source;
  w.field("i64", "ecols", cols_);
  if (!operands_.empty()) w.field("SinterIterShape", "elead", make_iter_shape(lead_));
  for (size_t i = 0; i < operands_.size(); ++i) {
    const TensorInfo& t = g_.tensor(operands_[i].tensor);
    const std::string n = std::to_string(i);
    w.pointer("const " + storage_type(t.dtype) + "*", "ein" + n, Src::input,
              region_input_index(r_, operands_[i].tensor), static_cast<int>(dtype_size(t.dtype)));
    w.field("SinterStridedView", "eview" + n, make_view(operands_[i].lead_strides));
    w.field("i64", "ecs" + n, operands_[i].col_stride);
  }
  for (size_t k = 0; k < outs_.size(); ++k) {
    const TensorInfo& t = g_.tensor(outs_[k]);
    w.pointer(storage_type(t.dtype) + "*", "out" + std::to_string(k), Src::output,
              region_output_index(r_, outs_[k]), static_cast<int>(dtype_size(t.dtype)));
  }
  for (size_t m = 0; m < exits_.size(); ++m) w.reduce_slot(exits_[m], "red" + std::to_string(m));
}

std::string AnchorEpilogue::describe() const {
  std::string s;
  for (NodeId n : r_.epilogue) s += std::string(s.empty() ? "" : ",") + std::string(to_string(g_.node(n).op));
  std::string red;
  for (const ExitSlot& e : exits_) red += std::string(red.empty() ? "" : ",") + std::string(fuse::to_string(e.exit.pattern));
  if (s.empty() && red.empty()) return "";
  std::string d = " [epilogue: " + (s.empty() ? std::string("none") : s);
  if (!red.empty()) d += "; reductions: " + red;
  return d + "]";
}

std::string AnchorEpilogue::row_offsets(const std::string& indent) const {
  std::string s;
  for (size_t i = 0; i < operands_.size(); ++i) {
    const std::string n = std::to_string(i);
    s += indent + "const i64 ro" + n + " = offset_of<kIndex64>(a.elead, a.eview" + n + ", grow);\n";
  }
  return s;
}

std::string AnchorEpilogue::element(const std::string& value, const std::string& indent) const {
  return element_impl(value, indent, "", "[j]");
}

bool AnchorEpilogue::row_invariant(size_t i) const {
  return std::all_of(operands_[i].lead_strides.begin(), operands_[i].lead_strides.end(),
                     [](int64_t st) { return st == 0; });
}

AnchorEpilogue::RowRead AnchorEpilogue::row_read(size_t i) const {
  switch (operands_[i].col_stride) {
    case 0: return RowRead::column_vector;
    case 1: return RowRead::pairs;
    default: return RowRead::strided;
  }
}

std::string AnchorEpilogue::element_impl(const std::string& value, const std::string& indent,
                                         const std::string& out_suffix, const std::string& col_acc,
                                         const std::string& preload_suffix, const std::string& row_suffix,
                                         const std::vector<bool>& packed_in_full) const {
  std::ostringstream s;
  for (size_t i = 0; i < operands_.size(); ++i) {
    const std::string n = std::to_string(i);
    const std::string ct = compute_type(g_.tensor(operands_[i].tensor).dtype);
    if (!preload_suffix.empty() && row_invariant(i)) {
      s << indent << "const " << ct << " l" << n << " = pl" << n << preload_suffix << ";\n";
      continue;
    }
    // never read past an operand for columns outside the tile's valid range
    const std::string load = "(valid ? load_one(a.ein" + n + " + operand_offset<kIndex64>(ro" + n + ", col, a.ecs" + n +
                             ")) : static_cast<" + ct + ">(0))";
    if (!row_suffix.empty()) {  // read per row (the row-invariant ones are above)
      // full tiles: through what fragment_tile declared for the row half and column
      std::string full;
      switch (row_read(i)) {
        case RowRead::column_vector: full = "prs" + n + row_suffix; break;
        case RowRead::pairs: full = "pr" + n + row_suffix + preload_suffix; break;
        case RowRead::strided: full = "load_one(pc" + n + row_suffix + preload_suffix + " + q * pcs" + n + ")"; break;
      }
      s << indent << "const " << ct << " l" << n << " = kFull ? " << full << " : " << load << ";\n";
      continue;
    }
    s << indent << "const " << ct << " l" << n << " = " << load << ";\n";
  }
  const DType vt = g_.tensor(value_).dtype;
  s << indent << "const float y_ = "
    << intermediate(value, vt) << ";\n";
  BodyEmitter b(g_, r_);
  b.bind(value_, "y_");
  for (size_t i = 0; i < operands_.size(); ++i) b.bind(operands_[i].tensor, "l" + std::to_string(i));
  s << b.constants() << b.emit(r_.epilogue);
  if (!out_suffix.empty()) {
    for (size_t k = 0; k < outs_.size(); ++k) s << indent << "so" << k << out_suffix << " = " << b.name_of(outs_[k]) << ";\n";
  } else if (!outs_.empty()) {
    s << indent << "if (valid) {\n";
    for (size_t k = 0; k < outs_.size(); ++k) {
      s << indent << "  store_one(a.out" << k << " + grow * a.ecols + col, " << b.name_of(outs_[k]) << ");\n";
    }
    s << indent << "}\n";
  }
  for (size_t m = 0; m < exits_.size(); ++m) {
    const Node& rn = g_.node(exits_[m].exit.node);
    const std::string kind = reduce_kind(rn.op), n = std::to_string(m);
    std::string acc;
    switch (exits_[m].exit.pattern) {
      case fuse::ExitReduction::rows: acc = "racc" + n; break;
      case fuse::ExitReduction::columns: acc = "cacc" + n + col_acc; break;
      case fuse::ExitReduction::global: acc = "gacc" + n; break;
    }
    const std::string in = "reduce_input<" + kind + ">(static_cast<float>(" + b.name_of(rn.inputs[0]) + "))";
    if (out_suffix.empty()) {
      s << indent << "if (valid) " << acc << " = reduce_combine<" << kind << ">(" << acc << ", " << in << ");\n";
    } else {
      // unrolled fragment epilogues: a select instead of a branch around every element
      const bool packed = m < packed_in_full.size() && packed_in_full[m];
      s << indent << (packed ? "if constexpr (!kFull) " : "") << acc << " = reduce_combine<" << kind << ">(" << acc
        << ", valid ? " << in << " : reduce_identity<" << kind << ">());\n";
    }
  }
  return s.str();
}

std::string AnchorEpilogue::gemm_tile(const std::string& grow0, const std::string& rows_valid,
                                      const std::string& gcol0, const std::string& cols_valid,
                                      const GemmTileScope& sc) const {
  using fuse::ExitReduction;
  auto kind_of = [&](size_t m) { return reduce_kind(g_.node(exits_[m].exit.node).op); };
  std::ostringstream s;
  s << "  {  // epilogue: warp w of the scope takes tile rows w, w + warps, ...; lane takes columns lane + 32 j\n"
    << "    const float* cs = reinterpret_cast<const float*>(smem);\n"
    << "    const int tid_ = " << sc.tid << ", warp_ = tid_ >> 5, lane_ = tid_ & 31;\n"
    << "    const i64 grow0 = " << grow0 << ", gcol0 = " << gcol0 << ";\n"
    << "    const int rows_valid = " << rows_valid << ", cols_valid = " << cols_valid << ";\n";
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern != ExitReduction::columns) continue;
    s << "    float cacc" << m << "[" << sc.bn << " / 32];\n#pragma unroll\n    for (int j = 0; j < " << sc.bn << " / 32; ++j) cacc"
      << m << "[j] = reduce_identity<" << kind_of(m) << ">();\n";
  }
  s << "    for (int rr = warp_; rr < rows_valid; rr += " << sc.threads << " / 32) {\n"
    << "      const i64 grow = grow0 + rr;\n" << row_offsets("      ");
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern != ExitReduction::rows) continue;
    s << "      float racc" << m << " = reduce_identity<" << kind_of(m) << ">();\n";
  }
  s << "#pragma unroll\n      for (int j = 0; j < " << sc.bn << " / 32; ++j) {\n"
    << "        const int cc = lane_ + 32 * j;\n        const bool valid = cc < cols_valid;\n"
    << "        const i64 col = gcol0 + cc;\n"
    << element("cs[rr * " + sc.ldc + " + cc]", "        ") << "      }\n";
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern != ExitReduction::rows) continue;
    // one atomic per row per tile; rows are warp-uniform, so the whole warp shuffles
    s << "      { const float t_ = warp_reduce<" << kind_of(m) << ">(racc" << m << ");\n"
      << "        if (lane_ == 0) accumulate_atomic<" << kind_of(m) << ">(a.red" << m << ".acc + grow, t_); }\n";
  }
  s << "    }\n";
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern != ExitReduction::columns) continue;
    // per column: the scope's warps' partials meet in shared memory, then one atomic per tile
    s << "    {\n      __shared__ float xred[(" << sc.threads << " / 32) * " << sc.bn << "];\n"
      << "      " << sc.sync << "  // a previous user of xred is done\n"
      << "#pragma unroll\n      for (int j = 0; j < " << sc.bn << " / 32; ++j) xred[warp_ * " << sc.bn << " + lane_ + 32 * j] = cacc"
      << m << "[j];\n      " << sc.sync << "\n"
      << "      for (int c_ = tid_; c_ < cols_valid; c_ += " << sc.threads << ") {  // fewer threads than columns: a loop\n"
      << "        float t_ = xred[c_];\n"
      << "        for (int w = 1; w < " << sc.threads << " / 32; ++w) t_ = reduce_combine<" << kind_of(m)
      << ">(t_, xred[w * " << sc.bn << " + c_]);\n"
      << "        accumulate_atomic<" << kind_of(m) << ">(a.red" << m << ".acc + gcol0 + c_, t_);\n"
      << "      }\n    }\n";
  }
  s << "  }\n";
  return s.str();
}

std::string AnchorEpilogue::global_params() const {
  std::string s;
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern == fuse::ExitReduction::global) s += ", float& gacc" + std::to_string(m);
  }
  return s;
}

std::string AnchorEpilogue::global_args() const {
  std::string s;
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern == fuse::ExitReduction::global) s += ", gacc" + std::to_string(m);
  }
  return s;
}

std::string AnchorEpilogue::kernel_begin(const std::string& indent) const {
  std::string s;
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern != fuse::ExitReduction::global) continue;
    s += indent + "float gacc" + std::to_string(m) + " = reduce_identity<" +
         reduce_kind(g_.node(exits_[m].exit.node).op) + ">();\n";
  }
  return s;
}

std::string AnchorEpilogue::kernel_end(const std::string& indent) const {
  std::ostringstream s;
  bool scratch = false;
  for (size_t m = 0; m < exits_.size(); ++m) {
    const Node& rn = g_.node(exits_[m].exit.node);
    const std::string kind = reduce_kind(rn.op), n = std::to_string(m);
    if (exits_[m].exit.pattern == fuse::ExitReduction::global) {
      if (!scratch) s << indent << "__shared__ float scratch[33];\n";
      scratch = true;
      s << indent << "{ const float v = block_reduce<" << kind << ">(gacc" << n << ", scratch);\n"
        << indent << "  if (threadIdx.x == 0) accumulate_atomic<" << kind << ">(a.red" << n << ".acc, v); }\n";
    }
    // every CTA counts itself in; the last converts and resets the accumulators
    s << indent << "finalize_exit_reduction<" << kind << ", " << storage_type(g_.tensor(rn.outputs[0]).dtype)
      << ">(a.red" << n << ");\n";
  }
  return s.str();
}

int64_t next_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

}  // namespace sinter::jit
