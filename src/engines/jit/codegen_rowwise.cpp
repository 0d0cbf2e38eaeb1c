// Row-wise regions: softmax, layernorm, rmsnorm or rope over the last axis, with the pointwise
// prologue that feeds the anchor (a residual add), the epilogue after it, per-row and global exit
// reductions; also anchor-less pointwise regions with per-row reductions.
//
// The kernel is kernels/rowwise/rowwise.cuh over a Cfg (the structure planned here) and a Fused
// functor (the region's expression, generated here: its input loads, prologue and epilogue
// nodes, stores and exit reductions). One CTA owns one row at a time. When the row fits, each
// thread keeps kItems vectors of kVec elements of the anchor's input in registers, so the row is
// read from memory once; longer rows are streamed in passes that recompute the prologue.
#include <algorithm>
#include <set>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"  // ArgsWriter
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
  bool staged = false;    // the prologue reads it from the row staged in shared memory (st<i>)
  bool resident = false;  // broadcast over the rows, held in registers by each CTA (wr<i>[k])
};

// Where a row's prologue inputs come from (RowwiseConfig::stage, once resolved for the region).
enum class Staging { none, cp_async, bulk };

class RowwiseGen {
 public:
  RowwiseGen(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, RowwiseConfig variant)
      : g_(g), r_(r), dev_(dev), variant_(variant) {}

  RegionKernels build();

 private:
  const TensorInfo& t(TensorId id) const { return g_.tensor(id); }
  OpKind op() const { return anchor_ ? anchor_->op : OpKind::identity; }
  int input_index(TensorId id) const;
  bool is_prologue_output(size_t k) const;

  void resolve_heuristic();
  void plan_inputs();
  void plan_outputs();
  void plan_vectors();
  void plan_staging();
  void plan_resident();

  std::string config_source() const;
  std::string args_source(KernelSpec& spec) const;
  std::string fused_source() const;
  std::string row_state() const;
  std::string prologue_source() const;
  std::string epilogue_source() const;
  std::string exits_source() const;
  std::string staging_source() const;
  std::string rope_source() const;
  std::string load_chunk(size_t i, const std::string& dst) const;
  std::string loads(const std::set<TensorId>& ids, const std::string& indent) const;
  std::string anchor_value() const;
  std::string store_fn() const { return variant_.stream ? "store_vec_stream" : "store_vec"; }
  std::string description(const std::string& fused) const;

  const Graph& g_;
  const fuse::Region& r_;
  const cuda::DeviceProperties& dev_;
  RowwiseConfig variant_;
  const Node* anchor_ = nullptr;
  TensorId x_tensor_ = -1;  // the anchor's input (row op input 0)
  int64_t rows_ = 1, cols_ = 1;
  int vec_ = 1, items_ = 1, threads_ = 32, min_blocks_ = 0;
  bool in_registers_ = true, index64_ = false;
  Dims lead_sizes_;  // collapsed leading dims, innermost first
  std::vector<RowInput> inputs_;
  std::vector<TensorId> elem_outs_;      // stored tensors of the iteration shape
  std::vector<ExitSlot> global_exits_;   // exit reductions through atomics
  std::vector<ExitSlot> row_exits_;      // per-row results, written directly
  size_t workspace_ = 0;
  std::set<TensorId> pro_loads_, epi_loads_;  // region inputs the prologue / epilogue read
  Staging staging_ = Staging::none;
  int stages_ = 0;          // row buffers in shared memory
  size_t stage_bytes_ = 0;  // per buffer, at the actual row length (host side)
};

int RowwiseGen::input_index(TensorId id) const {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].tensor == id) return static_cast<int>(i);
  }
  return -1;
}

bool RowwiseGen::is_prologue_output(size_t k) const {
  const NodeId p = t(elem_outs_[k]).producer;
  return std::find(r_.prologue.begin(), r_.prologue.end(), p) != r_.prologue.end();
}

