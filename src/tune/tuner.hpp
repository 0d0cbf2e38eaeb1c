// The tuner: one candidate per region, by the engines' own ranking (heuristic) or by timing
// candidates on the GPU (fast: each engine's top k; exhaustive: all of them), with results
// remembered in a TimingCache so a second build of the same graph times nothing.
#pragma once

#include "sinter/compile.hpp"
#include "sinter/host_tensor.hpp"

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engines/engine.hpp"
#include "tune/timing_cache.hpp"

namespace sinter::tune {

using TuneMode = sinter::TuneMode;  // sinter/compile.hpp

struct TuneOptions {
  TuneMode mode = TuneMode::heuristic;
  int top_k = 3;              // per engine, in fast mode
  // Heuristic mode: take the first supporting engine's candidate with this index where it has
  // one (its best-ranked otherwise); -1 takes the best-ranked everywhere. With a forced engine,
  // this is how a user or a test picks one candidate by hand.
  int candidate = -1;
  // Heuristic mode: take the candidate whose config is this text where an engine has one (before
  // `candidate`); "" leaves it to `candidate`.
  std::string config;
  int warmup = 3;
  int repeats = 20;           // the median of these
  double time_limit_ms = 2000;  // per candidate: stop timing it once a launch takes this long
  size_t max_workspace = size_t{256} << 20;  // candidates needing more are skipped
  // Every timed candidate's outputs (one launch on the same inputs) must agree with those of the
  // first candidate that ran (the preferred engine's best-ranked), within twice the outputs'
  // error bound; one that disagrees is skipped with the figures. A wrong kernel must never win
  // on speed. Costs a copy of the outputs to the host per candidate.
  bool check_outputs = true;
  // Called after each timed candidate: (region, regions, candidates done in this region,
  // candidates in this region, best so far or "").
  std::function<void(int, int, int, int, const std::string&)> progress;
};

struct Choice {
  int region = 0;
  const Engine* engine = nullptr;
  Candidate candidate;
  double median_ms = -1;  // < 0: not timed (heuristic mode, or from the engine's ranking)
  bool from_cache = false;
  std::vector<CandidateTime> tried;
};

struct TuneReport {
  std::vector<Choice> choices;  // one per region, in region order
  int timings = 0;              // candidates timed on the GPU in this run
  int cache_hits = 0;
};

// Why the outputs `got` (of `tensors`, in order) disagree with `want` (the outputs of candidate
// `want_name`), or "" when they agree: bit-identical, or within twice each output's error bound
// (relative_l2_bound(g, tensor); each may be that far from the exact result). A NaN where the
// other has a different value disagrees.
std::string output_disagreement(const Graph& g, const std::vector<TensorId>& tensors,
                                const std::vector<HostTensor>& got, const std::vector<HostTensor>& want,
                                const std::string& want_name);

// The candidates tuning considers for each region, in the engines' preference order: heuristic
// mode the first supporting engine's best-ranked (after the forced one, TuneOptions::candidate or
// ::config, where it has it); fast mode each supporting engine's top_k; exhaustive mode all. An
// engine whose output shares its input's memory, where it supports a region, is its only
// candidate. Error(unsupported) naming the region and each engine's reason where none supports it.
struct RegionCandidates {
  int region = 0;
  std::vector<std::pair<const Engine*, Candidate>> list;
  std::vector<std::pair<std::string, std::string>> refusals;  // (engine, why) of the engines before
  bool forced = false;          // the first candidate is the one TuneOptions forced
  std::string forced_refusal;  // why the first supporting engine cannot run TuneOptions::config here
};
std::vector<RegionCandidates> gather_candidates(const Graph& g, const fuse::Partition& p,
                                               std::span<const Engine* const> engines, const EngineContext& ctx,
                                               const TuneOptions& options);

// One choice per region: the first candidate in heuristic mode (and where there is one), else the
// fastest timed (ties to the earlier). `cache` may be null. Timing needs a GPU.
TuneReport tune(const Graph& g, const fuse::Partition& p, const std::vector<RegionCandidates>& candidates,
                EngineContext& ctx, TimingCache* cache, const DeviceKey& device, const TuneOptions& options);

}  // namespace sinter::tune
