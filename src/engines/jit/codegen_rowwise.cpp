// Row-wise regions: softmax, layernorm, rmsnorm or rope over the last axis, with the pointwise
// prologue that feeds the anchor (a residual add), the epilogue after it, per-row and global exit
// reductions; also anchor-less pointwise regions with per-row reductions.
//
// One CTA owns one row at a time (a persistent loop over rows). When the row fits, each thread
// keeps kItems vectors of kVec elements of the anchor's input in registers, so the row is read
// from memory once; longer rows are streamed in passes that recompute the prologue.
#include <algorithm>
#include <set>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_common.hpp"
#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

using Src = PointerSlot::Source;

// How a region input is read along the row (its last axis).
enum class ColAccess { vector, broadcast, gather };

struct RowInput {
  TensorId tensor;
  ColAccess col;
  int64_t col_stride;
  Dims row_strides;  // over the collapsed leading dims, innermost first
};

class RowwiseGen {
 public:
  RowwiseGen(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
             RowwiseConfig variant)
      : g_(g), r_(r), dev_(dev), variant_(variant), body_(g, r) {}

  RegionKernels build();

 private:
  const TensorInfo& t(TensorId id) const { return g_.tensor(id); }
  std::string in_name(size_t i) const { return "in" + std::to_string(i); }
  void plan();
  // The heuristic variant (candidate 0) made concrete from H200 measurements, once, before
  // anything reads the variant:
  //  - softmax with the two-pass statistics: one row per CTA of at most 256 threads, read
  //    straight into registers (candidate 18's kernel). 16384 x 8192 bf16, session 8, same call:
  //    0.1360 ms against 0.1548 for the bulk-ring persistent kernel that was the default and
  //    0.1439 for flat rows of 512 threads;
  //  - layernorm: rows staged by the bulk ring, 2 buffers deep, which fits 3 CTAs of 512 per SM
  //    where 3 buffers fit 2 (add+layernorm, same call: 0.2040 ms against 0.2135 for 3 buffers in
  //    session 9, 0.2048 against 0.2071 in session 8; cp.async staging 0.2101 in session 6);
  //  - every other row op unstaged (rmsnorm 0.197 ms direct against 0.220 staged; RowwiseConfig).
  void resolve_heuristic() {
    if (variant_.stage != RowStage::heuristic) return;
    const OpKind op = anchor_ ? anchor_->op : OpKind::identity;
    variant_.stage = RowStage::off;
    if (op == OpKind::softmax) {
      variant_.max_threads = 256;
      variant_.flat = true;
    } else if (op == OpKind::layernorm) {
      variant_.stage = RowStage::bulk;
      variant_.stages = 2;
    }
  }
  // Whether to stage the next row (RowwiseConfig::Stage), and with the bulk ring.
  bool stage_rows() const { return variant_.stage != RowStage::off; }
  bool bulk() const { return variant_.stage == RowStage::bulk; }
  // Row buffers in shared memory: the bulk ring's depth, or cp.async's double buffer.
  int stages() const { return bulk() ? std::clamp(variant_.stages, 2, 4) : 2; }
  // Layernorm's and softmax's two row statistics are reduced across the CTA in two passes over
  // the registers, each statistic a plain block reduction with one barrier
  // (block_reduce_alternating): softmax's max then its sum of exp(x - max), layernorm's mean then
  // its sum of squared deviations from it. One-pass (max, sum) or (n, mean, M2) combines cost
  // ~200 of softmax's ~380 instructions per thread and row and lost on the H200
  // (docs/benchmarks.md, session 8); the guarded two-barrier reduction tied for softmax and lost
  // for layernorm.
  std::string stat_reduce(const std::string& kind, const std::string& value, int slot) const {
    return "block_reduce_alternating<" + kind + ">(" + value + ", rowstat_[" + std::to_string(slot) + "])";
  }
  // Global accesses of data touched once: with streaming hints when the variant asks for them.
  std::string store_fn() const { return variant_.stream ? "store_vec_stream" : "store_vec"; }
  std::string load_chunk(size_t i, const std::string& c0, const std::string& dst) const;
  // Inputs that are one row broadcast over all rows (a norm's weight and bias), vector-read:
  // with RowwiseConfig::resident_weights they are loaded once per CTA into registers (storage
  // type) instead of once per row, which matters when a shared-memory ring leaves little L1.
  void plan_resident();

  const Graph& g_;
  const fuse::Region& r_;
  const cuda::DeviceProperties& dev_;
  RowwiseConfig variant_;
  BodyEmitter body_;
  const Node* anchor_ = nullptr;
  int64_t rows_ = 1, cols_ = 1;
  int vec_ = 1, items_ = 1, threads_ = 32;
  bool in_registers_ = true, index64_ = false;
  Dims lead_sizes_;  // collapsed leading dims, innermost first
  std::vector<RowInput> inputs_;
  std::vector<TensorId> elem_outs_;            // stored tensors of the iteration shape
  std::vector<ExitSlot> global_exits_;         // exit reductions through atomics
  std::vector<std::pair<ExitSlot, bool>> row_exits_;  // per-row results, written directly
  size_t workspace_ = 0;
  // Prologue inputs fetched one row ahead into shared memory with cp.async (by input index).
  std::vector<bool> staged_;
  std::vector<bool> resident_;  // by input index: held in registers across rows (wr<i>[k])
  size_t stage_bytes_ = 0;  // per stage, at the actual row length (host side)
};