// The heuristic variant (candidate 0) made concrete from H200 measurements (docs/benchmarks.md,
// 16384 x 8192 bf16):
//  - softmax: one row per CTA of at most 256 threads, read straight into registers (0.1360 ms
//    against 0.1548 for the bulk-ring persistent kernel and 0.1439 for flat rows of 512 threads);
//  - layernorm: rows staged by the bulk ring, 2 buffers deep, which fits 3 CTAs of 512 per SM
//    where 3 buffers fit 2 (add+layernorm 0.2040 ms against 0.2135 for 3 buffers; cp.async
//    staging 0.2101);
//  - every other row op unstaged (rmsnorm 0.197 ms direct against 0.220 staged).
void RowwiseGen::resolve_heuristic() {
  if (variant_.stage != RowStage::heuristic) return;
  variant_.stage = RowStage::off;
  if (op() == OpKind::softmax) {
    variant_.max_threads = 256;
    variant_.flat = true;
  } else if (op() == OpKind::layernorm) {
    variant_.stage = RowStage::bulk;
    variant_.stages = 2;
  }
}

// Each input's access along the row, and its row strides over the collapsed leading dims.
void RowwiseGen::plan_inputs() {
  const Dims& shape = r_.iteration_shape;
  const Dims lead(shape.begin(), shape.end() - (shape.empty() ? 0 : 1));
  // Collapse the leading dims over every input's row strides at once.
  std::vector<Dims> row_strides;
  for (TensorId id : r_.inputs) {
    const TensorInfo& info = t(id);
    Dims bs;
    if (op() == OpKind::rope && (id == anchor_->inputs[1] || id == anchor_->inputs[2]) && id != anchor_->inputs[0]) {
      // cos/sin: [..., R/2] broadcast over x's leading dims, indexed by pair, not by column
      Dims cs_lead(info.dims.begin(), info.dims.end() - 1);
      Dims cs_str(info.strides.begin(), info.strides.end() - 1);
      bs = broadcast_strides(cs_lead, cs_str, lead);
      inputs_.push_back({id, ColAccess::gather, info.strides.back(), {}});
    } else {
      const Dims full = broadcast_strides(info.dims, info.strides, shape);
      bs.assign(full.begin(), full.end() - (full.empty() ? 0 : 1));
      const int64_t cs = full.empty() ? 0 : full.back();
      inputs_.push_back({id, cs == 1 ? ColAccess::vector : cs == 0 ? ColAccess::broadcast : ColAccess::gather, cs, {}});
    }
    row_strides.push_back(bs);
  }
  row_strides.push_back(contiguous_strides(lead));  // keeps the collapse honest for outputs
  const CollapsedShape cs = collapse(lead, row_strides);
  lead_sizes_ = cs.sizes;
  for (size_t i = 0; i < inputs_.size(); ++i) inputs_[i].row_strides = cs.strides[i];
  index64_ = num_elements(shape) >= (int64_t{1} << 31);
}

void RowwiseGen::plan_outputs() {
  const Dims& shape = r_.iteration_shape;
  for (TensorId o : r_.outputs) {
    const NodeId p = t(o).producer;
    const bool is_exit = std::any_of(r_.reductions.begin(), r_.reductions.end(),
                                     [&](const fuse::ExitReduce& e) { return e.node == p; });
    if (t(o).dims == shape && !is_exit) elem_outs_.push_back(o);
  }
  for (const ExitSlot& s : plan_exit_slots(g_, r_, workspace_)) {
    (s.exit.pattern == fuse::ExitReduction::rows ? row_exits_ : global_exits_).push_back(s);
  }
  // The region inputs each part reads: the prologue computes x, the epilogue the rest.
  auto reads = [&](const std::vector<NodeId>& nodes, std::set<TensorId>& out) {
    for (NodeId n : nodes) {
      for (TensorId in : g_.node(n).inputs) {
        if (input_index(in) >= 0) out.insert(in);
      }
    }
  };
  reads(r_.prologue, pro_loads_);
  if (anchor_ && input_index(x_tensor_) >= 0) pro_loads_.insert(x_tensor_);
  reads(r_.epilogue, epi_loads_);
  if (anchor_ && op() != OpKind::rope) epi_loads_.insert(anchor_->inputs.begin() + 1, anchor_->inputs.end());
}

