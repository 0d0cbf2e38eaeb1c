// The region's epilogue on a Hopper wgmma accumulator where it sits, in registers: the functor
// the direct-epilogue GEMM (kernels/gemm/sm90_gemm_direct.cuh) is instantiated with
// (AnchorEpilogue::sm90_functor) and its fragment code (fragment_tile), over the pieces of
// kernels/gemm/sm90_epilogue.cuh. Thread (warp w, lane l) of the warpgroup holds rows
// r = 16 w + l/4 and r + 8, and in each group q of 8 columns the two columns 8 q + 2 (l%4) +
// {0, 1}: accumulator d[4 q + 2 h + e] is row r + 8 h, column 8 q + 2 (l%4) + e. So a row's
// columns are spread over the 4 lanes of a quad, and a column's 16 rows over the 8 quads of a
// warp (x 2 registers). Going through shared memory instead (the C-tile kernel) costs a full
// store/load round trip and two barriers per tile, during which the tensor cores idle.
//
// The code is generated once and compiled twice, for kFull false and true (a template argument):
// a full tile (every row and column in range, pair stores and bias pair loads aligned:
// fragment_full_condition) drops every bounds test, select and alignment branch, which were half
// of the epilogue's instructions, and the coop kernels run their epilogue while the tensor cores
// idle. Full tiles store 16-bit outputs as 16-byte rows (stmatrix, then one 16-byte store per
// lane: store_fragment_rows_wide), or stage them for TMA stores, instead of 4-byte pairs: the
// partial form's scalar stores ran the whole 4096^3 GEMM 16% slower (docs/benchmarks.md). The
// full-tile bare epilogue is ~2 SASS instructions an element.
#include <cstdlib>
#include <sstream>
#include <vector>

#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/expr.hpp"
#include "engines/jit/sm90_operands.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {

int AnchorEpilogue::preloaded_operand() const {
  // a second output's in-line stores need those registers: bias + GELU with the pre-activation
  // stored as f32 spilled 124-144 bytes in the 128x256 kernels (ptxas)
  if (outs_.size() > 1) return -1;
  for (size_t i = 0; i < operands_.size(); ++i) {
    if (row_invariant(i) && dtype_size(g_.tensor(operands_[i].tensor).dtype) <= 2) return static_cast<int>(i);
  }
  return -1;
}

std::string AnchorEpilogue::preload_word_type() const {
  const int i = preloaded_operand();
  return "PairWord<" + storage_type(g_.tensor(operands_[static_cast<size_t>(i)].tensor).dtype) + ">";
}

std::string AnchorEpilogue::preload_body(int bn) const {
  const int i = preloaded_operand();
  if (i < 0) return "";
  const std::string n = std::to_string(i);
  std::ostringstream s;
  // the full-tile test's condition for this operand's pair loads (fragment_full_condition)
  s << "  if (cols_valid >= " << bn << " && a.ecs" << n << " == 1 && pair_aligned(a.ein" << n << ")) {\n"
    << "    const auto* const p_ = a.ein" << n << " + gcol0 + 2 * (threadIdx.x & 3);\n"
    << "#pragma unroll\n"
    << "    for (int q = 0; q < " << bn / 8 << "; ++q) pw" << n << "[q] = load_pair_word(p_ + 8 * q);\n"
    << "  } else {\n"
    << "#pragma unroll\n"
    << "    for (int q = 0; q < " << bn / 8 << "; ++q) pw" << n << "[q] = " << preload_word_type() << "{};\n"
    << "  }\n";
  return s.str();
}

// Writes AnchorEpilogue::fragment_tile's code: one object per call, its parts in the order they
// appear in the generated function.
class FragmentWriter {
 public:
  FragmentWriter(const AnchorEpilogue& e, int bn, int tma_slots, bool held, bool from_words, bool preloaded)
      : e_(e), bn_(bn), tma_slots_(tma_slots), held_(held), from_words_(from_words), preloaded_(preloaded),
        wide_outs_(e.wide_outputs()), tma_(!wide_outs_.empty() && tma_slots > 0),
        n_wide_(static_cast<int>(wide_outs_.size())), packed_(e.exits_.size(), false) {
    check();
    // a global amax of a wide output: full tiles reduce its packed words (one HMNMX2 for two
    // elements) into gpk<m>, folded into gacc<m> at the end; partial tiles element by element
    for (size_t m = 0; m < e_.exits_.size(); ++m) packed_[m] = e_.packed_amax_output(m) >= 0;
  }

