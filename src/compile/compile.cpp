// compile(Graph, CompileOptions) -> Plan: the whole pipeline as one straight list of named passes.
// Read this file first. Each pass is a function from one structure to the next, timed and
// reported through the log callback:
//
//   validate         Graph -> Graph              shapes and dtypes inferred, every IR rule checked
//   partition        Graph -> Partition           fused regions (fuse/)
//   verify partition                              the partition's invariants
//   candidates       Partition -> RegionCandidates  every allowed engine's candidates per region
//   tune             RegionCandidates -> Choices  one per region, by rank or by timing (tune/)
//   prepare          Choices -> PreparedSteps     kernels generated and compiled, vendor plans built
//   plan memory      PreparedSteps -> Layout      arena by liveness, step workspaces
//   megakernels      PreparedSteps -> cubins      (CompileOptions::megakernels) each mega segment compiled
//   assemble         -> plan::Plan                each engine saves its steps; the plan is checked
//   time megakernels plan::Plan -> plan::Plan     (megakernels, timing tune modes) each megakernel's
//                                                 segments timed as it and as their steps (time_megakernels.hpp)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>

#include "compile/compile_context.hpp"
#include "cuda/device.hpp"
#include "cuda/kernel_sources.hpp"
#include "cuda/sha256.hpp"
#include "engines/registry.hpp"
#include "fuse/region.hpp"
#include "compile/time_megakernels.hpp"
#include "mega/megakernel_plan.hpp"
#include "plan/bundle_format.hpp"
#include "plan/memory_plan.hpp"
#include "plan/plan_state.hpp"
#include "sinter/error.hpp"
#include "tune/tuner.hpp"

namespace sinter {
namespace {

// Times passes and reports each one's duration.
class PassTimer {
 public:
  explicit PassTimer(const CompileOptions& o) : log_(o.on_log) {}
  template <class F>
  auto run(const char* pass, F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    struct Record {
      PassTimer& timer;
      const char* pass;
      std::chrono::steady_clock::time_point t0;
      ~Record() {
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        timer.passes_.emplace_back(pass, ms);
        if (timer.log_) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "compile: %s %.2f ms", pass, ms);
          timer.log_(LogSeverity::info, buf);
        }
      }
    } record{*this, pass, t0};
    return f();
  }
  std::vector<std::pair<std::string, double>> passes() const { return passes_; }

 private:
  LogCallback log_;
  std::vector<std::pair<std::string, double>> passes_;
};

Graph validate(const Graph& graph) {
  Graph g = graph;
  g.validate();
  return g;
}

// A forced candidate config must be taken by some region: forcing one that applies nowhere is a
// mistake to report, not a plan to build silently without it.
void check_forced_config(const std::vector<tune::RegionCandidates>& candidates, const CompileOptions& o) {
  if (o.candidate_config.empty()) return;
  std::string why;
  for (const tune::RegionCandidates& rc : candidates) {
    if (rc.forced) return;
    if (!rc.forced_refusal.empty()) why += "; region " + std::to_string(rc.region) + ": " + rc.forced_refusal;
  }
  throw Error(ErrorCode::invalid_argument,
              "compile: no region takes the forced candidate config '" + o.candidate_config + "'" + why);
}

// The prepared steps, in region order, and where each one's workspace sits.
struct PreparedSteps {
  std::vector<std::unique_ptr<PreparedStep>> steps;
  std::vector<std::string> fallbacks;  // by step
};

// Why a region is not on the first engine the user named, "" when it is or none was named.
std::string fallback_reason(const CompileOptions& o, const tune::Choice& choice, const tune::RegionCandidates& rc) {
  if (o.engines.empty() || choice.engine->name() == o.engines.front() || choice.engine->always_allowed()) return "";
  for (const auto& [engine, why] : rc.refusals) {
    if (engine == o.engines.front()) return o.engines.front() + ": " + why;
  }
  const bool timed = std::any_of(choice.tried.begin(), choice.tried.end(),
                                 [&](const tune::CandidateTime& t) { return t.engine == o.engines.front(); });
  if (std::find(o.engines.begin(), o.engines.end(), choice.engine->name()) == o.engines.end()) {
    return o.engines.front() + " and the other named engines do not support it";
  }
  return o.engines.front() + (timed ? ": its candidates were slower, failed or gave wrong results"
                                    : ": it offered no candidate");
}