// Vector width, and the row split over threads and items.
void RowwiseGen::plan_vectors() {
  // 16 bytes of the narrowest vector-accessed tensor, if it divides the row.
  int64_t min_size = 16;
  for (const RowInput& in : inputs_) {
    if (in.col == ColAccess::vector) min_size = std::min(min_size, dtype_size(t(in.tensor).dtype));
  }
  for (TensorId o : elem_outs_) min_size = std::min(min_size, dtype_size(t(o).dtype));
  vec_ = static_cast<int>(16 / min_size);
  const bool rope = op() == OpKind::rope;
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
  // A CTA count the SM cannot hold (2048 threads) would only starve registers: then no request.
  min_blocks_ = variant_.min_blocks > 0 && threads_ * variant_.min_blocks <= 2048 ? variant_.min_blocks : 0;
}

// Stage the per-row prologue inputs through shared memory, rows ahead, when the row sits in
// registers: the next rows' bytes are in flight while this one reduces. A bulk ring refills the
// previous row's buffer at the top of each iteration, once thread 0 has passed that row's block
// reduction -- other threads may still be in its epilogue. So an input the epilogue reads too
// (y = norm(x) + x) is not bulk-staged: it is read from global there.
void RowwiseGen::plan_staging() {
  const OpKind aop = op();
  const bool bulk = variant_.stage == RowStage::bulk;
  if (variant_.stage == RowStage::off || !anchor_ || !in_registers_ ||
      (aop != OpKind::layernorm && aop != OpKind::rmsnorm && aop != OpKind::softmax)) {
    return;
  }
  std::set<TensorId> epi_reads = epi_loads_;
  epi_reads.insert(anchor_->inputs.begin() + 1, anchor_->inputs.end());
  const int stages = bulk ? std::clamp(variant_.stages, 2, 4) : 2;
  size_t bytes = 0;
  std::vector<int> staged;
  for (TensorId id : pro_loads_) {
    if (bulk && epi_reads.count(id)) continue;
    const int i = input_index(id);
    const RowInput& in = inputs_[i];
    const int64_t es = dtype_size(t(id).dtype);
    const bool per_row = std::any_of(in.row_strides.begin(), in.row_strides.end(), [](int64_t v) { return v != 0; });
    if (in.col == ColAccess::vector && per_row && (vec_ * es) % 16 == 0) {
      staged.push_back(i);
      bytes += static_cast<size_t>((cols_ * es + 15) / 16 * 16);
    }
  }
  if (staged.empty() || static_cast<size_t>(stages) * bytes > 96 * 1024) return;  // keep two CTAs per SM
  for (int i : staged) inputs_[i].staged = true;
  staging_ = bulk ? Staging::bulk : Staging::cp_async;
  stages_ = stages;
  stage_bytes_ = bytes;
}

// Inputs that are one row broadcast over all rows (a norm's weight and bias), vector-read: with
// RowwiseConfig::resident_weights they are loaded once per CTA into registers (storage type)
// instead of once per row, which matters when a shared-memory ring leaves little L1. Only
// register-resident norm/softmax rows run their loads inside the k loop that names wr<i>[k].
void RowwiseGen::plan_resident() {
  if (!variant_.resident_weights || !anchor_ || !in_registers_ || op() == OpKind::rope) return;
  for (RowInput& in : inputs_) {
    const bool broadcast_row = std::all_of(in.row_strides.begin(), in.row_strides.end(), [](int64_t v) { return v == 0; });
    in.resident = in.col == ColAccess::vector && broadcast_row;
  }
}

std::string RowwiseGen::config_source() const {
  auto op_name = [&]() -> std::string {
    switch (op()) {
      case OpKind::layernorm: return "layernorm";
      case OpKind::rmsnorm: return "rmsnorm";
      case OpKind::softmax: return "softmax";
      case OpKind::rope: return "rope";
      default: return "none";
    }
  };
  const char* staging = staging_ == Staging::bulk ? "bulk" : staging_ == Staging::cp_async ? "cp_async" : "none";
  std::ostringstream s;
  s << "struct Cfg {\n"
    << "  static constexpr RowOp kOp = RowOp::" << op_name() << ";\n"
    << "  static constexpr int kThreads = " << threads_ << ", kVec = " << vec_ << ", kItems = " << items_ << ";\n"
    << "  static constexpr bool kIndex64 = " << (index64_ ? "true" : "false")
    << ", kInRegisters = " << (in_registers_ ? "true" : "false") << ";\n"
    << "  static constexpr int kLeadRank = " << lead_sizes_.size() << ";  // collapsed dims above the row\n"
    << "  static constexpr RowStaging kStaging = RowStaging::" << staging << ";\n"
    << "  static constexpr int kStages = " << stages_ << ";  // row buffers in shared memory\n";
  if (op() == OpKind::layernorm || op() == OpKind::rmsnorm) {
    s << "  static constexpr float kEps = " << float_literal(std::get<NormAttrs>(anchor_->attrs).epsilon) << ";\n";
  }
  if (op() == OpKind::rope) {
    s << "  static constexpr bool kRopeInterleaved = "
      << (std::get<RopeAttrs>(anchor_->attrs).interleaved ? "true" : "false") << ";\n";
  }
  s << "};\n";
  return s.str();
}