void RowwiseGen::plan() {
  const Dims& shape = r_.iteration_shape;
  cols_ = shape.empty() ? 1 : shape.back();
  rows_ = num_elements(shape) / cols_;
  if (r_.anchor >= 0) anchor_ = &g_.node(r_.anchor);
  resolve_heuristic();
  const Dims lead(shape.begin(), shape.end() - (shape.empty() ? 0 : 1));
  // Collapse the leading dims over every input's row strides at once.
  std::vector<Dims> row_strides;
  for (TensorId id : r_.inputs) {
    const TensorInfo& info = t(id);
    Dims bs;
    if (anchor_ && anchor_->op == OpKind::rope && (id == anchor_->inputs[1] || id == anchor_->inputs[2]) &&
        !(id == anchor_->inputs[0])) {
      // cos/sin: [..., R/2] broadcast over x's leading dims, indexed by pair, not by column
      Dims cs_lead(info.dims.begin(), info.dims.end() - 1);
      Dims cs_str(info.strides.begin(), info.strides.end() - 1);
      bs = broadcast_strides(cs_lead, cs_str, lead);
      inputs_.push_back({id, ColAccess::gather, info.strides.back(), {}});
    } else {
      const Dims full = broadcast_strides(info.dims, info.strides, shape);
      bs.assign(full.begin(), full.end() - (full.empty() ? 0 : 1));
      const int64_t cs = full.empty() ? 0 : full.back();
      inputs_.push_back({id, cs == 1 ? ColAccess::vector : cs == 0 ? ColAccess::broadcast
                                                                   : ColAccess::gather, cs, {}});
    }
    row_strides.push_back(bs);
  }
  row_strides.push_back(contiguous_strides(lead));  // keeps the collapse honest for outputs
  const CollapsedShape cs = collapse(lead, row_strides);
  lead_sizes_ = cs.sizes;
  for (size_t i = 0; i < inputs_.size(); ++i) inputs_[i].row_strides = cs.strides[i];

  for (TensorId o : r_.outputs) {
    if (t(o).dims == shape) {
      const NodeId p = t(o).producer;
      const bool is_exit = std::any_of(r_.reductions.begin(), r_.reductions.end(),
                                       [&](const fuse::ExitReduce& e) { return e.node == p; });
      if (!is_exit) {
        elem_outs_.push_back(o);
        continue;
      }
    }
  }
  size_t ws = 0;
  for (const ExitSlot& s : plan_exit_slots(g_, r_, ws)) {
    if (s.exit.pattern == fuse::ExitReduction::rows) {
      row_exits_.push_back({s, true});
    } else {
      global_exits_.push_back(s);
    }
  }
  workspace_ = ws;

  // Vector width: 16 bytes of the narrowest vector-accessed tensor, if it divides the row.
  int64_t min_size = 16;
  for (const RowInput& in : inputs_) {
    if (in.col == ColAccess::vector) min_size = std::min(min_size, dtype_size(t(in.tensor).dtype));
  }
  for (TensorId o : elem_outs_) min_size = std::min(min_size, dtype_size(t(o).dtype));
  vec_ = static_cast<int>(16 / min_size);
  const bool rope = anchor_ && anchor_->op == OpKind::rope;
  if (rope || cols_ % vec_ != 0) vec_ = 1;
  for (RowInput& in : inputs_) {
    // vector loads need aligned row starts
    if (in.col == ColAccess::vector && vec_ > 1) {
      for (int64_t s : in.row_strides) {
        if (s % vec_ != 0) in.col = ColAccess::gather;
      }
    }
  }
  const int64_t vectors = (cols_ + vec_ - 1) / vec_;
  items_ = 1;
  while ((vectors + items_ - 1) / items_ > variant_.max_threads && items_ < 8) items_ *= 2;
  const int64_t per_thread = (vectors + items_ - 1) / items_;
  in_registers_ = per_thread <= 1024 && !rope;
  threads_ = static_cast<int>(std::clamp<int64_t>((per_thread + 31) / 32 * 32, 32, 1024));
  if (!in_registers_) {
    threads_ = rope ? 256 : 1024;
    items_ = 1;
  }
  index64_ = num_elements(shape) >= (int64_t{1} << 31);
}

std::string RowwiseGen::load_chunk(size_t i, const std::string& c0, const std::string& dst) const {
  const RowInput& in = inputs_[i];
  if (i < resident_.size() && resident_[i]) {
    return "convert_vec(wr" + std::to_string(i) + "[k], " + dst + ");";
  }
  if (i < staged_.size() && staged_[i]) {
    return "load_vec_shared(st" + std::to_string(i) + " + " + c0 + ", " + dst + ");";
  }
  const std::string p = "a." + in_name(i) + " + ro" + std::to_string(i);
  switch (in.col) {
    case ColAccess::vector: {
      // per-row data is read once; a broadcast row (a norm's weight) is reused from cache
      const bool per_row = std::any_of(in.row_strides.begin(), in.row_strides.end(),
                                       [](int64_t v) { return v != 0; });
      const char* fn = variant_.stream && per_row ? "load_vec_stream(" : "load_vec(";
      return fn + p + " + " + c0 + ", " + dst + ");";
    }
    case ColAccess::broadcast:
      return "{ const auto s_ = load_one(" + p + "); for (int j = 0; j < kVec; ++j) " + dst +
             "[j] = s_; }";
    case ColAccess::gather:
      return "for (int j = 0; j < kVec; ++j) " + dst + "[j] = load_one(" + p + " + (" + c0 +
             " + j) * a.colstride" + std::to_string(i) + ");";
  }
  return "";
}

void RowwiseGen::plan_resident() {
  resident_.assign(inputs_.size(), false);
  // Only register-resident norm/softmax rows run their loads inside the k loop that names wr[k].
  if (!variant_.resident_weights || !anchor_ || !in_registers_ || anchor_->op == OpKind::rope) return;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const RowInput& in = inputs_[i];
    const bool broadcast_row = std::all_of(in.row_strides.begin(), in.row_strides.end(),
                                           [](int64_t v) { return v == 0; });
    resident_[i] = in.col == ColAccess::vector && broadcast_row;
  }
}

