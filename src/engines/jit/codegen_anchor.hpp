// Pieces the anchor generators (matmul, conv, sdpa) share: an argument struct declared and packed
// from one list of fields, and the epilogue of an anchor whose output, seen as a row-major matrix
// [rows, cols] (the iteration shape with its leading axes collapsed into rows), is produced a few
// elements at a time: pointwise epilogue DAG, broadcast operands, stores and exit reductions.
#pragma once

#include <string>
#include <vector>

#include "engines/jit/codegen_common.hpp"

namespace sinter::jit {

// Declares the generated `struct Args` field by field while packing the same fields, so the two
// cannot drift apart; the source also static_asserts NVRTC's size of the struct.
class ArgsWriter {
 public:
  explicit ArgsWriter(KernelSpec& spec) : spec_(spec) {}

  // Returns the field's offset in the packed struct.
  template <typename T>
  size_t field(const std::string& type, const std::string& name, const T& value) {
    const size_t offset = spec_.args.add(value);
    add(type, name, offset);
    return offset;
  }
  // A pointer bound at launch to a region input or output.
  void pointer(const std::string& type, const std::string& name, PointerSlot::Source source,
               int index, int alignment);
  // A pointer bound at launch to the step's workspace, `offset` bytes in.
  void workspace_pointer(const std::string& type, const std::string& name, size_t offset, int alignment);
  void reduce_slot(const ExitSlot& slot, const std::string& name);
  // A SinterTensorMap field (kernels/common/hopper.cuh), encoded at launch from `slot`.
  void tensor_map(const std::string& name, TensorMapSlot slot);
  // Finishes packing; returns the struct and its size check.
  std::string finish();

 private:
  struct Field {
    std::string type, name;
    size_t offset;
  };
  void add(const std::string& type, const std::string& name, size_t offset);
  KernelSpec& spec_;
  std::vector<Field> fields_;
};

// Who runs a GEMM-tile epilogue: `threads` threads numbered by `tid`, synchronized by `sync`,
// over a C tile of kGemmBN-style constants `bn` columns with rows `ldc` floats apart.
struct GemmTileScope {
  std::string threads = "kGemmThreads";
  std::string tid = "threadIdx.x";
  std::string sync = "__syncthreads();";
  std::string bn = "kGemmBN";
  std::string ldc = "kGemmLdC";
};

// What the direct-epilogue Hopper GEMM (kernels/gemm/sm90_gemm_direct.cuh) asks of its epilogue
// functor (AnchorEpilogue::sm90_functor).
struct Sm90EpilogueForm {
  int bn = 256;           // columns of an accumulator block (Cfg::kBN)
  int tma_slots = 0;      // fragment_tile's: 0 (16-byte row chains) or 2 (TMA stores)
  bool held = false;      // fragment_tile's held stores
  bool offload = false;   // chunk(): the helper warps' epilogue on a staged chunk's rounded words
  bool preload = false;   // preload() and the bias pairs fragment() reads (preloaded_operand)
};

class AnchorEpilogue {
 public:
  // `value`: the anchor output the epilogue starts from. The iteration shape must end in cols.
  AnchorEpilogue(const Graph& g, const fuse::Region& r, TensorId value);

  // Fields: ecols, elead + per operand ein<i>, eview<i>, ecs<i>; out<k>; red<m>.
  void declare(ArgsWriter& w) const;
  size_t workspace_bytes() const { return workspace_; }
  int64_t rows() const { return rows_; }
  // kIndex64 of the generated kernels: 64-bit index arithmetic where a row index or an operand's
  // element offset may reach 2^31
  bool index64() const { return index64_; }
  bool has_exits() const { return !exits_.empty(); }
  // No epilogue op and no exit reduction: the anchor's value is stored as it is (a bare GEMM).
  bool empty() const { return r_.epilogue.empty() && exits_.empty(); }
  // Column-sum exits: gemm_tile declares a static shared buffer of (threads / 32) x bn floats for
  // each (kernels that size their shared memory count them).
  int column_exits() const {
    int n = 0;
    for (const ExitSlot& e : exits_) n += e.exit.pattern == fuse::ExitReduction::columns ? 1 : 0;
    return n;
  }
  std::string describe() const;  // "[epilogue: add,gelu; reductions: global,rows]" or ""

  // Statements declaring ro<i> (operand row offsets) for the i64 row index `grow` in scope.
  std::string row_offsets(const std::string& indent) const;
  // Statements for one element: needs grow, col (i64), valid (bool) and ro<i> in scope; `value`
  // is the anchor's f32 result. Exit inputs accumulate into racc<m> (rows), cacc<m>[j]
  // (columns) and gacc<m> (global).
  std::string element(const std::string& value, const std::string& indent) const;