  std::string write() {
    partials_begin();
    rows();
    store_setup();
    bias_setup();
    s_ << "#pragma unroll\n    for (int q4 = 0; q4 < " << bn_ / 32 << "; ++q4) {\n";
    s_ << "#pragma unroll\n    for (int qi = 0; qi < 4; ++qi) {\n"
       << "      const int q = 4 * q4 + qi;\n"
       << "      const int cc0 = 8 * q + c0_;\n";
    column_group_operands();
    for (int h = 0; h < 2; ++h) row_half(h);
    column_sums();
    s_ << "    }\n";  // qi
    group_stores();
    s_ << "    }\n";  // q4
    reductions_end();
    return s_.str();
  }

 private:
  using ExitReduction = fuse::ExitReduction;
  std::string kind_of(size_t m) const { return reduce_kind(e_.g_.node(e_.exits_[m].exit.node).op); }
  bool has(ExitReduction p) const {
    for (const ExitSlot& x : e_.exits_) {
      if (x.exit.pattern == p) return true;
    }
    return false;
  }
  std::string compute_of(TensorId t) const { return compute_type(e_.g_.tensor(t).dtype); }
  std::string storage_of(TensorId t) const { return storage_type(e_.g_.tensor(t).dtype); }

  void check() const {
    if (tma_ && !e_.tma_stores_possible(tma_slots_)) {
      throw Error(ErrorCode::internal, "fragment_tile: TMA stores asked for outputs they cannot write");
    }
    // held: full tiles pack the one wide output into the caller's held_ and leave its stores to
    // the caller (store_held_chunk, under the next tile's main loop)
    if (held_ && !(tma_ && n_wide_ == 1 && tma_slots_ == 2)) {
      throw Error(ErrorCode::internal, "fragment_tile: held stores need TMA stores of one 16-bit output from 2 slots");
    }
    if (from_words_ && !(held_ && e_.runs_on_rounded_words())) {
      throw Error(ErrorCode::internal,
                  "fragment_tile: an epilogue from the rounded words needs held stores and an epilogue that can run on them");
    }
    if (preloaded_ && (from_words_ || e_.preloaded_operand() < 0)) {
      throw Error(ErrorCode::internal, "fragment_tile: preloaded operand pairs need an in-line epilogue with a bias");
    }
    // the slot of a chunk is fixed at compile time, the same in every tile: a tile's chunks must
    // use the slots a whole number of times
    if (tma_ && !held_ && (bn_ / 64 * n_wide_) % tma_slots_ != 0) {
      throw Error(ErrorCode::internal, "fragment_tile: " + std::to_string(bn_ / 64 * n_wide_) +
                                           " TMA store chunks a tile do not cycle through " +
                                           std::to_string(tma_slots_) + " slots");
    }
  }

  // from the rounded words: each call reduces its own elements from the identity and combines
  // once at its end (one chain of dependent combines through every call spilled the kernels that
  // made such calls under their k-blocks)
  void partials_begin() {
    if (!from_words_) return;
    s_ << "  {  // this call's global partials\n";
    for (size_t m = 0; m < e_.exits_.size(); ++m) {
      const std::string g = "gacc" + std::to_string(m);
      s_ << "  float& " << g << "_io_ = " << g << ";\n"
         << "  float " << g << " = reduce_identity<" << kind_of(m) << ">();\n";
    }
  }

  // the thread's two rows: their matrix rows, whether they are in range, operand row offsets and
  // row-sum partials
  void rows() {
    s_ << "  {  // epilogue from the wgmma fragment (rows r0_ + {0, 8}, columns 8 q + c0_ + {0, 1})\n"
       << "    const int tid_ = threadIdx.x & 127, warp_ = tid_ >> 5, lane_ = tid_ & 31;\n"
       << "    const int r0_ = warp_ * 16 + (lane_ >> 2), c0_ = 2 * (lane_ & 3);\n";
    for (int h = 0; h < 2; ++h) {
      const std::string hs = std::to_string(h);
      s_ << "    const i64 grow_" << hs << " = grow0 + r0_ + " << 8 * h << ";\n"
         << "    const bool row_ok_" << hs << " = kFull || r0_ + " << 8 * h << " < rows_valid;\n";
      for (size_t i = 0; i < e_.operands_.size(); ++i) {
        if (e_.row_invariant(i)) continue;  // read once per column pair (pl<i>), not per row
        row_operand(i, h);
      }
      for (size_t m = 0; m < e_.exits_.size(); ++m) {
        if (e_.exits_[m].exit.pattern != ExitReduction::rows) continue;
        s_ << "    float racc" << m << "_" << hs << " = reduce_identity<" << kind_of(m) << ">();\n";
      }
    }
  }

