// sinter engines FILE: for every region, each engine's support (or its reason) and candidates.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "sinter/error.hpp"
#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/jit/jit_engine.hpp"
#include "fuse/region.hpp"
#include "sinter/json.hpp"

namespace sinter::cli {

int cmd_engines(const EnginesOptions& o) {
  const Graph g = load_graph_file(o.file);
  const fuse::Partition p = fuse::partition_graph(g);
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  cuda::DeviceProperties props;
  if (gpu.available) {
    props = cuda::device_properties(0);
    std::printf("device: %s\n", cuda::describe(props).c_str());
  } else {
    // Without a GPU our kernels can still be generated (for an H200, with its shared memory:
    // without it every Hopper GEMM showed as declined); vendor heuristics cannot run.
    props = cuda::assumed_h200();
    props.name = "NVIDIA H200 (assumed: no GPU here)";
    std::printf("no GPU (%s): jit candidates for an assumed H200; vendor candidates need a GPU\n",
                gpu.reason.c_str());
  }
  cuda::KernelCache cache("");
  EngineContext ctx{cache, props};
  jit::JitEngine jit;
  cublaslt::CublasLtEngine cublaslt(o.max_candidates);
  cudnn::CudnnEngine cudnn(o.max_candidates);
  const Engine* engines[] = {&cublaslt, &cudnn, &jit};
  std::printf("graph '%s': %zu region%s\n", g.name().c_str(), p.regions.size(), p.regions.size() == 1 ? "" : "s");
  for (const fuse::Region& r : p.regions) {
    std::printf("\nregion %d: %s", r.id, std::string(to_string(r.kind)).c_str());
    if (r.anchor >= 0) std::printf(" (%s)", g.node(r.anchor).name.c_str());
    std::printf("\n");
    if (r.kind == fuse::RegionKind::alias) {
      std::printf("  no kernel: the reshape (or unit-axis permute) shares its input's memory (a copy if the input is a view)\n");
    }
    for (const Engine* e : engines) {
      const Support s = e->supports(g, r);
      if (!s.ok) {
        std::printf("  %-9s unsupported: %s\n", std::string(e->name()).c_str(), s.reason.c_str());
        continue;
      }
      if (!gpu.available && e != &jit) {
        std::printf("  %-9s supported; candidates need a GPU\n", std::string(e->name()).c_str());
        continue;
      }
      std::vector<Candidate> cands;
      try {
        cands = e->candidates(g, r, ctx);
      } catch (const sinter::Error& err) {  // say so for this engine and region, and go on listing
        std::printf("  %-9s unsupported: %s\n", std::string(e->name()).c_str(), err.message().c_str());
        continue;
      }
      std::printf("  %-9s supported, %zu candidate(s)\n", std::string(e->name()).c_str(), cands.size());
      for (const Candidate& c : cands) std::printf("    [%d] %s\n", c.index, c.description.c_str());
    }
  }
  return 0;
}

}  // namespace sinter::cli
