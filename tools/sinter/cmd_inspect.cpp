// sinter inspect PLAN: what a bundle holds, without a GPU: target, steps with their engines and
// candidates, the memory plan, every kernel with its launch shape, cubin and cache key, the blobs.
#include <cstdio>

#include "commands.hpp"
#include "format.hpp"
#include "plan/bundle.hpp"
#include "sinter/error.hpp"

namespace sinter::cli {

int cmd_inspect(const InspectOptions& o) {
  const plan::Plan p = plan::load_plan_bundle(o.file);  // fully checked
  const Graph& g = p.graph;
  std::printf("plan bundle %s: graph '%s' (%zu nodes), built by %s\n", o.file.c_str(), printable(g.name()).c_str(), g.nodes().size(),
              printable(p.producer).c_str());
  std::printf("target: %s, %s, %d SMs\n", printable(p.target.arch).c_str(), printable(p.target.device).c_str(), p.target.sm_count);
  std::printf("memory: arena %s (%s without reuse, %zu buffers), workspace %s at offset %llu; one allocation of %s\n",
              human_bytes(double(p.memory.arena_bytes)).c_str(), human_bytes(double(p.memory.naive_bytes)).c_str(),
              p.memory.buffers.size(), human_bytes(double(p.workspace.bytes)).c_str(),
              static_cast<unsigned long long>(p.workspace.offset), human_bytes(double(plan::device_bytes(p))).c_str());
  const fuse::Partition part = plan::plan_partition(p);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const plan::Step& s = p.steps[i];
    const fuse::Region& r = part.regions[s.region];
    std::string outs;
    for (TensorId t : r.outputs) outs += (outs.empty() ? "" : ", ") + g.tensor(t).name;
    std::printf("step %zu: %s region -> %s; engine %s, candidate %d: %s\n", i, std::string(fuse::to_string(s.kind)).c_str(),
                printable(outs).c_str(), printable(s.engine).c_str(), s.candidate, printable(s.description).c_str());
    if (s.workspace_bytes) {
      std::printf("   workspace %s at %llu\n", human_bytes(double(s.workspace_bytes)).c_str(),
                  static_cast<unsigned long long>(s.workspace_offset));
    }
    if (!s.config.empty()) std::printf("   vendor config %.16s... (%s)\n", printable(s.config).c_str(), printable(s.config_description).c_str());
    for (const plan::KernelRecord& k : s.kernels) {
      std::printf("   kernel %s: grid [%u, %u, %u] block [%u, %u, %u] smem %u%s, %zu arg bytes, %zu pointers\n", printable(k.entry).c_str(),
                  k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2], k.dynamic_shared_memory,
                  k.cooperative ? " cooperative" : "", k.args.size(), k.pointers.size());
      std::printf("      %s\n      cubin %s (%s), cache key %s\n", printable(k.description).c_str(), printable(k.cubin).c_str(),
                  human_bytes(double(p.blobs.at(k.cubin).bytes.size())).c_str(),
                  k.cache_key.empty() ? "(unknown)" : printable(k.cache_key).c_str());
    }
  }
  size_t bytes = 0;
  for (const auto& [key, b] : p.blobs) bytes += b.bytes.size();
  std::printf("blobs: %zu (%s)\n", p.blobs.size(), human_bytes(double(bytes)).c_str());
  return 0;
}

}  // namespace sinter::cli