  // operand i (read per row) in row half h: its row offset, and on full tiles (row_read) a column
  // vector's value, loaded once, or a strided operand's pointers to the thread's two columns of
  // group 0
  void row_operand(size_t i, int h) {
    const std::string n = std::to_string(i), hs = std::to_string(h);
    s_ << "    const i64 ro" << n << "_" << hs << " = offset_of<kIndex64>(a.elead, a.eview" << n << ", grow_" << hs
       << ");\n";
    const std::string ct = compute_of(e_.operands_[i].tensor), st = storage_of(e_.operands_[i].tensor);
    const std::string ro = "ro" + n + "_" + hs;
    if (e_.row_read(i) == AnchorEpilogue::RowRead::column_vector) {
      s_ << "    const " << ct << " prs" << n << "_" << hs << " = kFull ? load_one(a.ein" << n << " + " << ro
         << ") : static_cast<" << ct << ">(0);\n";
    } else if (e_.row_read(i) == AnchorEpilogue::RowRead::strided) {
      const std::string pc = "pc" + n + "_" + hs;
      if (h == 0) s_ << "    const i64 pcs" << n << " = 8 * a.ecs" << n << ";  // a column group's step\n";
      s_ << "    const " << st << "* const " << pc << "_0 = kFull ? a.ein" << n << " + " << ro
         << " + (gcol0 + c0_) * a.ecs" << n << " : nullptr;\n"
         << "    const " << st << "* const " << pc << "_1 = kFull ? " << pc << "_0 + a.ecs" << n << " : nullptr;\n";
    }
  }

  // 16-bit outputs of full tiles leave as 16-byte rows, 4 column groups at a time: through a
  // per-warp scratch and 16-byte stores (store_fragment_rows_wide), or staged for TMA stores, or
  // (held) packed into the caller's held_ for TMA stores under the next tile's main loop; the
  // others as pairs
  void store_setup() {
    for (size_t m = 0; m < e_.exits_.size(); ++m) {
      if (packed_[m]) s_ << "    u32 gpk" << m << " = 0;  // packed amax partial (full tiles)\n";
    }
    if (held_) {
      // (the caller stages and stores the held words)
    } else if (tma_) {
      // store_stage: the CTA's slots, 1024-byte aligned; this warp's are tma_slots x 2 KB of them
      s_ << "    char (*const stage_)[2048] = reinterpret_cast<char (*)[2048]>(store_stage + ((threadIdx.x >> 5) & 7) * "
         << tma_slots_ * 2048 << ");\n";
    } else if (!wide_outs_.empty()) {
      s_ << "    __shared__ __align__(16) u32 wide_scratch_[8][128];  // 512 bytes per consumer warp\n"
         << "    u32* const scratch_ = wide_scratch_[(threadIdx.x >> 5) & 7];\n";
      for (size_t k : wide_outs_) {
        for (int h = 0; h < 2; ++h) {
          s_ << "    " << storage_of(e_.outs_[k]) << "* const wrow" << k << "_" << h << " = a.out" << k
             << " + (grow0 + warp_ * 16 + " << 8 * h << " + (lane_ & 7)) * a.ecols + gcol0 + 8 * (lane_ >> 3);\n";
        }
      }
    }
  }