RegionKernels RowwiseGen::build() {
  plan();
  plan_resident();
  std::ostringstream src;
  // The includes go in front once the plan below knows which helpers the kernel uses.
  src << "constexpr int kThreads = " << threads_ << ", kVec = " << vec_ << ", kItems = " << items_
      << ";\nconstexpr bool kIndex64 = " << (index64_ ? "true" : "false") << ";\n"
      << "constexpr int kLeadRank = " << lead_sizes_.size() << ";  // collapsed dims above the row\n";
  src << "struct Args {\n  i64 rows, cols;\n  SinterIterShape lead;\n";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    src << "  const " << storage_type(t(inputs_[i].tensor).dtype) << "* " << in_name(i) << ";  // '"
        << t(inputs_[i].tensor).name << "'\n  SinterStridedView rows" << i << ";\n  i64 colstride" << i
        << ";\n";
  }
  for (size_t k = 0; k < elem_outs_.size(); ++k) {
    src << "  " << storage_type(t(elem_outs_[k]).dtype) << "* out" << k << ";  // '"
        << t(elem_outs_[k]).name << "'\n";
  }
  for (size_t m = 0; m < row_exits_.size(); ++m) {
    src << "  " << storage_type(t(row_exits_[m].first.output).dtype) << "* rowred" << m << ";  // '"
        << t(row_exits_[m].first.output).name << "'\n";
  }
  for (size_t m = 0; m < global_exits_.size(); ++m) src << "  SinterReduceSlot red" << m << ";\n";
  if (anchor_ && anchor_->op == OpKind::rope) src << "  i64 rope_half;\n";
  src << "};\n\n";

  // Names: region inputs are l<i>[j] (a loaded chunk), prologue values v<id>, the anchor's
  // input x (kept as xs[k][j] in registers), its output `y`.
  auto input_index = [&](TensorId id) -> int {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i].tensor == id) return static_cast<int>(i);
    }
    return -1;
  };
  auto needed_loads = [&](const std::vector<NodeId>& nodes, std::set<TensorId> extra) {
    for (NodeId n : nodes) {
      for (TensorId in : g_.node(n).inputs) {
        if (input_index(in) >= 0) extra.insert(in);
      }
    }
    return extra;
  };
  auto emit_loads = [&](const std::set<TensorId>& loads, const std::string& c0,
                        const std::string& indent) {
    std::string s;
    for (TensorId id : loads) {
      const int i = input_index(id);
      s += indent + compute_type(t(id).dtype) + " l" + std::to_string(i) + "[kVec];\n" + indent +
           load_chunk(static_cast<size_t>(i), c0, "l" + std::to_string(i)) + "\n";
    }
    return s;
  };
  const OpKind aop = anchor_ ? anchor_->op : OpKind::identity;
  const TensorId x_tensor = anchor_ ? anchor_->inputs[0] : -1;
  const bool x_is_input = anchor_ && input_index(x_tensor) >= 0;

  // The prologue: computes x for chunk c0 into x_[j]; stores stored prologue values.
  std::set<TensorId> pro_loads = needed_loads(r_.prologue, {});
  if (x_is_input) pro_loads.insert(x_tensor);
  // Stage the per-row prologue inputs through shared memory, one row ahead (cp.async), when the
  // row sits in registers: the next row's bytes are in flight while this one reduces.
  // A bulk ring refills the previous row's buffer at the top of each iteration, once thread 0 has
  // passed that row's block reduction -- other threads may still be in its epilogue. So an input
  // the epilogue reads too (y = norm(x) + x) is not bulk-staged: it is read from global there.
  std::set<TensorId> epi_reads = needed_loads(r_.epilogue, {});
  if (anchor_) epi_reads.insert(anchor_->inputs.begin() + 1, anchor_->inputs.end());
  staged_.assign(inputs_.size(), false);
  std::vector<int> staged_list;
  if (stage_rows() && anchor_ && in_registers_ &&
      (aop == OpKind::layernorm || aop == OpKind::rmsnorm || aop == OpKind::softmax)) {
    for (TensorId id : pro_loads) {
      if (bulk() && epi_reads.count(id)) continue;
      const int i = input_index(id);
      const RowInput& in = inputs_[i];
      const int64_t es = dtype_size(t(id).dtype);
      const bool per_row = std::any_of(in.row_strides.begin(), in.row_strides.end(),
                                       [](int64_t v) { return v != 0; });
      if (in.col == ColAccess::vector && per_row && (vec_ * es) % 16 == 0) {
        staged_[i] = true;
        staged_list.push_back(i);
        stage_bytes_ += static_cast<size_t>((cols_ * es + 15) / 16 * 16);
      }
    }
    if (static_cast<size_t>(stages()) * stage_bytes_ > 96 * 1024) {  // keep two CTAs per SM
      staged_.assign(inputs_.size(), false);
      staged_list.clear();
      stage_bytes_ = 0;
    }
  }
  // Byte offsets of each staged input inside a stage, as expressions of the run-time a.cols.
  std::vector<std::string> stage_off(inputs_.size());
  std::string stage_size = "0";
  for (int i : staged_list) {
    stage_off[i] = stage_size;
    stage_size = "(" + stage_size + " + ((a.cols * static_cast<i64>(sizeof(" +
                 storage_type(t(inputs_[i].tensor).dtype) + ")) + 15) & ~static_cast<i64>(15)))";
  }
  auto staged_pointers = [&](const std::string& indent) {
    std::string out;
    for (int i : staged_list) {
      const std::string ty = storage_type(t(inputs_[i].tensor).dtype);
      out += indent + "const " + ty + "* st" + std::to_string(i) + " = reinterpret_cast<const " + ty +
             "*>(smem_ + stage_ * " + stage_size + " + " + stage_off[i] + ");\n";
    }
    return out;
  };

  auto prologue_chunk = [&](const std::string& c0, const std::string& indent, bool store) {
    std::ostringstream s;
    s << emit_loads(pro_loads, c0, indent);
    s << indent << "#pragma unroll\n" << indent << "for (int j = 0; j < kVec; ++j) {\n";
    BodyEmitter b(g_, r_);
    for (TensorId id : pro_loads) b.bind(id, "l" + std::to_string(input_index(id)) + "[j]");
    s << b.constants() << b.emit(r_.prologue);
    s << indent << "  x_[j] = static_cast<float>(" << b.name_of(x_tensor) << ");\n";
    if (store) {
      for (size_t k = 0; k < elem_outs_.size(); ++k) {
        const NodeId p = t(elem_outs_[k]).producer;
        if (std::find(r_.prologue.begin(), r_.prologue.end(), p) != r_.prologue.end()) {
          s << indent << "  po" << k << "[j] = " << b.name_of(elem_outs_[k]) << ";\n";
        }
      }
    }
    s << indent << "}\n";
    return s.str();
  };
  std::vector<size_t> pro_outs;
  for (size_t k = 0; k < elem_outs_.size(); ++k) {
    const NodeId p = t(elem_outs_[k]).producer;
    if (std::find(r_.prologue.begin(), r_.prologue.end(), p) != r_.prologue.end()) pro_outs.push_back(k);
  }
  auto pro_out_decls = [&](const std::string& indent) {
    std::string s;
    for (size_t k : pro_outs) {
      s += indent + compute_type(t(elem_outs_[k]).dtype) + " po" + std::to_string(k) + "[kVec];\n";
    }
    return s;
  };
  auto pro_out_stores = [&](const std::string& c0, const std::string& indent) {
    std::string s;
    for (size_t k : pro_outs) {
      s += indent + store_fn() + "(a.out" + std::to_string(k) + " + row * a.cols + " + c0 + ", po" +
           std::to_string(k) + ");\n";
    }
    return s;
  };

  // Epilogue for chunk c0 given the anchor output y_[j] (or nothing, without an anchor).
  std::set<TensorId> epi_loads = needed_loads(r_.epilogue, {});
  if (anchor_) {
    for (size_t i = 1; i < anchor_->inputs.size(); ++i) {
      if (aop != OpKind::rope) epi_loads.insert(anchor_->inputs[i]);
    }
  }
  auto epilogue_chunk = [&](const std::string& c0, const std::string& indent) {
    std::ostringstream s;
    s << emit_loads(epi_loads, c0, indent);
    for (size_t k = 0; k < elem_outs_.size(); ++k) {
      if (std::find(pro_outs.begin(), pro_outs.end(), k) != pro_outs.end()) continue;
      s << indent << compute_type(t(elem_outs_[k]).dtype) << " eo" << k << "[kVec];\n";
    }
    s << indent << "#pragma unroll\n" << indent << "for (int j = 0; j < kVec; ++j) {\n";
    if (!row_exits_.empty() || !global_exits_.empty()) {
      s << indent << "  const bool valid_ = " << c0 << " + j < a.cols;\n";
    }
    BodyEmitter b(g_, r_);
    for (TensorId id : epi_loads) b.bind(id, "l" + std::to_string(input_index(id)) + "[j]");
    if (anchor_) {
      const TensorId y = anchor_->outputs[0];
      std::string expr;
      const std::string x = "x_[j]";
      switch (aop) {
        case OpKind::softmax:
          // in registers, the sum pass already replaced x by exp(x - max)
          expr = in_registers_ ? x + " * stat1"
                               : "exp2f((" + x + " - stat0) * 1.4426950408889634f) * stat1";
          break;
        case OpKind::layernorm: {
          // in registers with the two-pass statistics, the variance pass replaced x by x - mean
          const std::string centered =
              in_registers_ ? x : "(" + x + " - stat0)";
          expr = centered + " * stat1 * l" + std::to_string(input_index(anchor_->inputs[1])) + "[j]";
          if (anchor_->inputs.size() > 2) expr += " + l" + std::to_string(input_index(anchor_->inputs[2])) + "[j]";
          break;
        }
        case OpKind::rmsnorm: {
          expr = x + " * stat1 * l" + std::to_string(input_index(anchor_->inputs[1])) + "[j]";
          if (anchor_->inputs.size() > 2) expr += " + l" + std::to_string(input_index(anchor_->inputs[2])) + "[j]";
          break;
        }
        case OpKind::rope: expr = "rope_value_"; break;
        default: throw Error(ErrorCode::internal, "row-wise anchor " + std::string(to_string(aop)));
      }
      s << indent << "  const float y_ = " << intermediate(expr, t(y).dtype) << ";\n";
      b.bind(y, "y_");
    }
    s << b.constants() << b.emit(r_.epilogue);
    for (size_t k = 0; k < elem_outs_.size(); ++k) {
      if (std::find(pro_outs.begin(), pro_outs.end(), k) != pro_outs.end()) continue;
      s << indent << "  eo" << k << "[j] = " << b.name_of(elem_outs_[k]) << ";\n";
    }
    for (size_t m = 0; m < row_exits_.size(); ++m) {
      const Node& rn = g_.node(row_exits_[m].first.exit.node);
      const std::string kind = reduce_kind(rn.op);
      s << indent << "  if (valid_) racc" << m << " = reduce_combine<" << kind << ">(racc" << m
        << ", reduce_input<" << kind << ">(static_cast<float>(" << b.name_of(rn.inputs[0]) << ")));\n";
    }
    for (size_t m = 0; m < global_exits_.size(); ++m) {
      const Node& rn = g_.node(global_exits_[m].exit.node);
      const std::string kind = reduce_kind(rn.op);
      s << indent << "  if (valid_) gacc" << m << " = reduce_combine<" << kind << ">(gacc" << m
        << ", reduce_input<" << kind << ">(static_cast<float>(" << b.name_of(rn.inputs[0]) << ")));\n";
    }
    s << indent << "}\n";
    for (size_t k = 0; k < elem_outs_.size(); ++k) {
      if (std::find(pro_outs.begin(), pro_outs.end(), k) != pro_outs.end()) continue;
      s << indent << "if (" << c0 << " < a.cols) " << store_fn() << "(a.out" << k << " + row * a.cols + " << c0
        << ", eo" << k << ");\n";
    }
    return s.str();
  };

  // ---- kernel ------------------------------------------------------------------------------
  const bool bulk_staged = !staged_list.empty() && bulk();
  if (bulk_staged) {
    // One thread copies each staged input's whole row: rows are contiguous (vector access) and
    // their bytes a multiple of 16 (staging requires kVec * size == 16 and cols % kVec == 0).
    src << "constexpr int kStages = " << stages() << ";  // row buffers in the ring\n"
        << "// Thread 0 only: starts the copies of `row` into ring buffer `stage_`, counted on bars_[stage_].\n"
        << "__device__ __forceinline__ void issue_row(const Args& a, i64 row, int stage_, char* smem_, u64* bars_) {\n"
        << "  u32 bytes_ = 0;\n";
    for (int i : staged_list) {
      src << "  bytes_ += static_cast<u32>(a.cols * static_cast<i64>(sizeof(" << storage_type(t(inputs_[i].tensor).dtype)
          << ")));\n";
    }
    src << "  mbarrier_arrive_expect_tx(&bars_[stage_], bytes_);\n";
    for (int i : staged_list) {
      const std::string ty = storage_type(t(inputs_[i].tensor).dtype);
      src << "  { const i64 ro = offset_of<kIndex64, kLeadRank>(a.lead, a.rows" << i << ", row);\n"
          << (variant_.stream ? "    bulk_copy_g2s_evict_first(smem_ + stage_ * " : "    bulk_copy_g2s(smem_ + stage_ * ")
          << stage_size << " + " << stage_off[i] << ", a." << in_name(i)
          << " + ro, static_cast<u32>(a.cols * static_cast<i64>(sizeof(" << ty << "))), &bars_[stage_]); }\n";
    }
    src << "}\n\n";
  } else if (!staged_list.empty()) {
    src << "// Fetches this thread's chunks of `row` for the staged inputs into stage `stage_`.\n"
        << "__device__ __forceinline__ void issue_row(const Args& a, i64 row, int stage_, char* smem_) {\n";
    for (int i : staged_list) {
      const std::string ty = storage_type(t(inputs_[i].tensor).dtype);
      src << "  { const i64 ro = offset_of<kIndex64, kLeadRank>(a.lead, a.rows" << i << ", row);\n"
          << "    " << ty << "* dst = reinterpret_cast<" << ty << "*>(smem_ + stage_ * " << stage_size
          << " + " << stage_off[i] << ");\n"
          << "#pragma unroll\n    for (int k = 0; k < kItems; ++k) {\n"
          << "      const i64 c0 = (static_cast<i64>(k) * kThreads + threadIdx.x) * kVec;\n"
          << "      if (c0 < a.cols) cp_async_vec<" << ty << ", kVec>(dst + c0, a." << in_name(i)
          << " + ro + c0);\n    }\n  }\n";
    }
    src << "}\n\n";
  }
  // A CTA count the SM cannot hold (2048 threads) would only starve registers: then no request.
  const int min_blocks = variant_.min_blocks > 0 && threads_ * variant_.min_blocks <= 2048 ? variant_.min_blocks : 0;
  const std::string bounds = min_blocks > 0 ? "kThreads, " + std::to_string(min_blocks) : "kThreads";
  src << "extern \"C\" __global__ void __launch_bounds__(" << bounds << ") sinter_region(const __grid_constant__ Args a) {\n  sinter_kernel_begin();\n"
      << "  __shared__ float scratch[33];\n";
  if (bulk_staged) {
    // The ring starts kStages - 1 rows ahead. Buffer s holds this CTA's rows it_ = s, s + kStages,
    // ...; the k-th of them completes phase k of bars_[s], so its wait parity is (it_ / kStages) & 1.
    src << "  extern __shared__ __align__(128) char smem_[];\n"
        << "  __shared__ __align__(8) u64 bars_[kStages];\n"
        << "  if (threadIdx.x == 0) {\n"
        << "    for (int s_ = 0; s_ < kStages; ++s_) mbarrier_init(&bars_[s_], 1);\n"
        << "    fence_barrier_init();\n"
        << "  }\n  __syncthreads();\n"
        << "  if (threadIdx.x == 0) {\n"
        << "    for (int s_ = 0; s_ < kStages - 1; ++s_) {\n"
        << "      const i64 r_ = blockIdx.x + static_cast<i64>(s_) * gridDim.x;\n"
        << "      if (r_ < a.rows) issue_row(a, r_, s_, smem_, bars_);\n"
        << "    }\n  }\n";
  } else if (!staged_list.empty()) {
    src << "  extern __shared__ __align__(16) char smem_[];\n"
        << "  if (blockIdx.x < a.rows) issue_row(a, blockIdx.x, 0, smem_);\n"
        << "  cp_async_commit();\n";
  }
  for (size_t m = 0; m < global_exits_.size(); ++m) {
    src << "  float gacc" << m << " = reduce_identity<"
        << reduce_kind(g_.node(global_exits_[m].exit.node).op) << ">();\n";
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!resident_[i]) continue;
    // Chunks past the row's end are never read (every use sits under c0 < a.cols).
    const std::string ty = storage_type(t(inputs_[i].tensor).dtype);
    src << "  " << ty << " wr" << i << "[kItems][kVec];\n"
        << "  { const i64 ro = offset_of<kIndex64, kLeadRank>(a.lead, a.rows" << i << ", 0);\n"
        << "#pragma unroll\n    for (int k = 0; k < kItems; ++k) {\n"
        << "      const i64 c0 = (static_cast<i64>(k) * kThreads + threadIdx.x) * kVec;\n"
        << "      if (c0 < a.cols) load_raw(a." << in_name(i) << " + ro + c0, wr" << i << "[k]);\n"
        << "    }\n  }\n";
  }
  if (bulk_staged) {
    // The ring position of row it_ (it_ % kStages) and its wait parity ((it_ / kStages) & 1),
    // kept as counters: the 64-bit division by kStages cost ~20 instructions per row.
    src << "  int ring_stage_ = 0;\n  u32 ring_phase_ = 0;\n";
  }
  src << "  i64 it_ = 0;\n  for (i64 row = blockIdx.x; row < a.rows; row += gridDim.x, ++it_) {\n";
  if (bulk_staged) {
    // Refilling buffer (it_ - 1) % kStages is safe: every thread finished reading it before the
    // block reduction of row it_ - 1, whose barrier thread 0 has passed to get here.
    src << "    const int stage_ = ring_stage_;\n"
        << "    if (threadIdx.x == 0) {\n"
        << "      const i64 next_ = row + static_cast<i64>(kStages - 1) * gridDim.x;\n"
        << "      if (next_ < a.rows) issue_row(a, next_, stage_ == 0 ? kStages - 1 : stage_ - 1, smem_, bars_);\n"
        << "    }\n"
        << "    mbarrier_wait(&bars_[stage_], ring_phase_);  // this row has landed\n"
        << "    if (++ring_stage_ == kStages) { ring_stage_ = 0; ring_phase_ ^= 1u; }\n"
        << staged_pointers("    ");
  } else if (!staged_list.empty()) {
    src << "    const int stage_ = static_cast<int>(it_ & 1);\n"
        << "    { const i64 next_ = row + gridDim.x;\n"
        << "      if (next_ < a.rows) issue_row(a, next_, stage_ ^ 1, smem_);\n"
        << "      cp_async_commit();\n      cp_async_wait<1>(); }  // this row's own chunks have landed\n"
        << staged_pointers("    ");
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    src << "    const i64 ro" << i << " = offset_of<kIndex64, kLeadRank>(a.lead, a.rows" << i << ", row);\n";
  }
  for (size_t m = 0; m < row_exits_.size(); ++m) {
    src << "    float racc" << m << " = reduce_identity<"
        << reduce_kind(g_.node(row_exits_[m].first.exit.node).op) << ">();\n";
  }
  std::string eps = "0.0f";
  if (anchor_ && (aop == OpKind::layernorm || aop == OpKind::rmsnorm)) {
    eps = float_literal(std::get<NormAttrs>(anchor_->attrs).epsilon);
  }
  const std::string inv_cols = "(1.0f / static_cast<float>(a.cols))";
  if (anchor_ && aop != OpKind::rope && in_registers_) {
    // Registers: the row's x values once.
    src << "    float xs[kItems][kVec];\n" << pro_out_decls("    ");
    src << "#pragma unroll\n    for (int k = 0; k < kItems; ++k) {\n"
        << "      const i64 c0 = (static_cast<i64>(k) * kThreads + threadIdx.x) * kVec;\n"
        << "      if (c0 < a.cols) {\n        float x_[kVec];\n"
        << prologue_chunk("c0", "        ", true)
        << "#pragma unroll\n        for (int j = 0; j < kVec; ++j) xs[k][j] = x_[j];\n"
        << pro_out_stores("c0", "        ") << "      }\n    }\n";
    // This thread's own elements, for the row statistics.
    auto over_own = [&](const std::string& update) {
      return "#pragma unroll\n      for (int k = 0; k < kItems; ++k) {\n"
             "        const i64 c0 = (static_cast<i64>(k) * kThreads + threadIdx.x) * kVec;\n"
             "        if (c0 < a.cols) {\n#pragma unroll\n          for (int j = 0; j < kVec; ++j) { "
             "const float x = xs[k][j]; " + update + "; }\n        }\n      }\n";
    };
    // The two single-barrier block reductions of a row alternate between the two arrays of
    // rowstat_, [0] then [1] (see block_reduce_alternating).
    const std::string rowstat_decl = "      __shared__ float rowstat_[2][32];\n      (void)rowstat_;\n";
    src << "    float stat0 = 0.0f, stat1 = 1.0f;\n";
    switch (aop) {
      case OpKind::layernorm:
        {
          // The exact two-pass variance: the row mean first, then the squared deviations from it
          // (no E[x^2] - E[x]^2 cancellation; the values are in registers, so no second read).
          // The deviations replace x in registers: the epilogue scales them (one subtraction
          // per element less there).
          src << "    { float s_ = 0.0f;\n" << rowstat_decl << over_own("s_ += x")
              << "      const float m_ = " << stat_reduce("kReduceSum", "s_", 0) << " * " << inv_cols << ";\n"
              << "      float q_ = 0.0f;\n" << over_own("const float d_ = x - m_; xs[k][j] = d_; q_ += d_ * d_")
              << "      stat0 = m_;\n      stat1 = rsqrtf(" << stat_reduce("kReduceSum", "q_", 1) << " * "
              << inv_cols << " + " << eps << "); }\n";
          break;
        }
        break;
      case OpKind::rmsnorm:
        // The guarded two-barrier block_reduce: with the single-barrier one the default rmsnorm
        // kernel (direct loads, persistent) took 5% longer (H200, session 8, same call, 16384 x
        // 8192 bf16: 0.2096 ms against 0.1989; again 0.2083 in another call).
        src << "    { float p_ = 0.0f;\n" << over_own("p_ += x * x")
            << "      stat1 = rsqrtf(block_reduce<kReduceSum>(p_, scratch) * " << inv_cols << " + " << eps << "); }\n";
        break;
      case OpKind::softmax:
        {
          // The row max first (max.NaN: a NaN element makes the row NaN, as in the reference),
          // then each element's exp against it, kept in registers, and the row sum. A row of
          // -inf comes out NaN (exp(-inf - -inf)), as in the reference.
          src << "    { float m_ = reduce_identity<kReduceMax>();\n" << rowstat_decl << over_own("m_ = op_max(m_, x)")
              << "      m_ = " << stat_reduce("kReduceMax", "m_", 0) << ";\n"
              << "      const float ml_ = m_ * 1.4426950408889634f;\n      float s_ = 0.0f;\n"
              << over_own("xs[k][j] = fast_exp2(fmaf(x, 1.4426950408889634f, -ml_)); s_ += xs[k][j]")
              << "      stat0 = m_;\n      stat1 = 1.0f / " << stat_reduce("kReduceSum", "s_", 1) << "; }\n";
          break;
        }
        break;
      default: break;
    }
    src << "#pragma unroll\n    for (int k = 0; k < kItems; ++k) {\n"
        << "      const i64 c0 = (static_cast<i64>(k) * kThreads + threadIdx.x) * kVec;\n"
        << "      if (c0 < a.cols) {\n        float x_[kVec];\n"
        << "#pragma unroll\n        for (int j = 0; j < kVec; ++j) x_[j] = xs[k][j];\n"
        << epilogue_chunk("c0", "        ") << "      }\n    }\n";
  } else if (anchor_) {
    // Streaming passes (long rows, and rope, which reads each element's partner).
    auto pass = [&](const std::string& init, const std::string& update, const std::string& kind) {
      std::ostringstream s;
      s << "    { float p_ = " << init << ";\n"
        << "      for (i64 c0 = static_cast<i64>(threadIdx.x) * kVec; c0 < a.cols; c0 += static_cast<i64>(kThreads) * kVec) {\n"
        << "        float x_[kVec];\n" << prologue_chunk("c0", "        ", false)
        << "#pragma unroll\n        for (int j = 0; j < kVec; ++j) { const float x = x_[j]; " << update
        << "; }\n      }\n      stat_ = block_reduce<" << kind << ">(p_, scratch); }\n";
      return s.str();
    };
    src << "    float stat_, stat0 = 0.0f, stat1 = 1.0f;\n    (void)stat_;\n";
    switch (aop) {
      case OpKind::layernorm:
        src << pass("0.0f", "p_ += x", "kReduceSum") << "    stat0 = stat_ * " << inv_cols << ";\n";
        src << pass("0.0f", "p_ += (x - stat0) * (x - stat0)", "kReduceSum")
            << "    stat1 = rsqrtf(stat_ * " << inv_cols << " + " << eps << ");\n";
        break;
      case OpKind::rmsnorm:
        src << pass("0.0f", "p_ += x * x", "kReduceSum") << "    stat1 = rsqrtf(stat_ * " << inv_cols
            << " + " << eps << ");\n";
        break;
      case OpKind::softmax:
        src << pass("reduce_identity<kReduceMax>()", "p_ = op_max(p_, x)", "kReduceMax")
            << "    stat0 = stat_;\n";
        src << pass("0.0f", "p_ += exp2f((x - stat0) * 1.4426950408889634f)", "kReduceSum")
            << "    stat1 = 1.0f / stat_;\n";
        break;
      default: break;
    }
    src << "    for (i64 c0 = static_cast<i64>(threadIdx.x) * kVec; c0 < a.cols; c0 += static_cast<i64>(kThreads) * kVec) {\n"
        << pro_out_decls("      ") << "      float x_[kVec];\n" << prologue_chunk("c0", "      ", true)
        << pro_out_stores("c0", "      ");
    if (aop == OpKind::rope) {
      // kVec is 1 here: the partner's x is the prologue recomputed at the partner column.
      const auto& at = std::get<RopeAttrs>(anchor_->attrs);
      const int ci = input_index(anchor_->inputs[1]), si = input_index(anchor_->inputs[2]);
      src << "      float rope_value_ = x_[0], rope_partner_ = 0.0f;\n      const i64 half_ = a.rope_half;\n"
          << "      if (c0 < 2 * half_) {\n";
      if (at.interleaved) {
        src << "        const i64 pair_ = c0 / 2; const bool first_ = (c0 % 2) == 0;\n"
            << "        const i64 partner_ = first_ ? c0 + 1 : c0 - 1;\n";
      } else {
        src << "        const bool first_ = c0 < half_; const i64 pair_ = first_ ? c0 : c0 - half_;\n"
            << "        const i64 partner_ = first_ ? c0 + half_ : c0 - half_;\n";
      }
      src << "        float mine_ = x_[0];\n        { const i64 c0 = partner_; float x_[kVec];\n"
          << prologue_chunk("c0", "          ", false) << "          rope_partner_ = x_[0]; }\n"
          << "        const float cs_ = to_float(a.in" << ci << "[ro" << ci << " + pair_ * a.colstride" << ci << "]);\n"
          << "        const float sn_ = to_float(a.in" << si << "[ro" << si << " + pair_ * a.colstride" << si << "]);\n"
          << "        rope_value_ = first_ ? mine_ * cs_ - rope_partner_ * sn_ : mine_ * cs_ + rope_partner_ * sn_;\n"
          << "      }\n";
    }
    src << epilogue_chunk("c0", "      ") << "    }\n";
  } else {
    // No anchor: the epilogue is the whole region.
    src << "    for (i64 c0 = static_cast<i64>(threadIdx.x) * kVec; c0 < a.cols; c0 += static_cast<i64>(kThreads) * kVec) {\n"
        << epilogue_chunk("c0", "      ") << "    }\n";
  }
  for (size_t m = 0; m < row_exits_.size(); ++m) {
    const Node& rn = g_.node(row_exits_[m].first.exit.node);
    const std::string kind = reduce_kind(rn.op);
    src << "    { const float v = block_reduce<" << kind << ">(racc" << m << ", scratch);\n"
        << "      if (threadIdx.x == 0) a.rowred" << m << "[row] = from_float<"
        << storage_type(t(rn.outputs[0]).dtype) << ">(v"
        << (rn.op == OpKind::reduce_mean ? " * " + inv_cols : "") << "); }\n";
  }
  src << "  }\n";
  for (size_t m = 0; m < global_exits_.size(); ++m) {
    const Node& rn = g_.node(global_exits_[m].exit.node);
    const std::string kind = reduce_kind(rn.op);
    src << "  { const float v = block_reduce<" << kind << ">(gacc" << m << ", scratch);\n"
        << "    if (threadIdx.x == 0) accumulate_atomic<" << kind << ">(a.red" << m << ".acc, v);\n"
        << "    finalize_exit_reduction<" << kind << ", " << storage_type(t(rn.outputs[0]).dtype)
        << ">(a.red" << m << "); }\n";
  }
  src << "}\n";
  std::vector<std::string> includes = {"common/async_copy.cuh"};
  if (bulk_staged) includes.push_back("common/bulk_copy.cuh");
  // The streaming helpers only where a hinted access was emitted (else the kernel is the
  // unhinted variant's, and the engine keeps one of the two).
  const std::string body_text = src.str();
  if (body_text.find("_stream(") != std::string::npos) includes.push_back("common/stream_memory.cuh");
  const std::string text = "// row-wise region " + std::to_string(r_.id) + " of graph '" + g_.name() + "'\n" +
                           kernel_includes(includes) + body_text;

  // ---- arguments ----------------------------------------------------------------------------
  RegionKernels rk;
  rk.workspace_bytes = workspace_;
  KernelSpec spec;
  spec.source = text;
  spec.description = "rowwise " + std::string(anchor_ ? to_string(aop) : "pointwise") +
                     (in_registers_ && aop != OpKind::rope ? " registers" : " streaming") +
                     (bulk_staged ? " bulk-staged x" + std::to_string(stages())
                                  : stage_bytes_ > 0 ? " cp.async-staged" : "") +
                     (text.find("_stream(") != std::string::npos ? " stream-hints" : "") +
                     (std::find(resident_.begin(), resident_.end(), true) != resident_.end() ? " resident-weights" : "") +
                     (min_blocks > 0 ? " min-ctas" + std::to_string(min_blocks) : "") +
                     " threads" +
                     std::to_string(threads_) + " vec" + std::to_string(vec_) + " items" +
                     std::to_string(items_);
  spec.args.add(rows_);
  spec.args.add(cols_);
  CollapsedShape lead;
  lead.sizes = lead_sizes_;
  lead.numel = rows_;
  spec.args.add(make_iter_shape(lead));
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const int64_t es = dtype_size(t(inputs_[i].tensor).dtype);
    const int align = inputs_[i].col == ColAccess::vector ? static_cast<int>(std::min<int64_t>(16, vec_ * es))
                                                        : static_cast<int>(es);
    spec.pointers.push_back({Src::input, region_input_index(r_, inputs_[i].tensor), 0,
                             spec.args.add_pointer(nullptr), align});
    spec.args.add(make_view(inputs_[i].row_strides));
    spec.args.add(inputs_[i].col_stride);
  }
  for (TensorId o : elem_outs_) {
    const int64_t es = dtype_size(t(o).dtype);
    spec.pointers.push_back({Src::output, region_output_index(r_, o), 0, spec.args.add_pointer(nullptr),
                             static_cast<int>(std::min<int64_t>(16, vec_ * es))});
  }
  for (const auto& [slot, unused] : row_exits_) {
    spec.pointers.push_back({Src::output, slot.output_index, 0, spec.args.add_pointer(nullptr), 1});
  }
  pack_exit_slots(spec, global_exits_);
  if (aop == OpKind::rope) {
    spec.args.add(static_cast<int64_t>(t(anchor_->inputs[1]).dims.back()));
  }
  spec.args.finish();
  spec.launch.block = dim3(threads_);
  spec.launch.dynamic_shared_memory = static_cast<size_t>(stages()) * stage_bytes_;
  // One row per CTA where the variant asks (RowwiseConfig::flat) and no exit reduction ends each
  // CTA with atomics on one address (as for pointwise tiles).
  if (set_work_grid(spec, rows_, variant_.flat && global_exits_.empty(), dev_)) spec.description += " flat";
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace

