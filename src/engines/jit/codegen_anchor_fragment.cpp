// AnchorEpilogue::fragment_tile: the anchor epilogue run on a Hopper wgmma accumulator where it
// sits, in registers. Thread (warp w, lane l) of the warpgroup holds rows r = 16 w + l/4 and
// r + 8, and in each group q of 8 columns the two columns 8 q + 2 (l%4) + {0, 1}: accumulator
// d[4 q + 2 h + e] is row r + 8 h, column 8 q + 2 (l%4) + e. So a row's columns are spread over
// the 4 lanes of a quad, and a column's 16 rows over the 8 quads of a warp (x 2 registers).
// Going through shared memory instead (the C-tile kernel) costs a full store/load round trip and
// two barriers per tile, during which the tensor cores idle.
//
// The code is generated once and compiled twice, for kFull false and true (a template argument of
// the caller): a full tile (every row and column in range, pair stores and bias pair loads
// aligned: fragment_full_condition) drops every bounds test, select and alignment branch. The
// coop kernel runs its epilogue while the tensor cores idle, so its instructions are time: the
// H200 profile of the 4096^3 bf16 GEMM (session 9, Nsight Compute: tensor pipe 80% busy against
// cuBLASLt's 90%) found the bare epilogue at ~12 SASS instructions per element (1.6k per thread
// and tile) and the bias+GELU+amax one at ~52 (6.7k), half of them bounds and alignment logic.
// Full tiles also store 16-bit outputs as 16-byte rows (stmatrix to a per-warp scratch, then one
// 16-byte store per lane: store_fragment_rows_wide) instead of 4-byte pairs; how much stores
// matter showed when the partial form's scalar stores ran the whole 4096^3 GEMM 16% slower
// (0.2280 against 0.1955 ms, same call). Full-tile bare epilogue: ~2 SASS instructions an element.
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
  // stored as f32 spilled 124-144 bytes in the 128x256 kernels (ptxas, session 22)
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

std::string AnchorEpilogue::preload_param(int bn, bool read_only) const {
  const int i = preloaded_operand();
  if (i < 0) return "";
  return std::string(", ") + (read_only ? "const " : "") + preload_word_type() + " (&pw" + std::to_string(i) + ")[" +
         std::to_string(bn / 8) + "]";
}