  // a bias on full tiles: this thread's first column pair (pb<i>, then + 8 q: an immediate
  // offset) or, broadcast over the columns too (column stride 0), one value loaded here (pbs<i>);
  // then a wide output's packed words of one 32-column group: [row half][word qi]
  void bias_setup() {
    for (size_t i = 0; i < e_.operands_.size(); ++i) {
      if (!e_.row_invariant(i)) continue;
      const std::string n = std::to_string(i);
      const std::string ct = compute_of(e_.operands_[i].tensor);
      s_ << "    const bool pbc" << n << " = a.ecs" << n << " == 0;\n"
         << "    [[maybe_unused]] const auto* const pb" << n << " = a.ein" << n << " + (pbc" << n
         << " ? i64{0} : gcol0 + c0_);\n"
         << "    const " << ct << " pbs" << n << " = kFull && pbc" << n << " ? load_one(a.ein" << n
         << ") : static_cast<" << ct << ">(0);\n";
    }
    if (!held_) {
      for (size_t k : wide_outs_) s_ << "    u32 wk" << k << "[2][4];\n";
    }
  }

  // one column group's column-sum partials, bias values (the same for both rows: one load per
  // column) and residual pairs
  void column_group_operands() {
    if (has(ExitReduction::columns)) {
      for (size_t m = 0; m < e_.exits_.size(); ++m) {
        if (e_.exits_[m].exit.pattern != ExitReduction::columns) continue;
        for (int x = 0; x < 2; ++x) s_ << "      float cacc" << m << "_" << x << " = reduce_identity<" << kind_of(m) << ">();\n";
      }
    }
    for (size_t i = 0; i < e_.operands_.size(); ++i) {
      if (e_.row_invariant(i)) bias_pair(i);
    }
    for (size_t i = 0; i < e_.operands_.size(); ++i) {
      if (!e_.row_invariant(i) && e_.row_read(i) == AnchorEpilogue::RowRead::pairs) residual_pairs(i);
    }
  }

  // full tiles: one aligned pair load (unit column stride), or one load of a value broadcast over
  // the columns too (column stride 0); fragment_full_condition admits only these two
  void bias_pair(size_t i) {
    const std::string n = std::to_string(i);
    const std::string ct = compute_of(e_.operands_[i].tensor);
    s_ << "      " << ct << " pl" << n << "_0, pl" << n << "_1;\n"
       << "      if constexpr (kFull) {\n"
       << "        if (pbc" << n << ") {\n"
       << "          pl" << n << "_0 = pl" << n << "_1 = pbs" << n << ";\n"
       << "        } else {\n";
    if (preloaded_ && static_cast<int>(i) == e_.preloaded_operand()) {
      s_ << "          unpack_pair_word<" << storage_of(e_.operands_[i].tensor) << ">(pw" << n << "[q], pl" << n << "_0, pl"
         << n << "_1);  // loaded under the last wgmma\n";
    } else {
      s_ << "          load_pair(pb" << n << " + 8 * q, pl" << n << "_0, pl" << n << "_1);\n";
    }
    s_ << "        }\n"
       << "      } else {\n";
    for (int x = 0; x < 2; ++x) {
      s_ << "        pl" << n << "_" << x << " = cc0 + " << x << " < cols_valid ? load_one(a.ein" << n
         << " + (gcol0 + cc0 + " << x << ") * a.ecs" << n << ") : static_cast<" << ct << ">(0);\n";
    }
    s_ << "      }\n";
  }

  // a residual on full tiles: this column pair of each of the thread's two rows, one aligned pair
  // load each (fragment_full_condition)
  void residual_pairs(size_t i) {
    const std::string n = std::to_string(i);
    const std::string ct = compute_of(e_.operands_[i].tensor);
    s_ << "      " << ct << " pr" << n << "_0_0, pr" << n << "_0_1, pr" << n << "_1_0, pr" << n << "_1_1;\n"
       << "      if constexpr (kFull) {\n";
    for (int h = 0; h < 2; ++h) {
      const std::string r = "pr" + n + "_" + std::to_string(h);
      s_ << "        load_pair(a.ein" << n << " + ro" << n << "_" << h << " + gcol0 + cc0, " << r << "_0, " << r << "_1);\n";
    }
    s_ << "      } else {\n"
       << "        pr" << n << "_0_0 = pr" << n << "_0_1 = pr" << n << "_1_0 = pr" << n << "_1_1 = static_cast<" << ct
       << ">(0);\n"
       << "      }\n";
  }