PreparedSteps prepare(const Graph& g, const fuse::Partition& p, const tune::TuneReport& tuned,
                      const std::vector<tune::RegionCandidates>& candidates, EngineContext& ctx,
                      const CompileOptions& o) {
  PreparedSteps out;
  for (const tune::Choice& c : tuned.choices) {
    out.steps.push_back(c.engine->prepare(g, p.regions.at(c.region), c.candidate, ctx));
    out.fallbacks.push_back(fallback_reason(o, c, candidates.at(c.region)));
  }
  return out;
}

struct Layout {
  plan::MemoryPlan memory;
  plan::WorkspaceLayout workspace;
  std::vector<uint64_t> step_workspace;  // offset within the workspace area, by step
  std::vector<TensorId> alias_of;        // by tensor: the tensor whose memory it shares, or -1
};

Layout plan_memory(const Graph& g, const fuse::Partition& p, const tune::TuneReport& tuned,
                   const PreparedSteps& prepared) {
  Layout l;
  std::vector<TensorId>& alias_of = l.alias_of;
  alias_of.assign(g.tensors().size(), -1);
  uint64_t workspace = 0;
  for (size_t i = 0; i < prepared.steps.size(); ++i) {
    const fuse::Region& r = p.regions.at(tuned.choices[i].region);
    if (tuned.choices[i].engine->output_shares_input()) {
      const Node& n = g.node(r.anchor);
      alias_of[n.outputs[0]] = n.inputs[0];
    }
    const size_t bytes = prepared.steps[i]->workspace_bytes();
    workspace = bytes ? plan::bundle_detail::align_up(workspace, plan::kArenaAlignment) : workspace;
    l.step_workspace.push_back(bytes ? workspace : 0);
    workspace += bytes;
  }
  l.memory = plan::plan_memory(g, p, alias_of);
  plan::verify_memory_plan(g, l.memory);
  l.workspace = {plan::bundle_detail::align_up(l.memory.arena_bytes, plan::kArenaAlignment), workspace};
  return l;
}

// The megakernels of mode mega (mega/megakernel_plan.hpp), compiled: (source digest, cubin).
struct Megakernels {
  std::vector<std::pair<std::string, std::vector<char>>> cubins;
};

Megakernels build_megakernels(const Graph& g, const fuse::Partition& p, const tune::TuneReport& tuned,
                              const PreparedSteps& prepared, const Layout& layout, EngineContext& ctx) {
  std::vector<mega::PlanStepRef> refs;
  for (size_t i = 0; i < prepared.steps.size(); ++i) {
    const tune::Choice& c = tuned.choices[i];
    refs.push_back({c.engine, c.region, c.candidate.config, prepared.steps[i]->describe(), prepared.steps[i].get()});
  }
  const mega::MegakernelPlan m = mega::plan_megakernels(g, p, refs, layout.alias_of, ctx.device);
  Megakernels out;
  std::set<std::string> stored;  // segments of the same source (layers between vendor steps) share a cubin
  for (size_t k = 0; k < m.pieces.size(); ++k) {
    if (!m.graphs[k]) continue;
    if (!stored.insert(mega::megakernel_source_key(m.sources[k])).second) continue;
    cuda::KernelRequest req;
    req.name = g.name() + "_megakernel_" + std::to_string(m.pieces[k].steps.front()) + ".cu";
    req.source = m.sources[k];
    req.options.arch = ctx.device.arch;
    out.cubins.emplace_back(mega::megakernel_source_key(m.sources[k]), ctx.cache.get_binary(req)->cubin);
  }
  return out;
}

plan::Plan assemble(const Graph& g, const fuse::Partition& p, const CompileOptions& o,
                    const cuda::DeviceProperties& dev, const tune::TuneReport& tuned, const PreparedSteps& prepared,
                    const Layout& layout, const Megakernels& megakernels) {
  plan::Plan plan;
  plan.producer = std::string("sinter ") + SINTER_VERSION;
  plan.graph = g;
  plan.fusion = o.fusion;
  plan.target = {dev.arch, dev.name, dev.sm_count};
  plan.memory = layout.memory;
  plan.workspace = layout.workspace;
  plan::PlanBlobs blobs(plan);
  for (size_t i = 0; i < prepared.steps.size(); ++i) {
    const tune::Choice& c = tuned.choices[i];
    const PreparedStep& step = *prepared.steps[i];
    plan::Step s;
    s.region = c.region;
    s.kind = p.regions.at(c.region).kind;
    s.engine = std::string(c.engine->name());
    s.candidate = c.candidate.index;
    s.config = c.candidate.config;
    s.description = step.describe();
    s.fallback = prepared.fallbacks[i];
    s.tuned_ms = c.median_ms;
    s.workspace_bytes = step.workspace_bytes();
    s.workspace_offset = layout.step_workspace[i];
    s.saved = c.engine->save_step(step, blobs);
    plan.steps.push_back(std::move(s));
  }
  for (const auto& [source, cubin] : megakernels.cubins) {
    plan.megakernels.push_back({source, blobs.put(BlobKind::cubin, cubin)});
  }
  // The bundle loader's checks, on the plan as built: a plan that would not load is a bug here.
  std::vector<plan::bundle_detail::StepMembership> membership;
  for (const fuse::Region& r : p.regions) membership.push_back(plan::bundle_detail::membership_of(g, r));
  try {
    plan::bundle_detail::check_plan(plan, membership, "being compiled");
  } catch (const Error& e) {
    throw Error(ErrorCode::internal, "compile assembled a plan that fails its checks: " + e.message());
  }
  return plan;
}

}  // namespace