// The kernel's arguments, packed into spec as they are declared (ArgsWriter), after a comment
// naming the tensors behind them.
std::string RowwiseGen::args_source(KernelSpec& spec) const {
  std::ostringstream names;
  ArgsWriter args(spec);
  args.field("i64", "rows", rows_);
  args.field("i64", "cols", cols_);
  args.field("float", "inv_cols", 1.0f / static_cast<float>(cols_));
  CollapsedShape lead;
  lead.sizes = lead_sizes_;
  lead.numel = rows_;
  args.field("SinterIterShape", "lead", make_iter_shape(lead));  // collapsed dims above the row
  auto name = [&](const std::string& field, TensorId id) {
    names << "//   " << field << ": '" << t(id).name << "' " << dims_to_string(t(id).dims) << " " << to_string(t(id).dtype)
          << "\n";
  };
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const TensorInfo& info = t(inputs_[i].tensor);
    const int64_t es = dtype_size(info.dtype);
    const int align = inputs_[i].col == ColAccess::vector ? static_cast<int>(std::min<int64_t>(16, vec_ * es))
                                                          : static_cast<int>(es);
    const std::string n = std::to_string(i);
    args.pointer("const " + storage_type(info.dtype) + "*", "in" + n, Src::input, region_input_index(r_, inputs_[i].tensor),
                 align);
    args.field("SinterStridedView", "rows" + n, make_view(inputs_[i].row_strides));
    args.field("i64", "colstride" + n, inputs_[i].col_stride);
    name("in" + n, inputs_[i].tensor);
  }
  for (size_t k = 0; k < elem_outs_.size(); ++k) {
    const TensorInfo& info = t(elem_outs_[k]);
    args.pointer(storage_type(info.dtype) + "*", "out" + std::to_string(k), Src::output,
                 region_output_index(r_, elem_outs_[k]), static_cast<int>(std::min<int64_t>(16, vec_ * dtype_size(info.dtype))));
    name("out" + std::to_string(k), elem_outs_[k]);
  }
  for (size_t m = 0; m < row_exits_.size(); ++m) {
    args.pointer(storage_type(t(row_exits_[m].output).dtype) + "*", "rowred" + std::to_string(m), Src::output,
                 row_exits_[m].output_index, 1);
    name("rowred" + std::to_string(m), row_exits_[m].output);
  }
  for (size_t m = 0; m < global_exits_.size(); ++m) {
    args.reduce_slot(global_exits_[m], "red" + std::to_string(m));
    name("red" + std::to_string(m), global_exits_[m].output);
  }
  if (op() == OpKind::rope) args.field("i64", "rope_half", static_cast<int64_t>(t(anchor_->inputs[1]).dims.back()));
  return "// Arguments (a region's rows are the collapsed dims above its last axis):\n" + names.str() + args.finish();
}

// Region input i's chunk at column c0 into `dst` (kVec compute values): from the CTA's registers,
// the staged row, or global memory by its access class.
std::string RowwiseGen::load_chunk(size_t i, const std::string& dst) const {
  const RowInput& in = inputs_[i];
  const std::string n = std::to_string(i);
  if (in.resident) return "convert_vec(wr" + n + "[k], " + dst + ");";
  if (in.staged) return "load_vec_shared(st" + n + " + c0, " + dst + ");";
  const std::string p = "a.in" + n + " + ro" + n;
  switch (in.col) {
    case ColAccess::vector: {
      // per-row data is read once; a broadcast row (a norm's weight) is reused from cache
      const bool per_row = std::any_of(in.row_strides.begin(), in.row_strides.end(), [](int64_t v) { return v != 0; });
      return std::string(variant_.stream && per_row ? "load_vec_stream(" : "load_vec(") + p + " + c0, " + dst + ");";
    }
    case ColAccess::broadcast:
      return "{ const auto s = load_one(" + p + "); for (int j = 0; j < Cfg::kVec; ++j) " + dst + "[j] = s; }";
    case ColAccess::gather:
      return "for (int j = 0; j < Cfg::kVec; ++j) " + dst + "[j] = load_one(" + p + " + (c0 + j) * a.colstride" + n +
             ");";
  }
  return "";
}

