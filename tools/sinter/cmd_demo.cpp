// sinter demo: the main job. Runs every example graph end to end on whatever this machine has: on
// a GPU compiled into a plan, saved, loaded with no compilation, run on a stream and replayed as a
// CUDA graph, each result compared with the CPU reference; without a GPU, the CPU path.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "format.hpp"
#include "session.hpp"

namespace sinter::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Compile, run, save, load, replay: throws when a result disagrees with the reference.
TensorMap run_on_gpu(const Common& c, const Graph& g, const TensorMap& inputs, const TensorMap& ref) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  const Plan plan = compile(g, compile_options(c, {}));
  const double compile_ms = ms_since(t0);
  PlanSession stream(plan, runner_options(c, {"stream"}));
  const TensorMap outputs = stream.run(inputs);
  const Percentiles p = percentiles(stream.time(20, 3));
  const PlanDescription d = plan.describe();
  std::printf("   gpu: %zu steps compiled in %s, %s (median of 20); %s\n", d.steps.size(), human_ms(compile_ms).c_str(),
              human_ms(p.p50).c_str(), d.compile ? d.compile->kernel_cache.c_str() : "");
  for (const StepDescription& s : d.steps) {
    std::printf("     step %d %s [%s] %s\n", s.index, s.kind.c_str(), s.engine.c_str(), s.description.c_str());
  }
  if (!print_comparison(g, outputs, ref)) throw Error(ErrorCode::internal, "the GPU result differs from the CPU reference");
  // The shipping path: the plan saved, loaded (checked, no compilation) and replayed as a CUDA graph.
  const fs::path bundle = fs::temp_directory_path() / ("sinter_demo_" + std::to_string(::getpid()) + ".plan");
  plan.save(bundle.string());
  const auto l0 = std::chrono::steady_clock::now();
  const Plan loaded = Plan::load(bundle.string());
  PlanSession graph(loaded, runner_options(c, {"graph"}));
  const TensorMap replayed = graph.run(inputs);
  const double first_ms = ms_since(l0);
  std::printf("   plan: saved (%s), loaded with 0 compilations and replayed as a CUDA graph: load to first result %s\n",
              human_bytes(double(fs::file_size(bundle))).c_str(), human_ms(first_ms).c_str());
  fs::remove(bundle);
  if (!print_comparison(g, replayed, ref)) {
    throw Error(ErrorCode::internal, "the replayed plan differs from the CPU reference");
  }
  return outputs;
}

}  // namespace

int cmd_demo(const Common& c, const DemoOptions& o) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(o.examples_dir)) {
    throw Error(ErrorCode::io, "examples folder '" + o.examples_dir + "' " +
                                   (fs::exists(o.examples_dir) ? "is not a folder" : "does not exist"));
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(o.examples_dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error(ErrorCode::io, "no .json graphs in '" + o.examples_dir + "'");
  const GpuAvailability gpu = gpu_availability();
  if (gpu.available) {
    std::printf("GPU found (%s): compiling each example into a plan, running it and checking it against the CPU "
                "reference.\n\n", device_info(c.device).description.c_str());
  } else {
    std::printf("No GPU on this machine (%s): running the CPU reference path.\n\n", gpu.reason.c_str());
  }
  int failures = 0;
  for (const fs::path& file : files) {
    std::printf("== %s\n", file.filename().c_str());
    try {
      const Graph g = load_graph_file(file.string());
      const GraphCost cost = graph_cost(g);
      std::printf("   graph '%s': %zu nodes, %s, minimum traffic %s\n", g.name().c_str(), g.nodes().size(),
                  human_flops(cost.flops).c_str(), human_bytes(cost.min_bytes).c_str());
      // The file format must reproduce the graph exactly.
      const std::string text = save_graph_json(g);
      if (save_graph_json(load_graph_json(text, file.string())) != text) {
        throw Error(ErrorCode::internal, "JSON round trip changed the graph");
      }
      const TensorMap inputs = random_inputs(g, o.seed);
      const auto t0 = std::chrono::steady_clock::now();
      const TensorMap ref = run_reference(g, inputs);
      std::printf("   cpu reference: %s\n", human_ms(ms_since(t0)).c_str());
      const TensorMap outputs = gpu.available ? run_on_gpu(c, g, inputs, ref) : ref;
      for (TensorId id : g.outputs()) {
        const TensorInfo& info = g.tensor(id);
        if (tensor_stats(outputs.at(info.name)).nan_count) {
          throw Error(ErrorCode::internal, "output '" + info.name + "' has NaN values");
        }
        std::printf("   %-14s %-22s %s\n", info.name.c_str(), type_string(info).c_str(),
                    stats_string(outputs.at(info.name)).c_str());
      }
      std::printf("   ok\n");
    } catch (const Error& e) {
      std::printf("   FAILED: %s\n", e.what());
      ++failures;
    } catch (const std::exception& e) {  // one example's failure never ends the demo
      std::printf("   FAILED: internal error: %s\n", e.what());
      ++failures;
    }
  }
  std::printf("\n%zu example(s), %d failed\n", files.size(), failures);
  return failures == 0 ? kOk : kDisagrees;
}

}  // namespace sinter::cli
