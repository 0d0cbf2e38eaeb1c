// The jit engine's typed candidate configs: one struct per generator, whose fields are the kernel
// variants the tuner may choose between (DESIGN.md key idea 8). A config's text form
// ("rowwise stage=bulk threads=512 stages=3 ...") is what a Candidate carries: the timing cache
// keys on it, a plan records it, and parse_kernel_config reads it back into the same struct.
//
// Each config type lists its fields once, in `fields(config, visitor)`; the text form, parsing
// and equality all follow from that list, so adding a variant is adding one field and one line.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace sinter::jit {

// Pointwise tiles (codegen_pointwise.cpp).
struct PointwiseConfig {
  // Vectors per thread per tile, all loaded before any is used (the bytes each thread keeps in
  // flight).
  int unroll = 4;
  // Streaming cache hints (kernels/common/stream_memory.cuh) on the operands read once and on the
  // stores: L1 no-allocate loads, evict-first stores.
  bool stream = false;
  // The next tile's loads are issued before this tile computes (two tiles of registers).
  bool pipelined = false;
  // One tile per CTA and a grid that covers the tensor, instead of a persistent grid looping over
  // tiles (bench/experiments/stream_probe.cu measured why). Regions with exit reductions keep
  // the persistent grid.
  bool flat = false;
  bool operator==(const PointwiseConfig&) const = default;
};

// Row-wise norms and softmax (codegen_rowwise.cpp).
enum class RowStage { heuristic, off, on, bulk };
struct RowwiseConfig {
  // Whether the next row's prologue inputs are fetched into shared memory while this row
  // reduces: `on` with cp.async, `bulk` with cp.async.bulk into a ring of `stages` row buffers
  // (one thread copies each row, `stages - 1` rows ahead, counted on an mbarrier per buffer);
  // `heuristic` lets the generator pick per row op (RowwiseGen::resolve_heuristic).
  RowStage stage = RowStage::heuristic;
  // A register-resident row is split over at most this many threads.
  int max_threads = 512;
  int stages = 2;  // row buffers of the bulk ring (cp.async staging always uses 2)
  // Streaming cache hints on the loads of per-row inputs that are not staged, and the stores.
  bool stream = false;
  // Inputs broadcast over the rows (weight, bias) loaded into registers once per CTA.
  bool resident_weights = false;
  // > 0: __launch_bounds__ asks for this many resident CTAs per SM (caps registers per thread).
  int min_blocks = 0;
  // One row per CTA, the grid covering every row, instead of a persistent grid (regions with
  // global exit reductions keep the persistent grid).
  bool flat = false;
  bool operator==(const RowwiseConfig&) const = default;
};

// Matmul tiles (codegen_matmul*.cpp); matmul_configs lists them best-expected first.
enum class MatmulTile { decode_tma_rows, decode_tma, decode_ffma, decode_gemv, sm90_ctile, sm90_direct, generic };

// A tile config of the direct-epilogue Hopper GEMM (kernels/gemm/sm90_gemm_direct.cuh):
// bm x bn x (128 bytes of k) tiles through a `stages`-deep ring; cooperative (bm 128: both
// consumers on one tile; bm 256, bn 128, the tall tile: 128 rows each, as two 64-row
// accumulators) or ping-pong (bm 64: a tile per consumer, one's epilogue under the other's main
// loop). cluster 2: CTA pairs share B through TMA multicast (M-adjacent tiles), the tall tile's
// pairs A (N-adjacent tiles).
// trace: an instrumented build that stamps each CTA's entry, PDL wait, first and last tile and
// exit (kernels/common/trace.cuh); never offered by matmul_configs, set where tracing is asked
// for (SINTER_TRACE_FILE).
struct Sm90DirectConfig {
  int bm = 128, bn = 256, stages = 4;
  bool ping_pong = false;
  int cluster = 1;
  bool trace = false;
  bool operator==(const Sm90DirectConfig&) const = default;
};