std::string RowwiseGen::loads(const std::set<TensorId>& ids, const std::string& indent) const {
  std::string s;
  for (TensorId id : ids) {
    const int i = input_index(id);
    s += indent + compute_type(t(id).dtype) + " l" + std::to_string(i) + "[Cfg::kVec];\n" + indent +
         load_chunk(static_cast<size_t>(i), "l" + std::to_string(i)) + "\n";
  }
  return s;
}

// The members: CTA state (resident weights, global exit accumulators) and row state (input row
// offsets, staged rows, row exit accumulators); begin_cta and begin_row set them.
std::string RowwiseGen::row_state() const {
  std::ostringstream members, cta, row;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const std::string n = std::to_string(i), ty = storage_type(t(inputs_[i].tensor).dtype);
    members << "  i64 ro" << n << ";\n";
    row << "    ro" << n << " = offset_of<Cfg::kIndex64, Cfg::kLeadRank>(a.lead, a.rows" << n << ", row);\n";
    if (inputs_[i].resident) {
      // Chunks past the row's end are never read (every use is a vector in the row).
      members << "  " << ty << " wr" << n << "[Cfg::kItems][Cfg::kVec];\n";
      cta << "    { const i64 ro = offset_of<Cfg::kIndex64, Cfg::kLeadRank>(a.lead, a.rows" << n << ", 0);\n"
          << "#pragma unroll\n      for (int k = 0; k < Cfg::kItems; ++k) {\n"
          << "        if (row_vector_in_row<Cfg>(a, k)) load_raw(a.in" << n << " + ro + row_vector_column<Cfg>(k), wr" << n
          << "[k]);\n      }\n    }\n";
    }
  }
  std::string offset = "0";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!inputs_[i].staged) continue;
    const std::string n = std::to_string(i), ty = storage_type(t(inputs_[i].tensor).dtype);
    members << "  const " << ty << "* st" << n << ";  // this row, staged\n";
    row << "    st" << n << " = reinterpret_cast<const " << ty << "*>(stage + " << offset << ");\n";
    offset += " + row_buffer_bytes<" + ty + ">(a)";
  }
  for (size_t m = 0; m < global_exits_.size(); ++m) {
    members << "  float gacc" << m << ";\n";
    cta << "    gacc" << m << " = reduce_identity<" << reduce_kind(g_.node(global_exits_[m].exit.node).op) << ">();\n";
  }
  for (size_t m = 0; m < row_exits_.size(); ++m) {
    members << "  float racc" << m << ";\n";
    row << "    racc" << m << " = reduce_identity<" << reduce_kind(g_.node(row_exits_[m].exit.node).op) << ">();\n";
  }
  return members.str() + "\n  __device__ __forceinline__ void begin_cta(const Args& a) {\n" + cta.str() +
         "  }\n  __device__ __forceinline__ void begin_row(const Args& a, i64 row, const char* stage) {\n" + row.str() +
         "  }\n";
}