  // row r0_ + 8 h of the column group: both elements through the epilogue DAG, then the outputs
  void row_half(int h) {
    const std::string hs = std::to_string(h);
    s_ << "      {  // row r0_ + " << 8 * h << "\n";
    if (from_words_) {
      // the anchor's values, rounded to its 16-bit type at the tile's end (hold_accumulators)
      s_ << "        float dv_0, dv_1;\n"
         << "        unpack_pair<" << storage_of(e_.value_) << ">(held_[8 * q4 + " << 4 * h << " + qi], dv_0, dv_1);\n";
    }
    for (size_t k = 0; k < e_.outs_.size(); ++k) {
      s_ << "        " << compute_of(e_.outs_[k]) << " so" << k << "_0, so" << k << "_1;\n";
    }
    for (int x = 0; x < 2; ++x) element(h, x);
    for (size_t k = 0; k < e_.outs_.size(); ++k) output_pair(k, h);
    s_ << "      }\n";
  }

  // element x (column cc0 + x) of row half h
  void element(int h, int x) {
    const std::string hs = std::to_string(h), xs = std::to_string(x);
    s_ << "        {\n"
       << "          const int cc = cc0 + " << x << ";\n"
       << "          const bool valid = kFull || (row_ok_" << hs << " && cc < cols_valid);\n"
       << "          const i64 col = gcol0 + cc, grow = grow_" << hs << ";\n"
       << "          (void)grow, (void)col, (void)valid;  // not every epilogue reads them\n";
    for (size_t i = 0; i < e_.operands_.size(); ++i) {
      if (!e_.row_invariant(i)) s_ << "          const i64 ro" << i << " = ro" << i << "_" << hs << ";\n";
    }
    for (size_t m = 0; m < e_.exits_.size(); ++m) {
      if (e_.exits_[m].exit.pattern == ExitReduction::rows) {
        s_ << "          float& racc" << m << " = racc" << m << "_" << hs << ";\n";
      }
    }
    const std::string value = from_words_ ? "dv_" + xs : "d[4 * q + " + std::to_string(2 * h + x) + "]";
    s_ << e_.element_impl(value, "          ", "_" + xs, "_" + xs, "_" + xs, "_" + hs, packed_) << "        }\n";
  }

  // output k's column pair in row half h: a pair store, or for a wide output on full tiles its
  // packed word (and the packed amax of it)
  void output_pair(size_t k, int h) {
    const std::string hs = std::to_string(h), ks = std::to_string(k);
    const std::string pair = "store_pair<kFull>(a.out" + ks + " + grow_" + hs + " * a.ecols + gcol0 + cc0, so" + ks +
                             "_0, so" + ks + "_1, row_ok_" + hs + " && cc0 < cols_valid, row_ok_" + hs +
                             " && cc0 + 1 < cols_valid);\n";
    if (!e_.is_wide_output(k)) {
      s_ << "        " << pair;
      return;
    }
    const std::string slot = held_ ? "held_[8 * q4 + " + std::to_string(4 * h) + " + qi]" : "wk" + ks + "[" + hs + "][qi]";
    const std::string st = storage_of(e_.outs_[k]);
    s_ << "        if constexpr (kFull) {\n"
       << "          " << slot << " = pack_pair<" << st << ">(so" << k << "_0, so" << k << "_1);\n";
    for (size_t m = 0; m < e_.exits_.size(); ++m) {
      if (packed_[m] && e_.packed_amax_output(m) == static_cast<int>(k)) {
        s_ << "          gpk" << m << " = amax_pair<" << st << ">(gpk" << m << ", " << slot << ");\n";
      }
    }
    s_ << "        } else {\n"
       << "          " << pair << "        }\n";
  }

  // lanes l, l ^ 4, l ^ 8, l ^ 16 hold the same columns in the warp's other rows; one atomic per
  // column per warp
  void column_sums() {
    for (size_t m = 0; m < e_.exits_.size(); ++m) {
      if (e_.exits_[m].exit.pattern != ExitReduction::columns) continue;
      for (int x = 0; x < 2; ++x) {
        const std::string v = "cacc" + std::to_string(m) + "_" + std::to_string(x);
        s_ << "      for (int o_ = 4; o_ < 32; o_ <<= 1) " << v << " = reduce_combine<" << kind_of(m) << ">(" << v
           << ", __shfl_xor_sync(0xffffffffu, " << v << ", o_));\n"
           << "      if (lane_ < 4 && cc0 + " << x << " < cols_valid) accumulate_atomic<" << kind_of(m) << ">(a.red" << m
           << ".acc + gcol0 + cc0 + " << x << ", " << v << ");\n";
      }
    }
  }