std::string AnchorEpilogue::preload_declaration(int bn) const {
  const int i = preloaded_operand();
  if (i < 0) return "";
  return preload_word_type() + " pw" + std::to_string(i) + "[" + std::to_string(bn / 8) + "]";
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

std::string AnchorEpilogue::fragment_tile(int bn, int tma_slots, bool held, bool from_words, bool preloaded) const {
  using fuse::ExitReduction;
  auto kind_of = [&](size_t m) { return reduce_kind(g_.node(exits_[m].exit.node).op); };
  auto has = [&](ExitReduction p) {
    for (const ExitSlot& e : exits_) {
      if (e.exit.pattern == p) return true;
    }
    return false;
  };
  std::ostringstream s;
  if (from_words) {
    // each call reduces its own elements from the identity and combines once at its end (one
    // chain of dependent combines through every call spilled the kernels that made such calls
    // under their k-blocks)
    s << "  {  // this call's global partials\n";
    for (size_t m = 0; m < exits_.size(); ++m) {
      const std::string g = "gacc" + std::to_string(m);
      s << "  float& " << g << "_io_ = " << g << ";\n"
        << "  float " << g << " = reduce_identity<" << kind_of(m) << ">();\n";
    }
  }
  s << "  {  // epilogue from the wgmma fragment (rows r0_ + {0, 8}, columns 8 q + c0_ + {0, 1})\n"
    << "    const int tid_ = threadIdx.x & 127, warp_ = tid_ >> 5, lane_ = tid_ & 31;\n"
    << "    const int r0_ = warp_ * 16 + (lane_ >> 2), c0_ = 2 * (lane_ & 3);\n";
  for (int h = 0; h < 2; ++h) {
    const std::string hs = std::to_string(h);
    s << "    const i64 grow_" << hs << " = grow0 + r0_ + " << 8 * h << ";\n"
      << "    const bool row_ok_" << hs << " = kFull || r0_ + " << 8 * h << " < rows_valid;\n";
    for (size_t i = 0; i < operands_.size(); ++i) {
      if (row_invariant(i)) continue;  // read once per column pair (pl<i>), not per row
      const std::string n = std::to_string(i);
      s << "    const i64 ro" << n << "_" << hs << " = offset_of<kIndex64>(a.elead, a.eview" << n << ", grow_" << hs
        << ");\n";
      // full tiles (row_read): a column vector's value in each of the thread's two rows, loaded
      // once; a strided operand's pointers to the thread's two columns of group 0 in each row
      const TensorInfo& t = g_.tensor(operands_[i].tensor);
      const std::string ct = compute_type(t.dtype), st = storage_type(t.dtype);
      const std::string ro = "ro" + n + "_" + hs;
      if (row_read(i) == RowRead::column_vector) {
        s << "    const " << ct << " prs" << n << "_" << hs << " = kFull ? load_one(a.ein" << n << " + " << ro
          << ") : static_cast<" << ct << ">(0);\n";
      } else if (row_read(i) == RowRead::strided) {
        const std::string pc = "pc" + n + "_" + hs;
        if (h == 0) s << "    const i64 pcs" << n << " = 8 * a.ecs" << n << ";  // a column group's step\n";
        s << "    const " << st << "* const " << pc << "_0 = kFull ? a.ein" << n << " + " << ro << " + (gcol0 + c0_) * a.ecs"
          << n << " : nullptr;\n"
          << "    const " << st << "* const " << pc << "_1 = kFull ? " << pc << "_0 + a.ecs" << n << " : nullptr;\n";
      }
    }
    for (size_t m = 0; m < exits_.size(); ++m) {
      if (exits_[m].exit.pattern != ExitReduction::rows) continue;
      s << "    float racc" << m << "_" << hs << " = reduce_identity<" << kind_of(m) << ">();\n";
    }
  }
  // 16-bit outputs of full tiles leave as 16-byte rows, 4 column groups at a time: through a
  // per-warp scratch and 16-byte stores (store_fragment_rows_wide), or staged for TMA stores, or
  // (held) packed into the caller's held_ for TMA stores under the next tile's main loop; the
  // others as pairs
  auto wide = [&](size_t k) { return is_wide_output(k); };
  const std::vector<size_t> wide_outs = wide_outputs();
  const bool any_wide = !wide_outs.empty();
  const bool tma = any_wide && tma_slots > 0;
  if (tma && !tma_stores_possible(tma_slots)) {
    throw Error(ErrorCode::internal, "fragment_tile: TMA stores asked for outputs they cannot write");
  }
  const int n_wide = static_cast<int>(wide_outs.size());
  // held: full tiles pack the one wide output into the caller's held_ and leave its stores to
  // the caller (store_held_chunk, under the next tile's main loop)
  if (held && !(tma && n_wide == 1 && tma_slots == 2)) {
    throw Error(ErrorCode::internal, "fragment_tile: held stores need TMA stores of one 16-bit output from 2 slots");
  }
  if (from_words && !(held && runs_on_rounded_words())) {
    throw Error(ErrorCode::internal, "fragment_tile: an epilogue from the rounded words needs held stores and an epilogue that can run on them");
  }
  if (preloaded && (from_words || preloaded_operand() < 0)) {
    throw Error(ErrorCode::internal, "fragment_tile: preloaded operand pairs need an in-line epilogue with a bias");
  }
  // the slot of a chunk is fixed at compile time, the same in every tile: a tile's chunks must
  // use the slots a whole number of times
  if (tma && !held && (bn / 64 * n_wide) % tma_slots != 0) {
    throw Error(ErrorCode::internal, "fragment_tile: " + std::to_string(bn / 64 * n_wide) +
                                         " TMA store chunks a tile do not cycle through " + std::to_string(tma_slots) +
                                         " slots");
  }
  // a global amax of a wide output: full tiles reduce its packed words (one HMNMX2 for two
  // elements) into gpk<m>, folded into gacc<m> at the end; partial tiles element by element
  std::vector<bool> packed(exits_.size(), false);
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (packed_amax_output(m) < 0) continue;
    packed[m] = true;
    s << "    u32 gpk" << m << " = 0;  // packed amax partial (full tiles)\n";
  }
  if (held) {
    // (the caller stages and stores the held words)
  } else if (tma) {
    // store_stage: the CTA's slots, 1024-byte aligned; this warp's are tma_slots x 2 KB of them
    s << "    char (*const stage_)[2048] = reinterpret_cast<char (*)[2048]>(store_stage + ((threadIdx.x >> 5) & 7) * "
      << tma_slots * 2048 << ");\n";
  } else if (any_wide) {
    s << "    __shared__ __align__(16) u32 wide_scratch_[8][128];  // 512 bytes per consumer warp\n"
      << "    u32* const scratch_ = wide_scratch_[(threadIdx.x >> 5) & 7];\n";
    for (size_t k : wide_outs) {
      for (int h = 0; h < 2; ++h) {
        s << "    " << storage_type(g_.tensor(outs_[k]).dtype) << "* const wrow" << k << "_" << h << " = a.out" << k
          << " + (grow0 + warp_ * 16 + " << 8 * h << " + (lane_ & 7)) * a.ecols + gcol0 + 8 * (lane_ >> 3);\n";
      }
    }
  }
  // a bias on full tiles: this thread's first column pair (pb<i>, then + 8 q: an immediate
  // offset) or, broadcast over the columns too (column stride 0), one value loaded here (pbs<i>)
  for (size_t i = 0; i < operands_.size(); ++i) {
    if (!row_invariant(i)) continue;
    const std::string n = std::to_string(i);
    const std::string ct = compute_type(g_.tensor(operands_[i].tensor).dtype);
    s << "    const bool pbc" << n << " = a.ecs" << n << " == 0;\n"
      << "    [[maybe_unused]] const auto* const pb" << n << " = a.ein" << n << " + (pbc" << n << " ? i64{0} : gcol0 + c0_);\n"
      << "    const " << ct << " pbs" << n << " = kFull && pbc" << n << " ? load_one(a.ein" << n << ") : static_cast<" << ct
      << ">(0);\n";
  }
  // a wide output's packed words of one 32-column group: [row half][word qi]
  if (!held) {
    for (size_t k : wide_outs) s << "    u32 wk" << k << "[2][4];\n";
  }
  s << "#pragma unroll\n    for (int q4 = 0; q4 < " << bn / 32 << "; ++q4) {\n";
  s << "#pragma unroll\n    for (int qi = 0; qi < 4; ++qi) {\n"
    << "      const int q = 4 * q4 + qi;\n"
    << "      const int cc0 = 8 * q + c0_;\n";
  if (has(ExitReduction::columns)) {
    for (size_t m = 0; m < exits_.size(); ++m) {
      if (exits_[m].exit.pattern != ExitReduction::columns) continue;
      for (int e = 0; e < 2; ++e) s << "      float cacc" << m << "_" << e << " = reduce_identity<" << kind_of(m) << ">();\n";
    }
  }
  // a bias is the same for both rows: one load per column
  for (size_t i = 0; i < operands_.size(); ++i) {
    if (!row_invariant(i)) continue;
    const std::string n = std::to_string(i);
    const std::string ct = compute_type(g_.tensor(operands_[i].tensor).dtype);
    // full tiles: one aligned pair load (unit column stride), or one load of a value broadcast
    // over the columns too (column stride 0); fragment_full_condition admits only these two
    s << "      " << ct << " pl" << n << "_0, pl" << n << "_1;\n"
      << "      if constexpr (kFull) {\n"
      << "        if (pbc" << n << ") {\n"
      << "          pl" << n << "_0 = pl" << n << "_1 = pbs" << n << ";\n"
      << "        } else {\n";
    if (preloaded && static_cast<int>(i) == preloaded_operand()) {
      s << "          unpack_pair_word<" << storage_type(g_.tensor(operands_[i].tensor).dtype) << ">(pw" << n << "[q], pl"
        << n << "_0, pl" << n << "_1);  // loaded under the last wgmma\n";
    } else {
      s << "          load_pair(pb" << n << " + 8 * q, pl" << n << "_0, pl" << n << "_1);\n";
    }
    s << "        }\n"
      << "      } else {\n";
    for (int e = 0; e < 2; ++e) {
      s << "        pl" << n << "_" << e << " = cc0 + " << e << " < cols_valid ? load_one(a.ein" << n << " + (gcol0 + cc0 + "
        << e << ") * a.ecs" << n << ") : static_cast<" << ct << ">(0);\n";
    }
    s << "      }\n";
  }
  // a residual on full tiles: this column pair of each of the thread's two rows, one aligned pair
  // load each (fragment_full_condition)
  for (size_t i = 0; i < operands_.size(); ++i) {
    if (row_invariant(i) || row_read(i) != RowRead::pairs) continue;
    const std::string n = std::to_string(i);
    const std::string ct = compute_type(g_.tensor(operands_[i].tensor).dtype);
    s << "      " << ct << " pr" << n << "_0_0, pr" << n << "_0_1, pr" << n << "_1_0, pr" << n << "_1_1;\n"
      << "      if constexpr (kFull) {\n";
    for (int h = 0; h < 2; ++h) {
      const std::string r = "pr" + n + "_" + std::to_string(h);
      s << "        load_pair(a.ein" << n << " + ro" << n << "_" << h << " + gcol0 + cc0, " << r << "_0, " << r << "_1);\n";
    }
    s << "      } else {\n"
      << "        pr" << n << "_0_0 = pr" << n << "_0_1 = pr" << n << "_1_0 = pr" << n << "_1_1 = static_cast<" << ct << ">(0);\n"
      << "      }\n";
  }
  for (int h = 0; h < 2; ++h) {
    const std::string hs = std::to_string(h);
    s << "      {  // row r0_ + " << 8 * h << "\n";
    if (from_words) {
      // the anchor's values, rounded to its 16-bit type at the tile's end (hold_accumulators)
      s << "        float dv_0, dv_1;\n"
        << "        unpack_pair<" << storage_type(g_.tensor(value_).dtype) << ">(held_[8 * q4 + " << 4 * h
        << " + qi], dv_0, dv_1);\n";
    }
    for (size_t k = 0; k < outs_.size(); ++k) {
      s << "        " << compute_type(g_.tensor(outs_[k]).dtype) << " so" << k << "_0, so" << k << "_1;\n";
    }
    for (int e = 0; e < 2; ++e) {
      const std::string es = std::to_string(e);
      s << "        {\n"
        << "          const int cc = cc0 + " << e << ";\n"
        << "          const bool valid = kFull || (row_ok_" << hs << " && cc < cols_valid);\n"
        << "          const i64 col = gcol0 + cc, grow = grow_" << hs << ";\n"
        << "          (void)grow, (void)col, (void)valid;  // not every epilogue reads them\n";
      for (size_t i = 0; i < operands_.size(); ++i) {
        if (!row_invariant(i)) s << "          const i64 ro" << i << " = ro" << i << "_" << hs << ";\n";
      }
      for (size_t m = 0; m < exits_.size(); ++m) {
        if (exits_[m].exit.pattern == ExitReduction::rows) s << "          float& racc" << m << " = racc" << m << "_" << hs << ";\n";
      }
      const std::string value = from_words ? "dv_" + es : "d[4 * q + " + std::to_string(2 * h + e) + "]";
      s << element_impl(value, "          ", "_" + es, "_" + es, "_" + es, "_" + hs, packed)
        << "        }\n";
    }
    for (size_t k = 0; k < outs_.size(); ++k) {
      const std::string pair = "store_pair<kFull>(a.out" + std::to_string(k) + " + grow_" + hs +
                               " * a.ecols + gcol0 + cc0, so" + std::to_string(k) + "_0, so" + std::to_string(k) +
                               "_1, row_ok_" + hs + " && cc0 < cols_valid, row_ok_" + hs + " && cc0 + 1 < cols_valid);\n";
      if (!wide(k)) {
        s << "        " << pair;
        continue;
      }
      const std::string slot =
          held ? "held_[8 * q4 + " + std::to_string(4 * h) + " + qi]" : "wk" + std::to_string(k) + "[" + hs + "][qi]";
      const std::string st = storage_type(g_.tensor(outs_[k]).dtype);
      s << "        if constexpr (kFull) {\n"
        << "          " << slot << " = pack_pair<" << st << ">(so" << k << "_0, so" << k << "_1);\n";
      for (size_t m = 0; m < exits_.size(); ++m) {
        if (packed[m] && packed_amax_output(m) == static_cast<int>(k)) {
          s << "          gpk" << m << " = amax_pair<" << st << ">(gpk" << m << ", " << slot << ");\n";
        }
      }
      s << "        } else {\n"
        << "          " << pair << "        }\n";
    }
    s << "      }\n";
  }
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern != ExitReduction::columns) continue;
    // lanes l, l ^ 4, l ^ 8, l ^ 16 hold the same columns in the warp's other rows; one atomic per
    // column per warp
    for (int e = 0; e < 2; ++e) {
      const std::string v = "cacc" + std::to_string(m) + "_" + std::to_string(e);
      s << "      for (int o_ = 4; o_ < 32; o_ <<= 1) " << v << " = reduce_combine<" << kind_of(m) << ">(" << v
        << ", __shfl_xor_sync(0xffffffffu, " << v << ", o_));\n"
        << "      if (lane_ < 4 && cc0 + " << e << " < cols_valid) accumulate_atomic<" << kind_of(m) << ">(a.red" << m
        << ".acc + gcol0 + cc0 + " << e << ", " << v << ");\n";
    }
  }
  s << "    }\n";  // qi
  if (held) {
    // stored by the caller
  } else if (tma) {
    // chunk p (columns 64 p ..) of wide output i goes through slot (p n_wide + i) % slots; before a
    // chunk's first group is staged, the stores that used its slots must have read them
    s << "    if constexpr (kFull) {\n"
      << "      if ((q4 & 1) == 0) {\n"
      << "        if (lane_ == 0) bulk_wait_group_read<" << tma_slots - n_wide << ">();\n"
      << "        __syncwarp();\n"
      << "      }\n";
    for (int i = 0; i < n_wide; ++i) {
      const std::string k = std::to_string(wide_outs[i]);
      const std::string slot = "stage_[((q4 >> 1) * " + std::to_string(n_wide) + " + " + std::to_string(i) + ") % " +
                               std::to_string(tma_slots) + "]";
      for (int h = 0; h < 2; ++h) {
        s << "      stage_fragment_rows_sw128(" << slot << ", wk" << k << "[" << h << "], " << h << ", q4 & 1);\n";
      }
    }
    s << "      if (q4 & 1) {  // a chunk is staged: this warp's 16 rows x 64 columns leave by TMA\n"
      << "        fence_proxy_async_shared();\n"
      << "        __syncwarp();\n"
      << "        if (lane_ == 0) {\n";
    for (int i = 0; i < n_wide; ++i) {
      const std::string k = std::to_string(wide_outs[i]);
      s << "          tma_store_3d(&a.tmo" << k << ", stage_[((q4 >> 1) * " << n_wide << " + " << i << ") % " << tma_slots
        << "], static_cast<int>(gcol0) + 64 * (q4 >> 1), static_cast<int>(grow0) + 16 * warp_, 0);\n"
        << "          bulk_commit_group();\n";
    }
    s << "        }\n"
      << "      }\n"
      << "    }\n";
  } else {
    for (size_t k : wide_outs) {
      s << "    if constexpr (kFull) {\n";
      for (int h = 0; h < 2; ++h) {
        s << "      store_fragment_rows_wide(scratch_, wk" << k << "[" << h << "], wrow" << k << "_" << h << " + 32 * q4);\n";
      }
      s << "    }\n";
    }
  }
  s << "    }\n";  // q4
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (!packed[m]) continue;
    const std::string st = storage_type(g_.tensor(outs_[packed_amax_output(m)]).dtype);
    s << "    if constexpr (kFull) gacc" << m << " = reduce_combine<kReduceAmax>(gacc" << m << ", amax_pair_value<" << st
      << ">(gpk" << m << "));\n";
  }
  for (size_t m = 0; m < exits_.size(); ++m) {
    if (exits_[m].exit.pattern != ExitReduction::rows) continue;
    // the 4 lanes of a quad share a row: one atomic per row per warpgroup tile
    for (int h = 0; h < 2; ++h) {
      const std::string v = "racc" + std::to_string(m) + "_" + std::to_string(h);
      s << "    for (int o_ = 1; o_ < 4; o_ <<= 1) " << v << " = reduce_combine<" << kind_of(m) << ">(" << v
        << ", __shfl_xor_sync(0xffffffffu, " << v << ", o_));\n"
        << "    if ((lane_ & 3) == 0 && row_ok_" << h << ") accumulate_atomic<" << kind_of(m) << ">(a.red" << m
        << ".acc + grow_" << h << ", " << v << ");\n";
    }
  }
  s << "  }\n";
  if (from_words) {
    for (size_t m = 0; m < exits_.size(); ++m) {
      const std::string g = "gacc" + std::to_string(m);
      s << "  " << g << "_io_ = reduce_combine<" << kind_of(m) << ">(" << g << "_io_, " << g << ");\n";
    }
    s << "  }\n";
  }
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