// prologue<kStore>: x at columns c0.. from the region inputs through the prologue nodes; with
// kStore, the prologue's stored outputs too.
std::string RowwiseGen::prologue_source() const {
  std::ostringstream s;
  s << "  template <bool kStore>\n"
    << "  __device__ __forceinline__ void prologue(const Args& a, i64 row, int k, i64 c0, float (&x)[Cfg::kVec]) {\n"
    << loads(pro_loads_, "    ");
  std::string stores;
  for (size_t k = 0; k < elem_outs_.size(); ++k) {
    if (!is_prologue_output(k)) continue;
    s << "    " << compute_type(t(elem_outs_[k]).dtype) << " po" << k << "[Cfg::kVec];\n";
    stores += "    if constexpr (kStore) " + store_fn() + "(a.out" + std::to_string(k) + " + row * a.cols + c0, po" +
              std::to_string(k) + ");\n";
  }
  s << "#pragma unroll\n    for (int j = 0; j < Cfg::kVec; ++j) {\n";
  BodyEmitter b(g_, r_);
  for (TensorId id : pro_loads_) b.bind(id, "l" + std::to_string(input_index(id)) + "[j]");
  s << b.constants() << b.emit(r_.prologue) << "      x[j] = static_cast<float>(" << b.name_of(x_tensor_) << ");\n";
  for (size_t k = 0; k < elem_outs_.size(); ++k) {
    if (is_prologue_output(k)) s << "      if constexpr (kStore) po" << k << "[j] = " << b.name_of(elem_outs_[k]) << ";\n";
  }
  s << "    }\n" << stores << "  }\n";
  return s.str();
}

// The anchor's output from x (the row op's input, or rope's value) and the row statistics
// (row_value, kernels/rowwise/rowwise.cuh): a norm's weight and bias applied.
std::string RowwiseGen::anchor_value() const {
  switch (op()) {
    case OpKind::softmax:
    case OpKind::rope: return "row_value<Cfg>(x[j], stats)";
    case OpKind::layernorm:
    case OpKind::rmsnorm: {
      std::string v = "row_value<Cfg>(x[j], stats) * l" + std::to_string(input_index(anchor_->inputs[1])) + "[j]";
      if (anchor_->inputs.size() > 2) v += " + l" + std::to_string(input_index(anchor_->inputs[2])) + "[j]";
      return v;
    }
    default: break;
  }
  throw Error(ErrorCode::internal, "row-wise anchor " + std::string(to_string(op())));
}

// epilogue: the anchor's output at columns c0.., the epilogue nodes, the stored outputs and the
// exit reductions' accumulators.
std::string RowwiseGen::epilogue_source() const {
  std::ostringstream s;
  s << "  __device__ __forceinline__ void epilogue(const Args& a, i64 row, int k, i64 c0, const float (&x)[Cfg::kVec],\n"
    << "                                           const RowStats& stats) {\n"
    << loads(epi_loads_, "    ");
  for (size_t k = 0; k < elem_outs_.size(); ++k) {
    if (!is_prologue_output(k)) s << "    " << compute_type(t(elem_outs_[k]).dtype) << " eo" << k << "[Cfg::kVec];\n";
  }
  s << "#pragma unroll\n    for (int j = 0; j < Cfg::kVec; ++j) {\n";
  if (!row_exits_.empty() || !global_exits_.empty()) s << "      const bool valid = c0 + j < a.cols;\n";
  BodyEmitter b(g_, r_);
  for (TensorId id : epi_loads_) b.bind(id, "l" + std::to_string(input_index(id)) + "[j]");
  if (anchor_) {
    const TensorId y = anchor_->outputs[0];
    s << "      const float y_ = " << intermediate(anchor_value(), t(y).dtype) << ";\n";
    b.bind(y, "y_");
  }
  s << b.constants() << b.emit(r_.epilogue);
  for (size_t k = 0; k < elem_outs_.size(); ++k) {
    if (!is_prologue_output(k)) s << "      eo" << k << "[j] = " << b.name_of(elem_outs_[k]) << ";\n";
  }
  auto accumulate = [&](const std::string& acc, const ExitSlot& e) {
    const Node& rn = g_.node(e.exit.node);
    const std::string kind = reduce_kind(rn.op);
    s << "      if (valid) " << acc << " = reduce_combine<" << kind << ">(" << acc << ", reduce_input<" << kind
      << ">(static_cast<float>(" << b.name_of(rn.inputs[0]) << ")));\n";
  };
  for (size_t m = 0; m < row_exits_.size(); ++m) accumulate("racc" + std::to_string(m), row_exits_[m]);
  for (size_t m = 0; m < global_exits_.size(); ++m) accumulate("gacc" + std::to_string(m), global_exits_[m]);
  s << "    }\n";
  for (size_t k = 0; k < elem_outs_.size(); ++k) {
    if (is_prologue_output(k)) continue;
    s << "    if (c0 < a.cols) " << store_fn() << "(a.out" << k << " + row * a.cols + c0, eo" << k << ");\n";
  }
  s << "  }\n";
  return s.str();
}