  // after 4 column groups: their 16-byte rows stored, or a 64-column chunk staged and TMA-stored
  void group_stores() {
    if (held_) return;  // stored by the caller
    if (!tma_) {
      for (size_t k : wide_outs_) {
        s_ << "    if constexpr (kFull) {\n";
        for (int h = 0; h < 2; ++h) {
          s_ << "      store_fragment_rows_wide(scratch_, wk" << k << "[" << h << "], wrow" << k << "_" << h << " + 32 * q4);\n";
        }
        s_ << "    }\n";
      }
      return;
    }
    // chunk p (columns 64 p ..) of wide output i goes through slot (p n_wide + i) % slots; before a
    // chunk's first group is staged, the stores that used its slots must have read them
    s_ << "    if constexpr (kFull) {\n"
       << "      if ((q4 & 1) == 0) {\n"
       << "        if (lane_ == 0) bulk_wait_group_read<" << tma_slots_ - n_wide_ << ">();\n"
       << "        __syncwarp();\n"
       << "      }\n";
    for (int i = 0; i < n_wide_; ++i) {
      const std::string k = std::to_string(wide_outs_[static_cast<size_t>(i)]);
      for (int h = 0; h < 2; ++h) {
        s_ << "      stage_fragment_rows_sw128(" << slot(i) << ", wk" << k << "[" << h << "], " << h << ", q4 & 1);\n";
      }
    }
    s_ << "      if (q4 & 1) {  // a chunk is staged: this warp's 16 rows x 64 columns leave by TMA\n"
       << "        fence_proxy_async_shared();\n"
       << "        __syncwarp();\n"
       << "        if (lane_ == 0) {\n";
    for (int i = 0; i < n_wide_; ++i) {
      s_ << "          tma_store_3d(&a.tmo" << wide_outs_[static_cast<size_t>(i)] << ", " << slot(i)
         << ", static_cast<int>(gcol0) + 64 * (q4 >> 1), static_cast<int>(grow0) + 16 * warp_, 0);\n"
         << "          bulk_commit_group();\n";
    }
    s_ << "        }\n"
       << "      }\n"
       << "    }\n";
  }
  std::string slot(int i) const {
    return "stage_[((q4 >> 1) * " + std::to_string(n_wide_) + " + " + std::to_string(i) + ") % " +
           std::to_string(tma_slots_) + "]";
  }

  // the packed amax folded in; row sums: the 4 lanes of a quad share a row, one atomic per row
  // per warpgroup tile; from the rounded words, this call's partials into the caller's
  void reductions_end() {
    for (size_t m = 0; m < e_.exits_.size(); ++m) {
      if (!packed_[m]) continue;
      const std::string st = storage_of(e_.outs_[static_cast<size_t>(e_.packed_amax_output(m))]);
      s_ << "    if constexpr (kFull) gacc" << m << " = reduce_combine<kReduceAmax>(gacc" << m << ", amax_pair_value<" << st
         << ">(gpk" << m << "));\n";
    }
    for (size_t m = 0; m < e_.exits_.size(); ++m) {
      if (e_.exits_[m].exit.pattern != ExitReduction::rows) continue;
      for (int h = 0; h < 2; ++h) {
        const std::string v = "racc" + std::to_string(m) + "_" + std::to_string(h);
        s_ << "    for (int o_ = 1; o_ < 4; o_ <<= 1) " << v << " = reduce_combine<" << kind_of(m) << ">(" << v
           << ", __shfl_xor_sync(0xffffffffu, " << v << ", o_));\n"
           << "    if ((lane_ & 3) == 0 && row_ok_" << h << ") accumulate_atomic<" << kind_of(m) << ">(a.red" << m
           << ".acc + grow_" << h << ", " << v << ");\n";
      }
    }
    s_ << "  }\n";
    if (!from_words_) return;
    for (size_t m = 0; m < e_.exits_.size(); ++m) {
      const std::string g = "gacc" + std::to_string(m);
      s_ << "  " << g << "_io_ = reduce_combine<" << kind_of(m) << ">(" << g << "_io_, " << g << ");\n";
    }
    s_ << "  }\n";
  }

