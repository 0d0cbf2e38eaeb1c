// AnchorEpilogue::fragment_tile: the anchor epilogue run on a Hopper wgmma accumulator where it
// sits, in registers. Thread (warp w, lane l) of the warpgroup holds rows r = 16 w + l/4 and
// r + 8, and in each group q of 8 columns the two columns 8 q + 2 (l%4) + {0, 1}: accumulator
// d[4 q + 2 h + e] is row r + 8 h, column 8 q + 2 (l%4) + e. So a row's columns are spread over
// the 4 lanes of a quad, and a column's 16 rows over the 8 quads of a warp (x 2 registers).
// Going through shared memory instead (the C-tile kernel) costs a full store/load round trip and
// two barriers per tile, during which the tensor cores idle.
#include <sstream>

#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/expr.hpp"

namespace sinter::jit {

std::string AnchorEpilogue::fragment_tile(int bn) const {
  using fuse::ExitReduction;
  auto kind_of = [&](size_t m) { return reduce_kind(g_.node(exits_[m].exit.node).op); };
  auto has = [&](ExitReduction p) {
    for (const ExitSlot& e : exits_) {
      if (e.exit.pattern == p) return true;
    }
    return false;
  };
  std::ostringstream s;
  s << "  {  // epilogue from the wgmma fragment (rows r0_ + {0, 8}, columns 8 q + c0_ + {0, 1})\n"
    << "    const int tid_ = threadIdx.x & 127, warp_ = tid_ >> 5, lane_ = tid_ & 31;\n"
    << "    const int r0_ = warp_ * 16 + (lane_ >> 2), c0_ = 2 * (lane_ & 3);\n";
  for (int h = 0; h < 2; ++h) {
    const std::string hs = std::to_string(h);
    s << "    const i64 grow_" << hs << " = grow0 + r0_ + " << 8 * h << ";\n"
      << "    const bool row_ok_" << hs << " = r0_ + " << 8 * h << " < rows_valid;\n";
    for (size_t i = 0; i < operands_.size(); ++i) {
      const std::string n = std::to_string(i);
      s << "    const i64 ro" << n << "_" << hs << " = offset_of<kIndex64>(a.elead, a.eview" << n << ", grow_" << hs
        << ");\n";
    }
    for (size_t m = 0; m < exits_.size(); ++m) {
      if (exits_[m].exit.pattern != ExitReduction::rows) continue;
      s << "    float racc" << m << "_" << hs << " = reduce_identity<" << kind_of(m) << ">();\n";
    }
  }
  s << "#pragma unroll\n    for (int q = 0; q < " << bn / 8 << "; ++q) {\n"
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
    for (int e = 0; e < 2; ++e) {
      s << "      const " << ct << " pl" << n << "_" << e << " = cc0 + " << e << " < cols_valid ? load_one(a.ein" << n
        << " + (gcol0 + cc0 + " << e << ") * a.ecs" << n << ") : static_cast<" << ct << ">(0);\n";
    }
  }
  for (int h = 0; h < 2; ++h) {
    const std::string hs = std::to_string(h);
    s << "      {  // row r0_ + " << 8 * h << "\n";
    for (size_t k = 0; k < outs_.size(); ++k) {
      s << "        " << compute_type(g_.tensor(outs_[k]).dtype) << " so" << k << "_0, so" << k << "_1;\n";
    }
    for (int e = 0; e < 2; ++e) {
      const std::string es = std::to_string(e);
      s << "        {\n"
        << "          const int cc = cc0 + " << e << ";\n"
        << "          const bool valid = row_ok_" << hs << " && cc < cols_valid;\n"
        << "          const i64 col = gcol0 + cc, grow = grow_" << hs << ";\n"
        << "          (void)grow, (void)col, (void)valid;  // not every epilogue reads them\n";
      for (size_t i = 0; i < operands_.size(); ++i) {
        s << "          const i64 ro" << i << " = ro" << i << "_" << hs << ";\n";
      }
      for (size_t m = 0; m < exits_.size(); ++m) {
        if (exits_[m].exit.pattern == ExitReduction::rows) s << "          float& racc" << m << " = racc" << m << "_" << hs << ";\n";
      }
      s << element_impl("d[4 * q + " + std::to_string(2 * h + e) + "]", "          ", "_" + es, "_" + es, "_" + es)
        << "        }\n";
    }
    for (size_t k = 0; k < outs_.size(); ++k) {
      s << "        store_pair(a.out" << k << " + grow_" << hs << " * a.ecols + gcol0 + cc0, so" << k << "_0, so" << k
        << "_1, row_ok_" << hs << " && cc0 < cols_valid, row_ok_" << hs << " && cc0 + 1 < cols_valid);\n";
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
  s << "    }\n";
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
  return s.str();
}

}  // namespace sinter::jit
