// Sinter from a C++ program of one's own, through the public API only: compile a graph, save the
// plan, load it back (no compilation), and run it on device memory this program allocates, on a
// stream it owns; then check every output against Sinter's CPU reference.
//
//   sinter_cpp_runtime GRAPH.json [PLAN]
//
// Exit code 0 when every output is within its error bound, 1 on an error, 3 when an output is not.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <string>

#include <sinter/sinter.hpp>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw sinter::Error(sinter::ErrorCode::cuda, std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s GRAPH.json [PLAN]\n", argv[0]);
    return 2;
  }
  const std::string plan_file = argc > 2 ? argv[2] : "cpp_runtime.plan";
  try {
    const sinter::Graph graph = sinter::load_graph_file(argv[1]);
    if (!sinter::gpu_availability().available) {
      std::printf("no GPU here (%s): nothing to run\n", sinter::gpu_availability().reason.c_str());
      return 0;
    }

    // Compile once and ship the plan; load it where it runs.
    sinter::CompileOptions options;
    options.on_log = [](sinter::LogSeverity s, std::string_view m) {
      if (s <= sinter::LogSeverity::warning) std::fprintf(stderr, "sinter: %.*s\n", int(m.size()), m.data());
    };
    sinter::compile(graph, options).save(plan_file);
    const sinter::Plan plan = sinter::Plan::load(plan_file);
    sinter::Runner runner(plan);

    // The program's own memory and stream.
    cudaStream_t stream = nullptr;
    check(cudaStreamCreate(&stream), "cudaStreamCreate");
    const sinter::TensorMap inputs = sinter::random_inputs(graph, /*seed=*/42);
    std::map<std::string, void*> device;
    for (const sinter::TensorDescription& t : plan.describe().inputs) {
      const sinter::HostTensor& host = inputs.at(t.name);
      check(cudaMalloc(&device[t.name], host.storage_bytes()), "cudaMalloc");
      check(cudaMemcpyAsync(device[t.name], host.data(), host.storage_bytes(), cudaMemcpyHostToDevice, stream), "copy in");
      runner.set_tensor_address(t.name, device[t.name]);
    }
    std::map<std::string, sinter::HostTensor> outputs;
    for (const sinter::TensorDescription& t : plan.describe().outputs) {
      sinter::HostTensor host(t.dtype, t.dims);
      check(cudaMalloc(&device[t.name], host.storage_bytes()), "cudaMalloc");
      runner.set_tensor_address(t.name, device[t.name]);
      outputs.emplace(t.name, std::move(host));
    }
    runner.enqueue(stream);
    for (auto& [name, host] : outputs) {
      check(cudaMemcpyAsync(host.data(), device[name], host.storage_bytes(), cudaMemcpyDeviceToHost, stream), "copy out");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

    const sinter::TensorMap want = sinter::run_reference(graph, inputs);
    bool ok = true;
    std::printf("%s on %s: %zu steps, plan %s\n", graph.name().c_str(), sinter::device_info(0).name.c_str(),
                plan.describe().steps.size(), plan_file.c_str());
    for (sinter::TensorId id : graph.outputs()) {
      const std::string& name = graph.tensor(id).name;
      const double err = sinter::relative_l2_error(outputs.at(name), want.at(name));
      const double bound = sinter::relative_l2_bound(graph, id);
      ok = ok && err <= bound;
      std::printf("  %-12s rel L2 vs the CPU reference %.3g (bound %.3g) %s\n", name.c_str(), err, bound,
                  err <= bound ? "ok" : "FAIL");
    }
    for (auto& [name, p] : device) cudaFree(p);
    cudaStreamDestroy(stream);
    return ok ? 0 : 3;
  } catch (const sinter::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