  const AnchorEpilogue& e_;
  const int bn_, tma_slots_;
  const bool held_, from_words_, preloaded_;
  const std::vector<size_t> wide_outs_;
  const bool tma_;
  const int n_wide_;
  std::vector<bool> packed_;
  std::ostringstream s_;
};

std::string AnchorEpilogue::fragment_tile(int bn, int tma_slots, bool held, bool from_words, bool preloaded) const {
  return FragmentWriter(*this, bn, tma_slots, held, from_words, preloaded).write();
}

std::string AnchorEpilogue::sm90_functor(const Sm90EpilogueForm& f) const {
  const int pre = f.preload ? preloaded_operand() : -1;
  if (f.preload && pre < 0) throw Error(ErrorCode::internal, "sm90_functor: preloaded bias pairs without a bias");
  const std::string pw = pre >= 0 ? "pw" + std::to_string(pre) : "";
  std::ostringstream s;
  s << "// the region's epilogue on a consumer's accumulators (sm90_gemm_direct.cuh's Epi)\n"
    << "struct Epilogue {\n"
    << "  using Held = " << storage_type(g_.tensor(value_).dtype) << ";\n"
    << "  using Preload = "
    << (pre >= 0 ? preload_word_type() + "[" + std::to_string(f.bn / 8) + "]" : std::string("Sm90NoPreload")) << ";\n"
    << "  static constexpr bool kEmpty = " << (empty() ? "true" : "false") << ";\n"
    << kernel_begin("  ") << "\n"
    << "  template <class Full, class Partial>\n"
    << "  __device__ __forceinline__ static bool if_full(const Args& a, bool rows_in, bool cols_in, Full&& full,\n"
    << "                                                 Partial&& partial) {\n"
    << "    if (rows_in && cols_in && " << fragment_full_condition() << ") {\n"
    << "      full();\n"
    << "      return true;\n"
    << "    }\n"
    << "    partial();\n"
    << "    return false;\n"
    << "  }\n\n"
    << "  template <bool kFull>\n"
    << "  __device__ __forceinline__ void fragment(const Args& a, i64 grow0, i64 gcol0, int rows_valid, int cols_valid,\n"
    << "                                           char* store_stage, const float (&d)[Cfg::kBlockAcc],\n"
    << "                                           u32 (&held_)[Cfg::kBN / 4], const Preload& " << pw << ") {\n"
    << fragment_tile(f.bn, f.tma_slots, f.held, false, pre >= 0) << "  }\n";
  if (pre >= 0) {
    s << "\n  __device__ __forceinline__ static void preload(const Args& a, i64 gcol0, int cols_valid, Preload& " << pw
      << ") {\n"
      << preload_body(f.bn) << "  }\n";
  }
  if (f.offload) {
    s << "\n  // a helper warp's epilogue of one 32-column half of a staged 16 x 64 chunk (hold_accumulators' words,\n"
      << "  // in the fragment layout of the consumer warp that staged it) from matrix row grow, column gcol0\n"
      << "  __device__ __forceinline__ void chunk(const Args& a, i64 grow, i64 gcol0, u32 (&held_)[8]) {\n"
      << "    constexpr bool kFull = true;\n"
      << "    [[maybe_unused]] constexpr int rows_valid = 64, cols_valid = 32;\n"
      << "    // the fragment code counts this warp's rows from 16 x its warp of the warpgroup\n"
      << "    const i64 grow0 = grow - 16 * ((threadIdx.x & 127) >> 5);\n"
      << fragment_tile(32, f.tma_slots, true, true) << "  }\n";
  }
  if (f.held) {
    s << "\n  __device__ __forceinline__ static const SinterTensorMap* held_map(const Args& a) { return &a.tmo"
      << wide_outputs().front() << "; }\n";
  }
  s << "\n  // exit reductions: per CTA, then the last CTA finalizes\n"
    << "  __device__ __forceinline__ void finish(const Args& a) {\n"
    << "    (void)a;\n"
    << kernel_end("    ") << "  }\n"
    << "};\n";
  return s.str();
}

