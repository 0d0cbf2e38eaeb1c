// sinter run FILE: seeded random inputs; on the GPU (compared with the CPU reference) or on the
// CPU reference alone; output statistics, optionally the outputs as .npy files.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "cuda/device.hpp"
#include "format.hpp"
#include "gpu_run.hpp"
#include "npy.hpp"
#include "plan_source.hpp"
#include "sinter/error.hpp"
#include "sinter/json.hpp"
#include "sinter/reference.hpp"

namespace sinter::cli {

int cmd_run(const RunOptions& o) {
  if (o.device != "auto" && o.device != "cpu" && o.device != "gpu") {
    throw Error(ErrorCode::invalid_argument,
                "--device must be auto, cpu or gpu; found '" + o.device + "'");
  }
  if (!o.executor.empty() || is_plan_bundle_file(o.file)) {
    if (o.device == "cpu") throw Error(ErrorCode::invalid_argument, "a plan runs on the GPU; --device cpu takes a graph file without --executor");
    RunOptions with = o;
    if (with.executor.empty()) with.executor = "stream";
    return cmd_run_plan(with);
  }
  const Graph g = load_graph_file(o.file);
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  if (o.device == "gpu" && !gpu.available) {
    throw Error(ErrorCode::unsupported, "--device gpu: " + gpu.reason);
  }
  const bool on_gpu = o.device == "gpu" || (o.device == "auto" && gpu.available);
  std::printf("graph '%s': %zu nodes; inputs: seeded random (seed %llu): floats uniform in [-1, 1) (weights in "
              "+-1/sqrt(fan-in)), integers in [-8, 8], bools fair coin flips\n",
              g.name().c_str(), g.nodes().size(), static_cast<unsigned long long>(o.seed));
  const TensorMap inputs = random_inputs(g, o.seed);
  const auto t0 = std::chrono::steady_clock::now();
  const TensorMap ref = run_reference(g, inputs);
  const double ref_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const TensorMap* outputs = &ref;
  GpuRunReport rep;
  bool ok = true;
  if (on_gpu) {
    rep = run_on_gpu(g, inputs, o.iters, o.engine, o.tune);
    outputs = &rep.outputs;
    std::printf("device: %s\n   %d steps:\n%s   %s\n   gpu time %s (median of %d runs); cpu reference %s\n",
                rep.device.c_str(), rep.regions, rep.plan.c_str(), rep.cache_stats.c_str(),
                human_ms(rep.median_ms).c_str(), o.iters, human_ms(ref_ms).c_str());
    if (!rep.tuning.empty()) std::printf("   tuning: %s\n", rep.tuning.c_str());
    ok = print_comparison(g, rep.outputs, ref);
  } else {
    std::printf("device: cpu (reference executor, float64 accumulation), %s\n", human_ms(ref_ms).c_str());
  }
  for (TensorId id : g.outputs()) {
    const TensorInfo& info = g.tensor(id);
    std::printf("   %-14s %-22s %s\n", info.name.c_str(), type_string(info).c_str(),
                stats_string(outputs->at(info.name)).c_str());
  }
  if (!o.save_outputs.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.save_outputs, ec);
    if (ec) {
      throw Error(ErrorCode::io, "cannot create folder '" + o.save_outputs + "': " + ec.message());
    }
    for (TensorId id : g.outputs()) {
      const std::string& name = g.tensor(id).name;
      const std::string path = o.save_outputs + "/" + npy_file_name(name);
      write_npy(outputs->at(name), path);
      std::printf("wrote %s\n", path.c_str());
    }
  }
  return ok ? 0 : 2;
}

}  // namespace sinter::cli