// end_row and end_cta: the row exits written per row, the global ones through atomics.
std::string RowwiseGen::exits_source() const {
  std::ostringstream s;
  s << "  __device__ __forceinline__ void end_row(const Args& a, i64 row, float* scratch) {\n";
  for (size_t m = 0; m < row_exits_.size(); ++m) {
    const Node& rn = g_.node(row_exits_[m].exit.node);
    const std::string kind = reduce_kind(rn.op);
    s << "    { const float v = block_reduce<" << kind << ">(racc" << m << ", scratch);\n"
      << "      if (threadIdx.x == 0) a.rowred" << m << "[row] = from_float<" << storage_type(t(rn.outputs[0]).dtype)
      << ">(v" << (rn.op == OpKind::reduce_mean ? " * a.inv_cols" : "") << "); }\n";
  }
  s << "  }\n  __device__ __forceinline__ void end_cta(const Args& a, float* scratch) {\n";
  for (size_t m = 0; m < global_exits_.size(); ++m) {
    const Node& rn = g_.node(global_exits_[m].exit.node);
    const std::string kind = reduce_kind(rn.op), n = std::to_string(m);
    s << "    { const float v = block_reduce<" << kind << ">(gacc" << n << ", scratch);\n"
      << "      if (threadIdx.x == 0) accumulate_atomic<" << kind << ">(a.red" << n << ".acc, v);\n"
      << "      finalize_exit_reduction<" << kind << ", " << storage_type(t(rn.outputs[0]).dtype) << ">(a.red" << n
      << "); }\n";
  }
  s << "  }\n";
  return s.str();
}

// The staged inputs' row buffer (stage_bytes) and the copies of one row into it.
std::string RowwiseGen::staging_source() const {
  if (staging_ == Staging::none) return "";
  std::ostringstream bytes, copies;
  std::string offset = "0";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!inputs_[i].staged) continue;
    const std::string n = std::to_string(i), ty = storage_type(t(inputs_[i].tensor).dtype);
    const std::string row_bytes = "a.cols * static_cast<i64>(sizeof(" + ty + "))";
    const std::string ro = "offset_of<Cfg::kIndex64, Cfg::kLeadRank>(a.lead, a.rows" + n + ", row)";
    if (staging_ == Staging::bulk) {
      // One thread copies each staged input's whole row: rows are contiguous (vector access) and
      // their bytes a multiple of 16 (staging requires kVec * size == 16 and cols % kVec == 0).
      bytes << "    bytes += static_cast<u32>(" << row_bytes << ");\n";
      copies << "    " << (variant_.stream ? "bulk_copy_g2s_evict_first" : "bulk_copy_g2s") << "(buffer + " << offset
             << ", a.in" << n << " + " << ro << ", static_cast<u32>(" << row_bytes << "), bar);\n";
    } else {
      copies << "    { const i64 ro = " << ro << ";\n"
             << "      " << ty << "* dst = reinterpret_cast<" << ty << "*>(buffer + " << offset << ");\n"
             << "#pragma unroll\n      for (int k = 0; k < Cfg::kItems; ++k) {\n"
             << "        const i64 c0 = row_vector_column<Cfg>(k);\n"
             << "        if (row_vector_in_row<Cfg>(a, k)) cp_async_vec<" << ty << ", Cfg::kVec>(dst + c0, a.in" << n
             << " + ro + c0);\n      }\n    }\n";
    }
    offset += " + row_buffer_bytes<" + ty + ">(a)";
  }
  std::ostringstream s;
  s << "  static __device__ __forceinline__ i64 stage_bytes(const Args& a) { return " << offset << "; }\n";
  if (staging_ == Staging::bulk) {
    s << "  // Thread 0 only: the copies of `row` into `buffer`, counted on `bar`.\n"
      << "  static __device__ __forceinline__ void stage_row_bulk(const Args& a, i64 row, char* buffer, u64* bar) {\n"
      << "    u32 bytes = 0;\n" << bytes.str() << "    mbarrier_arrive_expect_tx(bar, bytes);\n" << copies.str() << "  }\n";
  } else {
    s << "  // This thread's chunks of `row` into `buffer`.\n"
      << "  static __device__ __forceinline__ void stage_row_async(const Args& a, i64 row, char* buffer) {\n"
      << copies.str() << "  }\n";
  }
  return s.str();
}