// The TMA decode tile's per-step settings (kernels/gemm/decode_tma.cuh, DecodeTmaLayout), both
// cuts. The defaults are the whole-tile cut's: 32 KiB steps on a 3-stage ring, 2 accumulator
// chains and a producer warp streamed a 117 MB weight fastest at M = 1, 8 and 16 (3.67-3.70 TB/s,
// against 3.40-3.60 with 16 KiB steps, one chain and thread 0 issuing; docs/benchmarks.md).
struct DecodeTmaConfig {
  // W rows of a stream-K tile: 32, 64 or 128 (whole tiles: 128, the tallest box). Narrower tiles
  // read a step as 4 or 2 groups of k boxes, one chunked TMA box where K % 64 == 0.
  int bn = 128;
  // 64-k boxes each warp reads a step: 1 (16 KiB steps, a 6-stage ring) or 2 (32 KiB, 3 stages).
  int warp_boxes = 2;
  int acc_chains = 2;          // independent accumulator chains a step: 1, 2 or 4
  bool producer_warp = true;   // a ninth warp issues the loads (else thread 0, between its steps)
  bool operator==(const DecodeTmaConfig&) const = default;
};

struct MatmulConfig {
  MatmulTile tile = MatmulTile::generic;
  Sm90DirectConfig direct;  // sm90_direct only
  DecodeTmaConfig tma;      // decode_tma and decode_tma_rows only
  bool operator==(const MatmulConfig&) const = default;
};

// Attention (codegen_flash_decode.cpp, codegen_flash_simple.cpp): the flash-decoding kernel (Sq <= 16), or the
// flash-simple tile.
enum class SdpaKernel { decode, simple };
struct SdpaConfig {
  SdpaKernel kernel = SdpaKernel::simple;
  bool operator==(const SdpaConfig&) const = default;
};

// Generators with one kernel shape per region: their config has no fields.
struct ReductionConfig {
  bool operator==(const ReductionConfig&) const = default;
};
struct LayoutConfig {
  bool operator==(const LayoutConfig&) const = default;
};
struct ConvConfig {
  bool operator==(const ConvConfig&) const = default;
};

using KernelConfig =
    std::variant<PointwiseConfig, RowwiseConfig, ReductionConfig, LayoutConfig, MatmulConfig, ConvConfig, SdpaConfig>;

// The field lists. `f(name, field)` is called once per field, in a fixed order; a field is an
// int, a bool or one of the enums above.
template <class C, class F>
void fields(C& c, F&& f) {
  using T = std::remove_const_t<C>;
  if constexpr (std::is_same_v<T, PointwiseConfig>) {
    f("unroll", c.unroll);
    f("stream", c.stream);
    f("pipelined", c.pipelined);
    f("flat", c.flat);
  } else if constexpr (std::is_same_v<T, RowwiseConfig>) {
    f("stage", c.stage);
    f("threads", c.max_threads);
    f("stages", c.stages);
    f("stream", c.stream);
    f("resident_weights", c.resident_weights);
    f("min_blocks", c.min_blocks);
    f("flat", c.flat);
  } else if constexpr (std::is_same_v<T, MatmulConfig>) {
    f("tile", c.tile);
    if (c.tile == MatmulTile::sm90_direct) {
      f("bm", c.direct.bm);
      f("bn", c.direct.bn);
      f("stages", c.direct.stages);
      f("ping_pong", c.direct.ping_pong);
      f("cluster", c.direct.cluster);
      // named in the text only where set (parsing always reads it): a diagnostic build, and the
      // candidates' texts, which timing caches and plans key on, stay as they were
      if (!std::is_const_v<C> || c.direct.trace) f("trace", c.direct.trace);
    }
    if (c.tile == MatmulTile::decode_tma || c.tile == MatmulTile::decode_tma_rows) {
      if (c.tile == MatmulTile::decode_tma) f("bn", c.tma.bn);
      f("warp_boxes", c.tma.warp_boxes);
      f("chains", c.tma.acc_chains);
      f("producer", c.tma.producer_warp);
    }
  } else if constexpr (std::is_same_v<T, SdpaConfig>) {
    f("kernel", c.kernel);
  }
}

// The generator a config is for: "pointwise", "rowwise", "reduction", "layout", "matmul",
// "conv", "sdpa".
std::string_view config_kind(const KernelConfig& c);

// "matmul tile=sm90_direct bm=128 bn=256 stages=4 ping_pong=0 cluster=2": the kind, then every
// field as name=value in the order of `fields`. Two configs have the same text exactly when they
// are equal.
std::string config_text(const KernelConfig& c);

// The config `text` names. Throws Error(parse) naming the word that is wrong: an unknown kind or
// field, a value out of range, a field given twice. Fields left out keep their defaults.
KernelConfig parse_kernel_config(std::string_view text);

std::string_view to_string(RowStage s);
std::string_view to_string(MatmulTile t);
std::string_view to_string(SdpaKernel k);

}  // namespace sinter::jit
