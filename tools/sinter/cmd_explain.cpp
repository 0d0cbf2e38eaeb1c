// sinter explain FILE: the fused regions and the reason for every region boundary; with
// --kernels DIR, the CUDA source our code generators write for every candidate.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "commands.hpp"
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
    std::ofstream f(path);
    f << "// " << k.description << "\n// config: " << k.config << "\n" << k.source;
    if (!f) throw Error(ErrorCode::io, "cannot write '" + path + "': " + std::strerror(errno));
    std::printf("wrote %s: %s\n", path.c_str(), k.description.c_str());
  }
}

}  // namespace

int cmd_explain(const Common& c, const ExplainOptions& o) {
  const Graph g = load_graph_file(o.file);
  const FusionOptions fusion = o.no_fusion ? FusionOptions::none() : FusionOptions{};
  const PartitionDescription d = explain(g, fusion);
  std::printf("%s", (o.json ? to_json(d) + "\n" : to_text(d)).c_str());
  if (!o.kernels_dir.empty()) {
    if (!o.json) std::printf("\n");
    write_kernels(g, fusion, c.device, o.kernels_dir);
  }
  return kOk;
}

}  // namespace sinter::cli