  // The GEMM-tile epilogue over the C tile `cs` (kGemmBM x kGemmBN, row length kGemmLdC) of the
  // kernels in kernels/gemm/simt_gemm.cuh. The expressions name the tile's first matrix row
  // (i64), its valid rows (int), its first column (i64) and its valid columns (int).
  // `scope` names the threads that run it (all of the CTA by default; the consumer warpgroups of
  // the Hopper kernel) and the tile constants.
  std::string gemm_tile(const std::string& grow0, const std::string& rows_valid,
                        const std::string& gcol0, const std::string& cols_valid,
                        const GemmTileScope& scope = {}) const;
  // The epilogue of one Hopper consumer warpgroup's wgmma accumulator `d` (64 rows x `bn`
  // columns in the fragment layout of kernels/common/hopper.cuh), run straight from registers:
  // no C tile, two adjacent columns per store, row sums reduced over the 4 lanes of a row and
  // column sums over the 8 rows of a warp before their atomics. Needs in scope: a, d, grow0 (i64,
  // the matrix row of the warpgroup's first row), rows_valid (int, may be <= 0), gcol0 (i64),
  // cols_valid (int) and the global partials gacc<m>. (codegen_sm90_epilogue.cpp)
  // Also needs kFull (a constexpr bool): true compiles the full-tile form, valid only where
  // rows_valid >= 64, cols_valid >= bn and fragment_full_condition() hold. Full tiles store
  // 16-bit outputs as 16-byte rows through stmatrix, others as pairs.
  // `tma_slots` (0, 1 or 2; needs tma_stores_possible): full tiles stage each 16-bit output per
  // consumer warp in 16-row x 64-column chunks (stage_fragment_rows_sw128) in that many 2 KB
  // slots a warp and write them with TMA stores through the maps declare_store_maps adds,
  // instead of shared-load / global-store chains. Then also needs in scope `store_stage` (char*,
  // tma_stage_bytes of 1024-byte aligned shared memory for the CTA's 8 consumer warps). The
  // caller waits for the stores (bulk_wait_all) before its consumers exit.
  // `held` (needs tma_slots 2 and one wide output): full tiles only pack that output, into the
  // caller's `held_` (u32[bn / 4], the layout store_held_chunk of kernels/gemm/sm90_gemm_direct.cuh
  // reads), and the caller stores it later; every other output is stored here as without it.
  // `from_words` (needs held and runs_on_rounded_words()): the same epilogue run on the anchor's
  // values rounded to its 16-bit type and packed into held_ (hold_accumulators), as a full tile;
  // its outputs replace the words it read (the offloaded epilogue's helper warps). Needs no d,
  // rows_valid or cols_valid.
  // `preloaded` (needs preloaded_operand() >= 0): full tiles read that bias's column pairs from
  // the caller's pw<i> (PairWord<T>[bn / 8], filled by preload_body) instead of loading them.
  std::string fragment_tile(int bn, int tma_slots = 0, bool held = false, bool from_words = false,
                            bool preloaded = false) const;
  // The bias (row-invariant operand, 16 bits or fewer a value) whose column pairs a full tile
  // can have loaded ahead, while the tile's last wgmma run, into bn / 8 pair words a thread (32
  // registers for a 256-column tile, at most one such operand, and only where the epilogue has
  // one output): its index, else -1. Loaded at
  // the epilogue's start, its loads were issued after the last wgmma wait and the first use
  // waited one L2 round trip a tile while the tensor cores idled.
  int preloaded_operand() const;
  // Fills pw<i>: this thread's bn / 8 column pairs (columns 8 q + 2 (lane % 4) + {0, 1} of the
  // tile) where full tiles read them as pairs, zeros otherwise (every path defines them, so they
  // are not live around the tile loop). Needs in scope a, gcol0 (i64) and cols_valid (int).
  std::string preload_body(int bn) const;
  // `struct Epilogue`: the functor kernels/gemm/sm90_gemm_direct.cuh describes (its Epi), over
  // fragment_tile in the given form, for a source that declares Cfg (HopperDirectConfig), kIndex64
  // and Args before it.
  std::string sm90_functor(const Sm90EpilogueForm& f) const;
  // Whether the epilogue can run on the anchor's values rounded to its 16-bit type and packed
  // (fragment_tile's from_words), as the offloaded epilogue's helper warps run it: the anchor is
  // a 16-bit float tensor (rounding the accumulator to it is the graph's own semantics), every
  // exit reduction is a global max, min or amax (a call covers part of a tile, and row and
  // column partials would be reduced per call), no operand is read per row and the held output
  // is the only one (with either, the helpers' 56 registers spilled, or their per-row loads made
  // the kernel slower than the epilogue in line).
  bool runs_on_rounded_words() const;
  // Whether some operand is read per row (a residual, a column vector), not once a column.
  bool reads_per_row() const;
  // The outputs full tiles store as 16-byte rows (16-bit outputs), and whether there is any.
  std::vector<size_t> wide_outputs() const;
  bool any_wide_output() const;
  // Whether full tiles can write the wide outputs with TMA stores from `tma_slots` slots a warp:
  // at most that many wide outputs, a row length that is a multiple of 8 elements (16-byte TMA
  // strides) and sizes inside TMA's 32-bit coordinates.
  bool tma_stores_possible(int tma_slots) const;
  static int tma_stage_bytes(int tma_slots) { return 8 * 2048 * tma_slots; }
  // Fields tmo<k>: a TMA map of each wide output k seen as [rows, cols], box 64 columns x 16 rows.
  void declare_store_maps(ArgsWriter& w) const;
  // The tile-independent part of the full-tile test (an expression over the kernel arguments
  // `a`): outputs allow aligned pair (or 16-byte row) stores, row-invariant operands (biases)
  // aligned pair loads or are one value broadcast over the columns too, and residuals (operands
  // read per row with column stride 1) aligned pair loads in every row.
  std::string fragment_full_condition() const;
  // ", float& gacc0, ..." and ", gacc0, ..." for threading global partials through tile calls.
  std::string global_params() const;
  std::string global_args() const;
  // Kernel-scope declarations of the global partials, and the end of the kernel: global exits
  // reduced per CTA and added with one atomic, then every exit finalized by the last CTA.
  std::string kernel_begin(const std::string& indent) const;
  std::string kernel_end(const std::string& indent) const;