Plan compile(const Graph& graph, const CompileOptions& options) {
  CompileContext cc(options);  // checks the options, finds the GPU, opens the caches
  PassTimer timer(options);
  const Graph g = timer.run("validate", [&] { return validate(graph); });
  auto partition = [&](const FusionOptions& fusion) {
    fuse::Partition part = timer.run("partition", [&] { return fuse::partition_graph(g, fusion); });
    timer.run("verify partition", [&] { fuse::verify_partition(g, part); });
    return part;
  };
  // The candidates, the tuner's choices and the prepared steps of a partition's regions.
  struct Steps {
    std::vector<tune::RegionCandidates> candidates;
    tune::TuneReport tuned;
    PreparedSteps prepared;
  };
  auto plan_steps = [&](const fuse::Partition& part) {
    Steps s;
    s.candidates = timer.run("candidates", [&] {
      std::vector<tune::RegionCandidates> c = tune::gather_candidates(g, part, cc.engines(), cc.engine_context(), cc.tune_options());
      check_forced_config(c, options);
      return c;
    });
    s.tuned = timer.run("tune", [&] {
      return tune::tune(g, part, s.candidates, cc.engine_context(), cc.timing_cache(), cc.device_key(), cc.tune_options());
    });
    s.prepared = timer.run("prepare", [&] { return prepare(g, part, s.tuned, s.candidates, cc.engine_context(), options); });
    return s;
  };
  CompileOptions effective = options;  // the fusion the plan records
  fuse::Partition p = partition(effective.fusion);
  std::optional<Steps> planned;
  try {
    planned.emplace(plan_steps(p));
  } catch (const Error& e) {
    // A matmul with a folded norm runs on one jit tile alone. Where a region cannot be planned
    // (no engine takes it: the jit engine not named, a GPU without that tile; or its candidates
    // failed) and the graph has a folded norm, it is planned once more with the norms unfolded;
    // if that fails too, the error says both.
    const bool folded = std::any_of(p.regions.begin(), p.regions.end(),
                                    [](const fuse::Region& r) { return r.folded_norm() >= 0; });
    if (e.code() != ErrorCode::unsupported || !folded) throw;
    if (options.on_log) {
      options.on_log(LogSeverity::info, "planning with rmsnorms folded into matmuls failed (" + e.message() +
                                            "); planning again with the norms unfolded");
    }
    effective.fusion.fold_norms_into_matmuls = false;
    p = partition(effective.fusion);
    try {
      planned.emplace(plan_steps(p));
    } catch (const Error& again) {
      throw Error(again.code(), again.message() + " (with the norms unfolded; with them folded: " + e.message() + ")");
    }
  }
  const tune::TuneReport& tuned = planned->tuned;
  const PreparedSteps& prepared = planned->prepared;
  const Layout layout = timer.run("plan memory", [&] { return plan_memory(g, p, tuned, prepared); });
  const Megakernels megakernels = options.megakernels ? timer.run("megakernels", [&] {
    return build_megakernels(g, p, tuned, prepared, layout, cc.engine_context());
  }) : Megakernels{};
  auto state = std::make_shared<Plan::State>();
  state->data = timer.run("assemble", [&] {
    return assemble(g, p, effective, cc.device(), tuned, prepared, layout, megakernels);
  });
  if (options.megakernels && options.tuning != TuneMode::heuristic) {
    timer.run("time megakernels", [&] { time_megakernels(*state, Plan(state), cc, options); });
  }
  cc.save_timing_cache();
  for (const tune::Choice& c : tuned.choices) state->tuning.push_back({c.from_cache, c.tried});
  state->compile = cc.report(tuned, timer.passes());
  return Plan(std::move(state));
}

}  // namespace sinter
