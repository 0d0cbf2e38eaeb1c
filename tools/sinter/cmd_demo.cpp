// sinter demo: the main job. Runs every example graph end to end on whatever this machine has:
// on a GPU, fused and compiled, compared with the CPU reference; without one, the CPU path.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

#include "commands.hpp"
#include "cuda/device.hpp"
#include "format.hpp"
#include "gpu_run.hpp"
#include "plan/bundle.hpp"
#include "plan_source.hpp"
#include "plan_timing.hpp"
#include "sinter/error.hpp"
#include "sinter/json.hpp"
#include "sinter/reference.hpp"

namespace sinter::cli {

int cmd_demo(const DemoOptions& o) {
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

  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  if (gpu.available) {
    std::printf("GPU found: running each example fused on the GPU and checking it against the CPU "
                "reference.\n\n");
  } else {
    std::printf("No GPU on this machine (%s): running the CPU reference path.\n\n",
                gpu.reason.c_str());
  }
  int failures = 0;
  for (const fs::path& file : files) {
    std::printf("== %s\n", file.filename().c_str());
    try {
      const Graph g = load_graph_file(file.string());
      const GraphCost cost = graph_cost(g);
      std::printf("   graph '%s': %zu nodes, %s, minimum traffic %s\n", g.name().c_str(),
                  g.nodes().size(), human_flops(cost.flops).c_str(),
                  human_bytes(cost.min_bytes).c_str());
      // The file format must reproduce the graph exactly.
      const std::string text = save_graph_json(g);
      if (save_graph_json(load_graph_json(text, file.string())) != text) {
        throw Error(ErrorCode::internal, "JSON round trip changed the graph");
      }
      const TensorMap inputs = random_inputs(g, o.seed);
      const auto t0 = std::chrono::steady_clock::now();
      const TensorMap ref = run_reference(g, inputs);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("   cpu reference: %s\n", human_ms(ms).c_str());
      const TensorMap* outputs = &ref;
      GpuRunReport rep;
      if (gpu.available) {
        rep = run_on_gpu(g, inputs, 20);
        outputs = &rep.outputs;
        std::printf("   %s\n   gpu: %d steps, %s (median of 20); %s\n%s", rep.device.c_str(),
                    rep.regions, human_ms(rep.median_ms).c_str(), rep.cache_stats.c_str(),
                    rep.plan.c_str());
        if (!print_comparison(g, rep.outputs, ref)) {
          throw Error(ErrorCode::internal, "the GPU result differs from the CPU reference");
        }
        // The shipping path: build the plan, save it, load it (checked, no compilation) and
        // replay it as a CUDA graph.
        const fs::path bundle = fs::temp_directory_path() / ("sinter_demo_" + std::to_string(::getpid()) + ".plan");
        plan::save_plan_bundle(build_plan_for_graph(g, {}).plan, bundle.string());
        const auto l0 = std::chrono::steady_clock::now();
        PlanRunner runner(plan::load_plan_bundle(bundle.string()), "graph");
        const TensorMap replayed = runner.run(inputs);
        const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - l0).count();
        std::printf("   plan: built, saved (%s), loaded with 0 compilations and replayed as a CUDA graph "
                    "(%zu nodes): load to first result %s\n",
                    human_bytes(double(fs::file_size(bundle))).c_str(), runner.graph()->node_count(),
                    human_ms(first_ms).c_str());
        fs::remove(bundle);
        if (!print_comparison(g, replayed, ref)) {
          throw Error(ErrorCode::internal, "the replayed plan differs from the CPU reference");
        }
      }
      for (TensorId id : g.outputs()) {
        const TensorInfo& info = g.tensor(id);
        const TensorStats s = tensor_stats(outputs->at(info.name));
        if (s.nan_count) {
          throw Error(ErrorCode::internal, "output '" + info.name + "' has NaN values");
        }
        std::printf("   %-14s %-22s %s\n", info.name.c_str(), type_string(info).c_str(),
                    stats_string(outputs->at(info.name)).c_str());
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
  return failures == 0 ? 0 : 1;
}

}  // namespace sinter::cli
