// sinter run FILE: a graph (or a plan bundle) on seeded random inputs or .npy files; on the GPU
// (compiled, or loaded with no compilation, and compared with the CPU reference) or on the CPU
// reference alone; output statistics, optionally the outputs as .npy files.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "commands.hpp"
#include "format.hpp"
#include "mega_format.hpp"
#include "npy.hpp"
#include "session.hpp"

namespace sinter::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void save_outputs(const Graph& g, const TensorMap& outputs, const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw Error(ErrorCode::io, "cannot create folder '" + folder + "': " + ec.message());
  for (TensorId id : g.outputs()) {
    const std::string& name = g.tensor(id).name;
    const std::string path = folder + "/" + npy_file_name(name);
    write_npy(outputs.at(name), path);
    std::printf("wrote %s\n", path.c_str());
  }
}

void print_steps(const PlanDescription& d) {
  for (const StepDescription& s : d.steps) {
    std::printf("     step %d %s [%s] %s", s.index, s.kind.c_str(), s.engine.c_str(), s.description.c_str());
    if (s.tuned_ms >= 0) std::printf(" (%.4f ms%s)", s.tuned_ms, s.from_timing_cache ? ", timing cache" : "");
    std::printf("\n");
    if (!s.fallback.empty()) std::printf("       fallback: %s\n", s.fallback.c_str());
  }
}

}  // namespace

int cmd_run(const Common& c, const RunOptions& o) {
  const RunnerOptions runner_opts = runner_options(c, o.exec);  // checks the executor's options first
  const bool bundle = is_plan_bundle_file(o.file);
  if (bundle && o.on == "cpu") {
    throw Error(ErrorCode::invalid_argument, "a plan bundle runs on the GPU; --on cpu takes a graph file");
  }
  const bool on_gpu = bundle || o.on == "gpu" || (o.on == "auto" && gpu_availability().available);
  if (on_gpu) require_gpu(bundle ? "running a plan" : "--on gpu");
  const auto t0 = std::chrono::steady_clock::now();
  // a bundle loads (no compilation) before its graph is known; a graph file compiles after the check
  const BuildChoices choices{o.tune, o.engine, false, o.exec.executor == "mega"};
  std::optional<LoadedPlan> loaded;
  if (on_gpu && bundle) loaded = plan_from_file(c, o.file, choices);
  const Graph file_graph = loaded ? Graph() : load_graph_file(o.file);
  const Graph& g = loaded ? loaded->plan.graph() : file_graph;
  std::string group;
  if (const int world = graph_world(g, &group); world > 1) {
    if (on_gpu && runner_opts.mode != ExecMode::mega) {
      throw Error(ErrorCode::invalid_argument,
                  "graph '" + g.name() + "' is one rank's program of world " + std::to_string(world) + " (group '" +
                      group + "'): on one GPU its ranks run as " + std::to_string(world) +
                      " virtual ranks inside megakernels (--executor mega), or on the CPU reference alone (--on cpu)");
    }
    std::string plan_note;
    if (on_gpu && !loaded) {
      // virtual ranks: every step a task of the megakernel (the runner says why otherwise)
      BuildChoices ranks_choices = choices;
      ranks_choices.our_kernels = true;
      loaded = plan_from_graph(c, g, ranks_choices);
      if (o.engine == "auto") plan_note = "plan: our kernels only (--engine auto), as virtual ranks need: every step a task";
    }
    return run_ranks(c, o, runner_opts, g, loaded ? &loaded->plan : nullptr, world, group, plan_note);
  }
  if (on_gpu && !loaded) loaded = plan_from_graph(c, g, choices);
  std::printf("graph '%s': %zu nodes; inputs: %s\n", g.name().c_str(), g.nodes().size(),
              o.load_inputs.empty()
                  ? ("seeded random (seed " + std::to_string(o.seed) +
                     "): floats uniform in [-1, 1) (weights in +-1/sqrt(fan-in)), integers in [-8, 8] (a gather's indices: every valid index), bools fair coin flips")
                        .c_str()
                  : ("from " + o.load_inputs).c_str());
  const TensorMap inputs = load_or_random_inputs(g, o.load_inputs, o.seed);
  const auto r0 = std::chrono::steady_clock::now();
  const TensorMap ref = run_reference(g, inputs);
  const double ref_ms = ms_since(r0);
  TensorMap gpu_outputs;
  bool ok = true;
  if (on_gpu) {
    const PlanDescription d = loaded->plan.describe();
    PlanSession session(loaded->plan, runner_opts);
    gpu_outputs = session.run(inputs);
    const double first_ms = ms_since(t0);
    std::printf("device: %s\n   plan %s: %zu steps, %s executor\n", device_info(c.device).description.c_str(),
                loaded->from_bundle ? ("loaded from " + o.file + ", 0 compilations").c_str() : "compiled now",
                d.steps.size(), o.exec.executor.c_str());
    print_steps(d);
    if (runner_opts.mode == ExecMode::mega) {
      std::printf("   megakernel: %s\n", mega_overview(session.runner().mega_description()).c_str());
    }
    if (d.compile) std::printf("   %s\n", d.compile->kernel_cache.c_str());
    for (const std::string& n : session.runner().load_notes()) std::printf("   note: %s\n", n.c_str());
    const Percentiles p = percentiles(session.time(o.iters, 5));
    std::printf("   load or compile to first result %s; gpu time %s (median of %d runs); cpu reference %s\n",
                human_ms(first_ms).c_str(), human_ms(p.p50).c_str(), o.iters, human_ms(ref_ms).c_str());
    ok = print_comparison(g, gpu_outputs, ref);
  } else {
    std::printf("device: cpu (reference executor, float64 accumulation), %s\n", human_ms(ref_ms).c_str());
  }
  const TensorMap& outputs = on_gpu ? gpu_outputs : ref;
  for (TensorId id : g.outputs()) {
    const TensorInfo& info = g.tensor(id);
    std::printf("   %-14s %-22s %s\n", info.name.c_str(), type_string(info).c_str(), stats_string(outputs.at(info.name)).c_str());
  }
  if (!o.save_outputs.empty()) save_outputs(g, outputs, o.save_outputs);
  return ok ? kOk : kDisagrees;
}

}  // namespace sinter::cli