// rope_factors: the cos and sin of a rotation pair (rope's inputs 1 and 2, [..., R/2]).
std::string RowwiseGen::rope_source() const {
  if (op() != OpKind::rope) return "";
  const std::string ci = std::to_string(input_index(anchor_->inputs[1]));
  const std::string si = std::to_string(input_index(anchor_->inputs[2]));
  return "  __device__ __forceinline__ void rope_factors(const Args& a, i64 pair, float& cs, float& sn) const {\n"
         "    cs = to_float(a.in" + ci + "[ro" + ci + " + pair * a.colstride" + ci + "]);\n"
         "    sn = to_float(a.in" + si + "[ro" + si + " + pair * a.colstride" + si + "]);\n  }\n";
}

std::string RowwiseGen::fused_source() const {
  std::string s = "// The region's fused expression (kernels/rowwise/rowwise.cuh says what each member does).\n"
                  "struct Fused {\n" + row_state();
  if (anchor_) s += prologue_source();
  s += epilogue_source() + exits_source() + staging_source() + rope_source() + "};\n";
  return s;
}

std::string RowwiseGen::description(const std::string& fused) const {
  const bool resident = std::any_of(inputs_.begin(), inputs_.end(), [](const RowInput& in) { return in.resident; });
  return "rowwise " + std::string(anchor_ ? to_string(op()) : "pointwise") +
         (in_registers_ && op() != OpKind::rope ? " registers" : " streaming") +
         (staging_ == Staging::bulk       ? " bulk-staged x" + std::to_string(stages_)
          : staging_ == Staging::cp_async ? " cp.async-staged"
                                          : "") +
         (fused.find("_stream(") != std::string::npos ? " stream-hints" : "") + (resident ? " resident-weights" : "") +
         (min_blocks_ > 0 ? " min-ctas" + std::to_string(min_blocks_) : "") + " threads" + std::to_string(threads_) +
         " vec" + std::to_string(vec_) + " items" + std::to_string(items_);
}

RegionKernels RowwiseGen::build() {
  const Dims& shape = r_.iteration_shape;
  cols_ = shape.empty() ? 1 : shape.back();
  rows_ = num_elements(shape) / cols_;
  if (r_.anchor >= 0) {
    anchor_ = &g_.node(r_.anchor);
    x_tensor_ = anchor_->inputs[0];
  }
  resolve_heuristic();
  plan_inputs();
  plan_outputs();
  plan_vectors();
  plan_staging();
  plan_resident();

  RegionKernels rk;
  rk.workspace_bytes = workspace_;
  KernelSpec spec;
  const std::string fused = fused_source();
  const std::string bounds = min_blocks_ > 0 ? "Cfg::kThreads, " + std::to_string(min_blocks_) : "Cfg::kThreads";
  spec.source = "// row-wise region " + std::to_string(r_.id) + " of graph '" + g_.name() + "'\n" +
                "#include \"rowwise/rowwise.cuh\"\n" + config_source() + args_source(spec) + "\n" + fused +
                "\nextern \"C\" __global__ void __launch_bounds__(" + bounds +
                ") sinter_region(const __grid_constant__ Args a) {\n  sinter_kernel_begin();\n"
                "  rowwise_rows<Cfg, Fused>(a);\n}\n";
  spec.description = description(fused);
  spec.launch.block = dim3(threads_);
  spec.launch.dynamic_shared_memory = static_cast<size_t>(stages_) * stage_bytes_;
  // One row per CTA where the variant asks (RowwiseConfig::flat) and no exit reduction ends each
  // CTA with atomics on one address (as for pointwise tiles).
  if (set_work_grid(spec, rows_, variant_.flat && global_exits_.empty(), dev_)) spec.description += " flat";
  // a row a CTA (a persistent grid of as many CTAs as rows too; the engine drops the boxes where
  // it sizes the grid smaller)
  if (global_exits_.empty() && spec.launch.grid.x == rows_) spec.task_boxes = flat_task_boxes(g_, r_, shape, rows_, cols_, 1, cols_, rows_);
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
