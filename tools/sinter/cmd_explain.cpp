// sinter explain FILE: the fused regions and the reason for every region boundary.
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "commands.hpp"
#include "format.hpp"
#include "engines/jit/codegen.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"
#include "sinter/json.hpp"

namespace sinter::cli {
namespace {

std::string names(const Graph& g, const std::vector<TensorId>& ids) {
  std::string s;
  for (TensorId t : ids) s += (s.empty() ? "" : ", ") + g.tensor(t).name;
  return s.empty() ? "-" : s;
}

std::string node_list(const Graph& g, const std::vector<NodeId>& ids) {
  std::string s;
  for (NodeId n : ids) {
    s += (s.empty() ? "" : ", ") + g.node(n).name + ":" + std::string(to_string(g.node(n).op));
  }
  return s;
}

// The generated source of every region, for an assumed H200: the code generators only need the
// architecture and the SM count, so this works without a GPU.
void write_kernels(const Graph& g, const fuse::Partition& p, const std::string& dir) {
  const cuda::DeviceProperties dev = cuda::assumed_h200();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::io, "cannot create folder '" + dir + "': " + ec.message());
  for (const fuse::Region& r : p.regions) {
    int v = 0;
    for (const auto& [config, rk] : jit::distinct_configs(g, r, dev)) {
    ++v;
    for (size_t k = 0; k < rk.kernels.size(); ++k) {
      const std::string path = dir + "/region" + std::to_string(r.id) + "_v" + std::to_string(v - 1) +
                               "_" + std::to_string(k) + ".cu";
      std::ofstream f(path);
      f << "// " << rk.kernels[k].description << "\n" << rk.kernels[k].source;
      if (!f) throw Error(ErrorCode::io, "cannot write '" + path + "': " + std::strerror(errno));
      std::printf("wrote %s: %s\n", path.c_str(), rk.kernels[k].description.c_str());
    }
    }
  }
}

}  // namespace

int cmd_explain(const ExplainOptions& o) {
  const Graph g = load_graph_file(o.file);
  fuse::FusionOptions fo;
  fo.fuse_epilogues = fo.fuse_prologues = fo.fuse_reductions = fo.fuse_pointwise = fo.fuse_layout_chains = !o.no_fusion;
  const fuse::Partition p = fuse::partition_graph(g, fo);
  fuse::verify_partition(g, p);
  std::printf("graph '%s': %zu node%s in %zu region%s\n\n", g.name().c_str(), g.nodes().size(),
              g.nodes().size() == 1 ? "" : "s", p.regions.size(), p.regions.size() == 1 ? "" : "s");
  for (const fuse::Region& r : p.regions) {
    std::printf("region %d: %s", r.id, std::string(to_string(r.kind)).c_str());
    if (r.anchor >= 0) {
      std::printf(" anchored on %s:%s", g.node(r.anchor).name.c_str(),
                  std::string(to_string(g.node(r.anchor).op)).c_str());
    }
    std::printf(", iterating over %s\n", dims_to_string(r.iteration_shape).c_str());
    if (!r.prologue.empty()) std::printf("  prologue:   %s\n", node_list(g, r.prologue).c_str());
    if (!r.epilogue.empty()) std::printf("  epilogue:   %s\n", node_list(g, r.epilogue).c_str());
    for (const fuse::ExitReduce& e : r.reductions) {
      std::printf("  reduction:  %s:%s (%s)\n", g.node(e.node).name.c_str(),
                  std::string(to_string(g.node(e.node).op)).c_str(),
                  std::string(to_string(e.pattern)).c_str());
    }
    if (!r.constants.empty()) std::printf("  constants:  %s\n", node_list(g, r.constants).c_str());
    std::printf("  reads:      %s\n  stores:     %s\n", names(g, r.inputs).c_str(),
                names(g, r.outputs).c_str());
  }
  if (!p.boundaries.empty()) std::printf("\nboundaries:\n");
  for (const fuse::Boundary& b : p.boundaries) {
    std::printf("  '%s': region %d -> region %d: %s\n", g.tensor(b.tensor).name.c_str(),
                b.producer_region, b.consumer_region, b.reason.c_str());
  }
  if (!o.kernels_dir.empty()) {
    std::printf("\n");
    write_kernels(g, p, o.kernels_dir);
  }
  return 0;
}

}  // namespace sinter::cli