 private:
  friend class FragmentWriter;  // fragment_tile's parts (codegen_sm90_epilogue.cpp)
  // element() with choices: `out_suffix` "" stores each output, else assigns it to
  // so<k><out_suffix> (declared by the caller); column partials accumulate into
  // cacc<m><col_acc>; with `preload_suffix`, row-invariant operands are read from
  // pl<i><preload_suffix> (loaded by the caller once per column) instead of memory; with
  // `row_suffix` too (fragment_tile's row half h and column e: "_h", "_e"), full tiles (kFull)
  // read operands read per row as row_read(i) says, from what fragment_tile declared: prs<i>_h,
  // pr<i>_h_e, or pc<i>_h_e + q pcs<i>.
  // Exits m with `packed_in_full[m]` are left out of full tiles (kFull): fragment_tile reduces
  // them from the packed words (packed_amax_output).
  std::string element_impl(const std::string& value, const std::string& indent, const std::string& out_suffix,
                           const std::string& col_acc, const std::string& preload_suffix = "",
                           const std::string& row_suffix = "",
                           const std::vector<bool>& packed_in_full = {}) const;
  // For exit m: the wide output k whose packed 16-bit words full fragment tiles reduce it from
  // (a global amax of that output's own values: one HMNMX2 a word, amax_pair), else -1.
  int packed_amax_output(size_t m) const;
  // Whether full tiles store output k as 16-byte rows (a 16-bit type).
  bool is_wide_output(size_t k) const;
  // "PairWord<T>" for the preloaded operand's storage type T (needs preloaded_operand() >= 0).
  std::string preload_word_type() const;
  // Whether operand i is the same for every row (a bias): its row offset is always 0.
  bool row_invariant(size_t i) const;
  // How full fragment tiles read operand i when it is read per row (a residual, a column
  // vector; not row_invariant): one value a row loaded before the tile's loops (column stride 0),
  // one aligned pair a column pair (column stride 1), or through four per-thread column pointers
  // stepped 8 columns at a time (any other stride). Per-element loads, two address registers
  // each, made the 128x256 coop kernels spill (a residual alone 60 bytes, with bias + GELU +
  // amax 380, a transposed residual 128; ptxas).
  enum class RowRead { column_vector, pairs, strided };
  RowRead row_read(size_t i) const;
  struct Operand {
    TensorId tensor;
    Dims lead_strides;   // collapsed, innermost first
    int64_t col_stride;
  };
  const Graph& g_;
  const fuse::Region& r_;
  TensorId value_;
  int64_t rows_ = 1, cols_ = 1;
  bool index64_ = false;
  CollapsedShape lead_;
  std::vector<Operand> operands_;
  std::vector<TensorId> outs_;   // element outputs (the iteration shape)
  std::vector<ExitSlot> exits_;
  size_t workspace_ = 0;
};

// The next power of two >= x (x >= 1).
int64_t next_pow2(int64_t x);

}  // namespace sinter::jit
