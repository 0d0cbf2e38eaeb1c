// sinter run FILE: seeded random inputs, the CPU reference, output statistics.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "format.hpp"
#include "gpu_probe.hpp"
#include "npy.hpp"
#include "sinter/error.hpp"
#include "sinter/json.hpp"
#include "sinter/reference.hpp"

namespace sinter::cli {

int cmd_run(const RunOptions& o) {
  if (o.device != "auto" && o.device != "cpu" && o.device != "gpu") {
    throw Error(ErrorCode::invalid_argument,
                "--device must be auto, cpu or gpu; found '" + o.device + "'");
  }
  const Graph g = load_graph_file(o.file);
  if (o.device == "gpu") {
    const GpuProbe gpu = probe_gpu();
    throw Error(ErrorCode::unsupported,
                "--device gpu: this build of sinter has no GPU executor yet (" +
                    (gpu.available ? "GPU found: " + gpu.description : gpu.description) +
                    "); use --device cpu");
  }
  std::printf("graph '%s': %zu nodes; inputs: seeded random (seed %llu), uniform in [-1, 1)\n",
              g.name().c_str(), g.nodes().size(), static_cast<unsigned long long>(o.seed));
  const TensorMap inputs = random_inputs(g, o.seed);
  const auto t0 = std::chrono::steady_clock::now();
  const TensorMap outputs = run_reference(g, inputs);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("device: cpu (reference executor, float64 accumulation), %s\n",
              human_ms(ms).c_str());
  for (TensorId id : g.outputs()) {
    const TensorInfo& info = g.tensor(id);
    const HostTensor& t = outputs.at(info.name);
    std::printf("  %-16s %-22s %s\n", info.name.c_str(), type_string(info).c_str(),
                stats_string(t).c_str());
  }
  if (!o.save_outputs.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.save_outputs, ec);
    if (ec) {
      throw Error(ErrorCode::io, "cannot create folder '" + o.save_outputs + "': " + ec.message());
    }
    for (TensorId id : g.outputs()) {
      const std::string& name = g.tensor(id).name;
      const std::string path = o.save_outputs + "/" + name + ".npy";
      write_npy(outputs.at(name), path);
      std::printf("wrote %s\n", path.c_str());
    }
  }
  return 0;
}

}  // namespace sinter::cli