int AnchorEpilogue::packed_amax_output(size_t m) const {
  const Node& rn = g_.node(exits_[m].exit.node);
  if (exits_[m].exit.pattern != fuse::ExitReduction::global || rn.op != OpKind::reduce_amax) return -1;
  for (size_t k = 0; k < outs_.size(); ++k) {
    if (outs_[k] == rn.inputs[0] && is_wide_output(k)) return static_cast<int>(k);
  }
  return -1;
}

bool AnchorEpilogue::runs_on_rounded_words() const {
  const DType t = g_.tensor(value_).dtype;
  if (t != DType::bf16 && t != DType::f16) return false;
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern != fuse::ExitReduction::global) return false;
    const OpKind op = g_.node(exits_[m].exit.node).op;
    if (op == OpKind::reduce_sum || op == OpKind::reduce_mean) return false;
  }
  return outs_.size() == 1 && !reads_per_row();
}

bool AnchorEpilogue::reads_per_row() const {
  for (size_t i = 0; i < operands_.size(); ++i) {
    if (!row_invariant(i)) return true;
  }
  return false;
}

std::vector<size_t> AnchorEpilogue::wide_outputs() const {
  std::vector<size_t> out;
  for (size_t k = 0; k < outs_.size(); ++k) {
    if (is_wide_output(k)) out.push_back(k);
  }
  return out;
}

bool AnchorEpilogue::any_wide_output() const { return !wide_outputs().empty(); }

bool AnchorEpilogue::tma_stores_possible(int tma_slots) const {
  const int n_wide = static_cast<int>(wide_outputs().size());
  const int64_t coord_limit = int64_t{1} << 31;  // TMA coordinates are signed 32-bit
  return n_wide > 0 && n_wide <= tma_slots && tma_slots <= 2 && cols_ % 8 == 0 && cols_ < coord_limit &&
         rows_ < coord_limit;
}

void AnchorEpilogue::declare_store_maps(ArgsWriter& w) const {
  for (size_t k : wide_outputs()) {
    const DType t = g_.tensor(outs_[k]).dtype;
    const uint64_t row_bytes = static_cast<uint64_t>(cols_) * dtype_size(t);
    TensorMapSlot m;
    m.source = PointerSlot::Source::output;
    m.index = region_output_index(r_, outs_[k]);
    if (m.index < 0) throw Error(ErrorCode::internal, "declare_store_maps: an output is not a region output");
    m.data_type = tensor_map_data_type(t);
    m.dims[0] = static_cast<uint64_t>(cols_);
    m.dims[1] = static_cast<uint64_t>(rows_);
    m.dims[2] = 1;
    m.strides[0] = row_bytes;
    m.strides[1] = row_bytes;  // dims[2] is 1: never stepped, any valid stride
    m.box[0] = 64;  // 128 bytes: one swizzled row of a staged chunk
    m.box[1] = 16;  // one consumer warp's rows
    m.box[2] = 1;
    w.tensor_map("tmo" + std::to_string(k), m);
  }
}

bool AnchorEpilogue::is_wide_output(size_t k) const {
  const DType t = g_.tensor(outs_[k]).dtype;
  return t == DType::bf16 || t == DType::f16;
}

std::string AnchorEpilogue::fragment_full_condition() const {
  // pair stores: every output row starts on a pair (even row length, aligned base; tile columns
  // start at multiples of the tile width and a thread's pair at an even column); 16-byte rows
  // (16-bit outputs): row length a multiple of 8 elements and a 16-byte aligned base
  std::string c = any_wide_output() ? "(a.ecols % 8 == 0)" : "(a.ecols % 2 == 0)";
  for (size_t k = 0; k < outs_.size(); ++k) {
    const std::string out = "a.out" + std::to_string(k);
    c += is_wide_output(k) ? " && (reinterpret_cast<u64>(" + out + ") & 15) == 0" : " && pair_aligned(" + out + ")";
  }
  for (size_t i = 0; i < operands_.size(); ++i) {
    const std::string n = std::to_string(i);
    if (row_invariant(i)) {
      c += " && (a.ecs" + n + " == 0 || (a.ecs" + n + " == 1 && pair_aligned(a.ein" + n + ")))";
    } else if (row_read(i) == RowRead::pairs) {
      // a residual's column pairs: an aligned base and rows that start on even offsets
      c += " && pair_aligned(a.ein" + n + ") && view_rows_even(a.elead, a.eview" + n + ")";
    }
  }
  return c;
}

}  // namespace sinter::jit
