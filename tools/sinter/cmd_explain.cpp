// sinter explain FILE: the fused regions and the reason for every region boundary; with
// --kernels DIR, the CUDA source our code generators write for every candidate; with --mega, the
// megakernel segments of the graph's plan (compiled now, heuristic tuning) or a bundle's.
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "format.hpp"
#include "mega_explain.hpp"
#include "session.hpp"
#include "sinter/error.hpp"
#include "sinter/explain.hpp"
#include "sinter/json.hpp"

namespace sinter::cli {
namespace {

void write_kernels(const Graph& g, const FusionOptions& fusion, int device, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::io, "cannot create folder '" + dir + "': " + ec.message());
  for (const GeneratedKernel& k : generated_kernels(g, fusion, device)) {
    const std::string path = dir + "/region" + std::to_string(k.region) + "_v" + std::to_string(k.candidate) + "_" +
                             std::to_string(k.kernel) + ".cu";
    write_file(path, "// " + k.description + "\n// config: " + k.config + "\n" + k.source);
    std::printf("wrote %s: %s\n", path.c_str(), k.description.c_str());
  }
}

int explain_plan_mega(const Common& c, const ExplainOptions& o) {
  require_gpu("explain --mega");
  if ((o.no_fusion || o.unfolded_norms) && is_plan_bundle_file(o.file)) {
    throw Error(ErrorCode::invalid_argument, std::string(o.no_fusion ? "--no-fusion" : "--unfolded-norms") +
                                                 " compiles a graph file; '" + o.file + "' is a plan bundle");
  }
  const LoadedPlan loaded = plan_from_file(c, o.file, {"heuristic", "auto", o.no_fusion, false, false, o.unfolded_norms});
  return explain_mega(c, loaded.plan, {o.json, o.dot_file});
}

}  // namespace

int cmd_explain(const Common& c, const ExplainOptions& o) {
  if (o.mega) return explain_plan_mega(c, o);
  const Graph g = load_graph_file(o.file);
  FusionOptions fusion = o.no_fusion ? FusionOptions::none() : FusionOptions{};
  if (o.unfolded_norms) fusion.fold_norms_into_matmuls = false;
  const PartitionDescription d = explain(g, fusion);
  std::printf("%s", (o.json ? to_json(d) + "\n" : to_text(d)).c_str());
  if (!o.kernels_dir.empty()) {
    if (!o.json) std::printf("\n");
    write_kernels(g, fusion, c.device, o.kernels_dir);
  }
  return kOk;
}

}  // namespace sinter::cli