RegionKernels build_rowwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                            RowwiseConfig variant) {
  return RowwiseGen(g, r, dev, variant).build();
}

std::span<const RowwiseConfig> all_rowwise_configs() {
  using S = RowStage;
  static const RowwiseConfig configs[] = {
      {S::heuristic, 512}, {S::off, 256}, {S::on, 256}, {S::off, 512}, {S::on, 512}, {S::off, 1024}, {S::on, 1024},
      // rows staged by cp.async.bulk into a 2- or 3-buffer ring (1 or 2 rows ahead)
      {S::bulk, 512, 2}, {S::bulk, 512, 3}, {S::bulk, 256, 3},
      // streaming cache hints (no L1 allocation for rows read once, evict-first stores)
      {S::off, 512, 2, true}, {S::on, 512, 2, true}, {S::bulk, 512, 3, true},
      // weights and biases held in registers across rows (with the bulk ring, little L1 is left
      // to keep them in cache)
      {S::bulk, 512, 3, false, true}, {S::bulk, 256, 3, false, true}, {S::on, 512, 2, false, true},
      // a 2-buffer bulk ring at 3 CTAs of 512 per SM (registers capped at 42): an add+layernorm
      // row pair is 32 KB, so 3 x 64 KB of rings fit where 46 registers allowed only 2 CTAs
      {S::bulk, 512, 2, false, false, 3},
      // one row per CTA over a grid of every row (no persistent loop)
      {S::off, 512, 2, false, false, 0, true}, {S::off, 256, 2, false, false, 0, true},
      {S::off, 1024, 2, false, false, 0, true}};
  return configs;
}

std::vector<RowwiseConfig> rowwise_configs(const Graph&, const fuse::Region&, const cuda::DeviceProperties&) {
  const std::span<const RowwiseConfig> all = all_rowwise_configs();
  return {all.begin(), all.end()};
}

}  // namespace sinter::jit
