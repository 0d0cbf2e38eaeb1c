// Compiling a graph into a Plan: validate, fuse, ask every engine for candidates per fused region,
// choose one per region (by the engines' own ranking or by timing them on the GPU), prepare the
// chosen steps (run-time compilation of our kernels), lay out memory, and assemble the plan.
// src/compile/compile.cpp is that pass list, in order.
//
//   sinter::CompileOptions options;
//   options.tuning = sinter::TuneMode::fast;
//   options.timing_cache = sinter::default_timing_cache_path();
//   sinter::Plan plan = sinter::compile(graph, options);
//   plan.save("block.plan");
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sinter/graph.hpp"
#include "sinter/log.hpp"
#include "sinter/plan.hpp"

namespace sinter {

// How each region's candidate is chosen. heuristic: each region's first supporting engine's
// best-ranked candidate, nothing timed. fast: the best-ranked `top_k` of every supporting engine
// timed on the GPU. exhaustive: every candidate timed.
enum class TuneMode { heuristic, fast, exhaustive };
std::string_view to_string(TuneMode m);
std::optional<TuneMode> parse_tune_mode(std::string_view s);

// Which fusions the partitioner may make (docs/fusion.md). All off: one region per node.
struct FusionOptions {
  bool fuse_epilogues = true;      // pointwise ops into anchor epilogues
  bool fuse_prologues = true;      // pointwise producers into row-wise anchors
  bool fuse_reductions = true;     // exit reductions into their producer's region
  bool fuse_pointwise = true;      // pointwise chains into one region
  bool fuse_layout_chains = true;  // slice/reshape/permute chains into the copy that ends them
  // an rmsnorm read only as the A operand of matmuls of at most 16 rows (decode) is computed by
  // each of those matmuls while it loads A, instead of by a kernel of its own
  bool fold_norms_into_matmuls = true;
  static FusionOptions none() { return {false, false, false, false, false, false}; }
  bool operator==(const FusionOptions&) const = default;
};

// Reported while tuning: which region and candidate, of how many, and the best so far.
struct CompileProgress {
  int region = 0;   // 0-based
  int regions = 0;
  int candidate = 0;  // candidates done in this region
  int candidates = 0;
  std::string_view best;  // "engine description" of the fastest so far, "" none yet
};

struct CompileOptions {
  TuneMode tuning = TuneMode::heuristic;
  int top_k = 3;  // fast mode
  // The engines regions may run on, in preference order (engine_names() lists them); empty: all
  // of them, in Sinter's order. Reshapes that share memory ("alias") and collectives ("nccl")
  // stay allowed, and a region none of the named engines supports runs on the jit engine, which
  // supports every other region; the plan says why (StepDescription::fallback).
  std::vector<std::string> engines;
  // Per step: candidates needing more workspace are skipped.
  size_t workspace_limit = size_t{256} << 20;
  int device = 0;
  // A file of remembered timings (tuning modes time nothing a previous compile timed on this
  // GPU); "" keeps none. default_timing_cache_path() is the usual one.
  std::string timing_cache;
  // Where compiled kernels are cached across processes; "" is default_kernel_cache_dir().
  std::string kernel_cache_dir;
  FusionOptions fusion;
  // Forcing a candidate, heuristic mode only: where the region's first supporting engine offers,
  // or can build, a candidate whose config text is `candidate_config` (PlanDescription shows
  // configs; sinter engines lists them), or has one of rank `candidate`, it is taken instead of
  // the best-ranked. A config no region takes is an Error(invalid_argument) saying why.
  std::string candidate_config;
  int candidate = -1;
  int max_vendor_candidates = 4;  // per vendor engine (cuBLASLt, cuDNN) and region
  // Timing modes: every timed candidate's outputs must agree with those of the first candidate
  // that ran (within twice the outputs' error bound); one that disagrees is skipped, never chosen.
  bool check_outputs = true;
  int timing_warmup = 3;
  int timing_repeats = 20;  // the median of these
  // Also build the megakernels that ExecMode::mega runs (a compile pass after "plan memory") and
  // store their cubins in the plan, so a mega-mode Runner loads them with no compilation.
  bool megakernels = false;
  std::function<void(const CompileProgress&)> on_progress;
  LogCallback on_log;  // each pass's time, engine remarks, a timing cache that was ignored
};

// Throws Error: invalid_graph for a graph that breaks the IR's rules, unsupported for a region no
// engine can run (naming it and each engine's reason), cuda when there is no usable GPU, compile
// for a kernel that fails to compile, invalid_argument for bad options.
Plan compile(const Graph& graph, const CompileOptions& options = {});

// The registered engines in Sinter's preference order: "alias, cublaslt, cudnn, nccl, jit".
std::vector<std::string> engine_names();

// SINTER_TIMING_CACHE, else $XDG_CACHE_HOME/sinter/timing.json, else ~/.cache/sinter/timing.json.
std::string default_timing_cache_path();
// SINTER_CACHE_DIR, else $XDG_CACHE_HOME/sinter/kernels, else ~/.cache/sinter/kernels.
std::string default_kernel_cache_dir();

}  // namespace sinter
