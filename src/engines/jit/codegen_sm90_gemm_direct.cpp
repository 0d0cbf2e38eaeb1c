// Matmul regions on the direct-epilogue Hopper GEMM (kernels/gemm/sm90_gemm_direct.cuh): the
// same operands as the C-tile kernel plus fp8 ones (sm90_gemm_unsupported with allow_fp8), a tile
// config from Sm90DirectConfig, and the region's epilogue run on each consumer warpgroup's
// accumulators in registers. The kernel is a device template; this file writes what is the
// region's own: the config struct (the variant: the candidate's config plus what the region's
// shape and epilogue decide, plan_direct), the Args struct, the epilogue functor
// (AnchorEpilogue::sm90_functor, codegen_sm90_epilogue.cpp) and the kernel that instantiates it.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/expr.hpp"
#include "engines/jit/sm90_operands.hpp"
#include "gemm/stream_k.h"
#include "sinter/error.hpp"

namespace sinter::jit {

int sm90_direct_smem_bytes(const Sm90DirectConfig& c, int store_stage_bytes) {
  return 1024 + c.stages * (c.bm + c.bn) * 64 * 2 + store_stage_bytes + 2 * c.stages * 8 + 2 * 8;
}

bool sm90_direct_multicast_a(const Sm90DirectConfig& c) { return c.bm == 256 && c.cluster > 1; }

int sm90_direct_row_blocks(const Sm90DirectConfig& c) { return !c.ping_pong && c.bm == 256 ? 2 : 1; }

int sm90_direct_group_m(const Sm90DirectConfig& c) { return c.bm == 256 ? 8 : 1024 / c.bm; }

int64_t sm90_direct_items(const Sm90DirectConfig& c, int64_t batches, int64_t m, int64_t n) {
  const int64_t tiles_m = (m + c.bm - 1) / c.bm, tiles_n = (n + c.bn - 1) / c.bn;
  const int64_t pairs = c.cluster;
  return batches * (sm90_direct_multicast_a(c) ? tiles_m * ((tiles_n + pairs - 1) / pairs)
                                               : (tiles_m + pairs - 1) / pairs * tiles_n);
}

std::string sm90_direct_name(const Sm90DirectConfig& c, int k_block) {
  const std::string cl = std::to_string(c.cluster);
  return std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" + std::to_string(k_block) + " stages" + std::to_string(c.stages) +
         (c.ping_pong ? " pingpong(1p+2c, a tile each)" : " coop(1p+2c, " + std::to_string(c.bm / 2) + " rows each)") +
         (c.cluster > 1 ? (sm90_direct_multicast_a(c) ? " cluster1x" + cl + " multicast-a" : " cluster" + cl + "x1 multicast-b")
                        : "");
}

namespace {

// The wgmma operand type of `t`: the kernel's constant (sm90_direct_config.cuh's kWgmma*) and the
// name the description gives it.
struct WgmmaType {
  const char* constant;
  const char* name;
};
WgmmaType wgmma_type(DType t) {
  switch (t) {
    case DType::bf16: return {"kWgmmaBf16", "bf16"};
    case DType::fp8_e4m3: return {"kWgmmaE4m3", "e4m3"};
    case DType::fp8_e5m2: return {"kWgmmaE5m2", "e5m2"};
    default: return {"kWgmmaF16", "f16"};  // sm90_gemm_unsupported admits no other type
  }
}

// Two 2 KB TMA-store slots a consumer warp, after the ring in dynamic shared memory (the static
// kind is not 1024-byte aligned without padding the block past the 227 KB).
constexpr int kTmaSlots = 2;
// What the epilogue's static shared memory may take beside them (the kernel end's 33-float
// scratch today).
constexpr int kStaticSmemRoom = 1024;

// The kernel variant of one region and config. Beyond the config's fields, every choice follows
// from the region's shape and epilogue: the alternatives each lost their measurement
// (docs/benchmarks.md), so there is nothing left for a tuner to time.
struct DirectPlan {
  Sm90DirectConfig c;
  Sm90Operands o;
  // Full tiles of the coop kernels write 16-bit outputs with TMA stores: with 16-byte global
  // stores every CTA reached its tile end at about the same time, the burst of stores backed up
  // and the tensor cores idled until the warps had issued them (4096^3: 1.024x cuBLASLt against
  // 1.051). Ping-pong keeps the store chains: its stores run under the other consumer's main
  // loop, and TMA stores from the one slot a warp that fits beside its 5 stages gained nothing.
  bool tma_stores = false;
  // Held stores (one 16-bit output): the tile's stores leave under the next tile's first k-blocks
  // (4096^3: 1.012x cuBLASLt against 1.030 staged in line; 8192^3 0.969 against 0.982).
  bool held = false;
  // The offloaded epilogue (held kernels whose epilogue runs on the rounded words, K of 32
  // k-blocks or more: the helpers need tiles long enough to keep up): 4096^3 + bias + GELU +
  // amax 1.041x cuBLASLt's bare GEMM against 1.072 in line, + bias 1.011 against 1.024. Per-row
  // operands stay in line (a residual: 1.096 offloaded against 1.042, the helpers' per-row loads).
  bool offload = false;
  // Stream-K (gemm/stream_k.h) where sinter_sk_plan cuts (its comment has the measurements:
  // 8192^3 is cut, 4096^3 is not). Coop kernels of one row block a consumer; held kernels whose
  // epilogue reads an operand per row walk whole items (with the cut's registers they spilled
  // 40-60 bytes). The tall tile walks whole items: its cuts have not run on odd shapes on a GPU.
  bool stream_k = false;
  // A full tile's bias pairs loaded under its last k-block, not after the last wgmma wait (held
  // kernels with the epilogue in line: 4096^3 fused 1.063-1.066x against 1.067-1.068).
  bool preload = false;
  // The GPC order (gpc_order.hpp): coop kernels whose plain (not multicast) operand is A (H100,
  // 4096^3: 0.993-0.995x cuBLASLt against 1.005-1.006 in index order). The tall pair multicasts
  // A (its plain operand is B: another order); ping-pong has not been measured with it.
  bool unit_order = false;
  int store_stage_bytes = 0, smem_bytes = 0;
  int64_t items = 0, units = 0, work = 0;
  SinterStreamK sk{};
  // stream-K's workspace, after the epilogue's: a flag a consumer warp and a kBM x kBN f32 slot a CTA
  size_t sk_flags_offset = 0, sk_partials_offset = 0, sk_workspace_end = 0;
};

DirectPlan plan_direct(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                       const Sm90DirectConfig& c, const AnchorEpilogue& epi) {
  DirectPlan p;
  p.c = c;
  p.o = sm90_operands(g, r);
  const bool tma_fits = static_cast<size_t>(sm90_direct_smem_bytes(c, AnchorEpilogue::tma_stage_bytes(kTmaSlots)) +
                                            kStaticSmemRoom) <= dev.max_shared_memory_per_block_optin;
  p.tma_stores = !c.ping_pong && tma_fits && epi.tma_stores_possible(kTmaSlots);
  p.store_stage_bytes = p.tma_stores ? AnchorEpilogue::tma_stage_bytes(kTmaSlots) : 0;
  const int k_block = 128 / static_cast<int>(dtype_size(p.o.dtype));
  const int64_t k_blocks = (p.o.k + k_block - 1) / k_block;
  const int row_blocks = sm90_direct_row_blocks(c);  // the tall tile: two 64-row blocks a consumer
  const int held_chunks = c.bn / 64 * row_blocks;
  p.held = p.tma_stores && epi.wide_outputs().size() == 1 && k_blocks >= held_chunks;
  p.items = sm90_direct_items(c, p.o.batch.numel, p.o.m, p.o.n);  // tiles, or tile pairs
  // the persistent grid: one CTA an SM; ping-pong CTAs take two tiles at a time
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 132;
  p.work = c.ping_pong ? (p.items + 1) / 2 : p.items;
  p.units = std::clamp<int64_t>(p.work, 1, sms / c.cluster);
  // a held tile's chunks leave under the next piece's first k-blocks: no piece shorter than that
  p.sk = sinter_sk_plan(static_cast<int>(p.units), p.items, static_cast<int>(std::min<int64_t>(k_blocks, int64_t{1} << 30)),
                        p.held ? held_chunks : 1);
  p.stream_k = !c.ping_pong && !(p.held && epi.reads_per_row()) && row_blocks == 1 && p.sk.sk_items > 0;
  p.offload = p.held && row_blocks == 1 && !epi.empty() && epi.runs_on_rounded_words() && k_blocks >= 32 &&
              p.items < (int64_t{1} << 30) && !p.stream_k;
  p.preload = p.held && !p.offload && epi.preloaded_operand() >= 0;
  p.unit_order = !c.ping_pong && !sm90_direct_multicast_a(c);
  p.smem_bytes = sm90_direct_smem_bytes(c, p.store_stage_bytes);
  p.sk_flags_offset = (epi.workspace_bytes() + 255) / 256 * 256;
  const size_t sk_ctas = static_cast<size_t>(p.units * c.cluster);
  p.sk_partials_offset = (p.sk_flags_offset + sk_ctas * 8 * sizeof(uint32_t) + 255) / 256 * 256;
  p.sk_workspace_end = p.sk_partials_offset + sk_ctas * static_cast<size_t>(c.bm * c.bn) * sizeof(float);
  return p;
}

std::string b(bool v) { return v ? "true" : "false"; }

// The kernel's config (sm90_direct_config.cuh's fields) and the host's view of its size.
std::string config_struct(const DirectPlan& p) {
  const Sm90DirectConfig& c = p.c;
  const char* store = p.held ? "held" : p.tma_stores ? "tma" : "chains";
  std::ostringstream s;
  s << "struct Sm90Config {\n"
    << "  static constexpr int kBM = " << c.bm << ", kBN = " << c.bn << ", kStages = " << c.stages
    << ", kCluster = " << c.cluster << ";\n"
    << "  static constexpr bool kPingPong = " << b(c.ping_pong) << ";\n"
    << "  static constexpr int kWgmma = " << wgmma_type(p.o.dtype).constant << ";\n"
    << "  static constexpr bool kBMnMajor = " << b(p.o.b_mn_major) << ";\n"
    << "  static constexpr Sm90Store kStore = Sm90Store::" << store << ";\n"
    << "  static constexpr bool kOffload = " << b(p.offload) << ", kPreloadBias = " << b(p.preload)
    << ", kStreamK = " << b(p.stream_k) << ", kUnitOrder = " << b(p.unit_order) << ";\n"
    << "  using Trace = " << (c.trace ? "SinterCtaTrace" : "Sm90NoTrace") << ";\n"
    << "};\n"
    << "using Cfg = HopperDirectConfig<Sm90Config>;\n"
    << "static_assert(Cfg::kSmemBytes == " << p.smem_bytes << ", \"the host's Hopper GEMM constants are stale\");\n";
  return s.str();
}

std::string description(const DirectPlan& p, const AnchorEpilogue& epi) {
  const WgmmaType wt = wgmma_type(p.o.dtype);
  return "matmul sm90 wgmma." + std::string(wt.name) + " " +
         sm90_direct_name(p.c, 128 / static_cast<int>(dtype_size(p.o.dtype))) + " tma setmaxnreg persistent group" +
         std::to_string(sm90_direct_group_m(p.c)) + " direct-epilogue" + (p.tma_stores ? " tma-store" : "") +
         (p.held ? " held-stores" : "") + (p.offload ? " offloaded-epilogue(3 helper warps)" : "") +
         (p.preload ? " preloaded-bias" : "") + (p.c.trace ? " trace" : "") +
         (p.stream_k ? " stream-k(" + std::to_string(p.sk.sk_items) + " of " + std::to_string(p.items) +
                           " items cut over " + std::to_string(p.units) + " units)"
                     : "") +
         (is_fp8(p.o.dtype) ? " fp8-fast-accum" : "") + (p.o.b_mn_major ? " b-mn-major" : "") +
         (p.o.batch_folded ? " batch-folded" : "") + (epi.index64() ? " idx64" : "") + epi.describe();
}

// The kernel's arguments, in the order the template reads them (gemm/sm90_gemm_direct.cuh).
void declare_args(ArgsWriter& w, KernelSpec& spec, const fuse::Region& r, const DirectPlan& p, const AnchorEpilogue& epi) {
  const Sm90DirectConfig& c = p.c;
  // each CTA of a cluster loads its share of the operand the pair shares
  const bool multicast_a = sm90_direct_multicast_a(c);
  w.tensor_map("tma_a", sm90_tensor_map(r, p.o, true, static_cast<uint32_t>(multicast_a ? c.bm / c.cluster : c.bm)));
  w.tensor_map("tma_b", sm90_tensor_map(r, p.o, false, static_cast<uint32_t>(multicast_a ? c.bn : c.bn / c.cluster)));
  w.field("SinterGemmShape", "shape", sm90_gemm_shape(p.o));
  // the engine fills the GPC order's table once it has sized the grid
  if (p.unit_order) {
    spec.unit_order =
        KernelSpec::UnitOrderSlot{w.field("SinterUnitOrder", "order", SinterUnitOrder{}), sm90_direct_group_m(c)};
  }
  epi.declare(w);
  if (p.tma_stores) epi.declare_store_maps(w);
  if (p.stream_k) {
    w.field("SinterStreamK", "sk", p.sk);
    w.workspace_pointer("u32*", "sk_flags", p.sk_flags_offset, 4);
    w.workspace_pointer("float*", "sk_partials", p.sk_partials_offset, 16);
  }
}

}  // namespace

RegionKernels build_matmul_sm90_direct(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                       const Sm90DirectConfig& c) {
  const std::string why_not = sm90_gemm_unsupported(g, r, dev, true);
  if (!why_not.empty()) {
    throw Error(ErrorCode::internal, "build_matmul_sm90_direct: region " + std::to_string(r.id) + ": " + why_not);
  }
  if (dev.max_shared_memory_per_block_optin < static_cast<size_t>(sm90_direct_smem_bytes(c))) {
    throw Error(ErrorCode::internal, "build_matmul_sm90_direct: " + sm90_direct_name(c) + " needs " +
                                         std::to_string(sm90_direct_smem_bytes(c)) + " bytes of shared memory");
  }
  AnchorEpilogue epi(g, r, g.node(r.anchor).outputs[0]);
  const DirectPlan p = plan_direct(g, r, dev, c, epi);

  RegionKernels rk;
  KernelSpec spec;
  ArgsWriter w(spec);
  declare_args(w, spec, r, p, epi);
  const std::string args = w.finish();
  Sm90EpilogueForm form;
  form.bn = c.bn;
  form.tma_slots = p.tma_stores ? kTmaSlots : 0;
  form.held = p.held;
  form.offload = p.offload;
  form.preload = p.preload;
  std::vector<std::string> includes = {"gemm/gemm_abi.h", "gemm/sm90_gemm_direct.cuh"};
  if (c.trace) includes.push_back("common/trace.cuh");
  std::ostringstream src;
  src << "// matmul region " << r.id << " of graph '" << g.name() << "' (Hopper TMA + wgmma, direct epilogue)\n"
      << kernel_includes(includes) << config_struct(p)
      << "[[maybe_unused]] constexpr bool kIndex64 = " << (epi.index64() ? "true" : "false") << ";\n\n"
      << args << "\n"
      << epi.sm90_functor(form) << "\n"
      << "// out: [batches, M, N]\n"
      << "extern \"C\" __global__ void __launch_bounds__(Cfg::kThreads, 1) sinter_region(const __grid_constant__ Args a) {\n"
      << "  sm90_gemm_direct<Cfg, Epilogue>(a);\n"
      << "}\n";

  spec.source = src.str();
  spec.description = description(p, epi);
  spec.launch.grid = dim3(static_cast<unsigned>(c.cluster * p.units));
  if (c.cluster > 1) spec.launch.cluster = dim3(static_cast<unsigned>(c.cluster), 1, 1);
  spec.launch.block = dim3(384);
  spec.launch.dynamic_shared_memory = static_cast<size_t>(p.smem_bytes);
  spec.persistent_work = p.work;
  // Stream-K kernels cut the last wave over every unit they get; whole items go on the engine's
  // balanced grid (4096^3: 64 clusters of 4 pair items). Every resident unit for whole items too
  // measured slower (H100, 4096^3: 1.008x cuBLASLt against 1.005-1.007 bare, 1.037 against
  // 1.030-1.032 fused).
  spec.persistent_fill = p.stream_k;
  rk.workspace_bytes = p.stream_k ? p.sk_workspace_end : epi.workspace_bytes();
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
