// The matmul candidates of a region (matmul_configs), best expected first, and the dispatch from a
// config to the generator that builds it: the decode tiles (codegen_matmul_decode*.cpp), the
// direct-epilogue Hopper GEMM (codegen_sm90_gemm_direct.cpp), the C-tile Hopper GEMM
// (codegen_sm90_gemm.cpp) and the generic mma.sync tile (codegen_simt_matmul.cpp).
#include <algorithm>
#include <string>
#include <vector>

#include "engines/jit/codegen.hpp"
#include "engines/jit/sm90_operands.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {

namespace {

// The direct-epilogue Hopper configs, best expected first. 128x256 tiles halve the operand bytes
// per flop of 128x128 but need enough tiles to fill every SM; below that the smaller tile goes first.
std::vector<Sm90DirectConfig> sm90_direct_configs(const Graph& g, const fuse::Region& r,
                                                  const cuda::DeviceProperties& dev) {
  const Sm90DirectConfig coop256{128, 256, 4, false, 1}, ping256{64, 256, 5, true, 1},
      coop128{128, 128, 6, false, 1}, coop256_pair{128, 256, 4, false, 2}, ping256_pair{64, 256, 5, true, 2},
      tall_pair{256, 128, 4, false, 2};
  std::vector<Sm90DirectConfig> all;
  const Sm90Operands o = sm90_operands(g, r);
  const int64_t tiles256 = o.batch.numel * ((o.m + 127) / 128) * ((o.n + 255) / 256);
  if (tiles256 >= (dev.sm_count > 0 ? dev.sm_count : 132)) {
    // The coop CTA pair first, bare or fused: with its TMA stores and the offloaded epilogue it
    // ran ahead of ping-pong, whose 64x256 tile loads 1.7x the operand bytes per flop (4096^3 +
    // bias + GELU: 0.19168 ms against 0.20186; 8192^3 bare 1.409 against 1.468). The tall pair
    // (256x128 tiles, A shared: cuBLASLt's 4096^3 kernel shape on the H100) goes last, for the
    // tuner to time: against cuBLASLt, 4096^3 1.013 against the 128x256 pair's 1.005, fused 1.073
    // in line against 1.030 offloaded (docs/benchmarks.md).
    all = {coop256_pair, coop256, ping256, ping256_pair, coop128, tall_pair};
  } else if (4 * tiles256 >= 3 * (dev.sm_count > 0 ? dev.sm_count : 132)) {
    // Nearly one wave of 128x256 tiles: one tile a CTA without the pair's lockstep. H100, 2048^3
    // (128 tiles) against cuBLASLt: coop 128x256 1.041 bare / 1.066 bias / 1.222 bias + GELU +
    // amax, coop 128x128 1.054 / 1.074 / 1.244, the pair 1.086 / 1.135 / 1.278.
    all = {coop256, coop128, ping256, coop256_pair, ping256_pair};
  } else {
    all = {coop128, coop256, ping256, coop256_pair, ping256_pair};
  }
  std::vector<Sm90DirectConfig> out;
  for (const Sm90DirectConfig& c : all) {
    if (dev.max_shared_memory_per_block_optin >= static_cast<size_t>(sm90_direct_smem_bytes(c))) out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<MatmulConfig> matmul_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                         bool for_megakernels) {
  std::vector<MatmulConfig> tiles = decode_configs(g, r, dev, for_megakernels);  // M <= 16 (codegen_decode_tma.cpp)
  if (sm90_gemm_unsupported(g, r, dev, true).empty()) {
    // The direct-epilogue configs, then the C-tile kernel, which ran slower at every size
    // measured (H200, 4096^3: 0.2226 ms against 0.1965 for the 128x256 pair; H100, 2048^3: 1.23x
    // cuBLASLt bare, 1.89 fused, where every direct config ran 1.04-1.09 and 1.22-1.28). fp8
    // operands run on the direct-epilogue kernels only.
    const bool ctile = sm90_gemm_unsupported(g, r, dev).empty();
    for (const Sm90DirectConfig& c : sm90_direct_configs(g, r, dev)) tiles.push_back({MatmulTile::sm90_direct, c});
    if (ctile) tiles.push_back({MatmulTile::sm90_ctile, {}});
  }
  if (r.folded_norm() < 0) tiles.push_back({MatmulTile::generic, {}});  // a folded norm runs on the decode tile alone
  return tiles;
}

int matmul_config_index(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, MatmulTile tile) {
  const std::vector<MatmulConfig> tiles = matmul_configs(g, r, dev);
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].tile == tile) return static_cast<int>(i);
  }
  return -1;
}

RegionKernels build_matmul(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                           const MatmulConfig& v) {
  switch (v.tile) {
    case MatmulTile::decode_tma: return build_matmul_decode_tma(g, r, dev, false, v.tma);
    case MatmulTile::decode_tma_rows: return build_matmul_decode_tma(g, r, dev, true, v.tma);
    case MatmulTile::decode_ffma: return build_matmul_decode_ffma(g, r, dev);
    case MatmulTile::decode_gemv: return build_matmul_decode(g, r, dev);
    case MatmulTile::sm90_ctile: return build_matmul_sm90(g, r, dev);
    case MatmulTile::sm90_direct: return build_matmul_sm90_direct(g, r, dev, v.direct);
    case MatmulTile::generic: break;
  }
  RegionKernels rk = build_matmul_generic(g, r, dev);
  // the fallback is visible in explain/inspect and in the tuner's candidate list
  const std::string why_not = sm90_gemm_unsupported(g, r, dev, true);
  if (!why_not.empty()) {
    for (KernelSpec& k : rk.kernels) k.description += " [sm90 gemm not used: " + why_not + "]";
  }
  return rk;
}

}  // namespace sinter::jit
