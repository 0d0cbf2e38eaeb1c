// What Sinter would do with a graph, without running it (sinter/explain.hpp): the partition, each
// engine's answer per region, the generated kernel sources.
#include "sinter/explain.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "engines/registry.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"

namespace sinter {
namespace {

using OJson = nlohmann::ordered_json;

std::vector<std::string> node_list(const Graph& g, const std::vector<NodeId>& ids) {
  std::vector<std::string> out;
  for (NodeId n : ids) out.push_back(g.node(n).name + ":" + std::string(to_string(g.node(n).op)));
  return out;
}

std::vector<std::string> tensor_names(const Graph& g, const std::vector<TensorId>& ids) {
  std::vector<std::string> out;
  for (TensorId t : ids) out.push_back(g.tensor(t).name);
  return out;
}

std::string joined(const std::vector<std::string>& v, const char* empty = "-") {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? empty : s;
}

// The GPU to ask, or an assumed H200 where there is none.
cuda::DeviceProperties target_device(int device, bool* assumed) {
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  *assumed = !gpu.available;
  if (gpu.available) return cuda::device_properties(device);
  cuda::DeviceProperties p = cuda::assumed_h200();
  p.name = "NVIDIA H200 (assumed: no GPU here: " + gpu.reason + ")";
  return p;
}

// "all_reduce sum over group 'tp' (world 4): 4096 B in, 6144 B sent per rank (ring)"
std::string describe_collective(const Graph& g, const Node& n) {
  const auto& at = std::get<CollectiveAttrs>(n.attrs);
  const TensorInfo& x = g.tensor(n.inputs[0]);
  std::string s(to_string(n.op));
  if (n.op != OpKind::all_gather) s += " " + std::string(to_string(at.reduce));
  if (n.op != OpKind::all_reduce) s += " along axis " + std::to_string(at.axis);
  const double in_bytes = static_cast<double>(num_elements(x.dims)) * static_cast<double>(dtype_size(x.dtype));
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.0f B in, %.0f B sent per rank (ring)", in_bytes, node_cost(g, n).comm_bytes);
  return s + " over group '" + at.group + "' (world " + std::to_string(at.world) + "): " + buf;
}

// Which engine runs a collective region and how, or why none can. The engines that take
// collectives decide from the graph alone, so no GPU is asked (an assumed H200 is described).
void collective_engine(const Graph& g, const fuse::Region& r, RegionDescription& rd) {
  static const cuda::DeviceProperties dev = cuda::assumed_h200();
  cuda::KernelCache cache("");
  const EngineContext ctx{cache, dev, {}, 1, {}};
  std::string why;
  for (const Engine* e : registered_engines()) {
    const Support s = e->supports(g, r, ctx);
    if (!s.ok) {
      why += (why.empty() ? "" : "; ") + std::string(e->name()) + ": " + s.reason;
      continue;
    }
    const std::vector<Candidate> c = e->candidates(g, r, ctx);
    rd.engine = std::string(e->name()) + (c.empty() ? "" : ": " + c.front().description);
    return;
  }
  rd.no_engine = why;
}

fuse::Partition partition(const Graph& graph, const FusionOptions& fusion, Graph& g) {
  g = graph;
  g.validate();
  fuse::Partition p = fuse::partition_graph(g, fusion);
  fuse::verify_partition(g, p);
  return p;
}

}  // namespace

PartitionDescription explain(const Graph& graph, const FusionOptions& fusion) {
  Graph g;
  const fuse::Partition p = partition(graph, fusion, g);
  PartitionDescription d;
  d.graph = g.name();
  d.nodes = g.nodes().size();
  for (const fuse::Region& r : p.regions) {
    RegionDescription rd;
    rd.index = r.id;
    rd.kind = std::string(fuse::to_string(r.kind));
    if (r.anchor >= 0) {
      rd.anchor = g.node(r.anchor).name;
      rd.anchor_op = std::string(to_string(g.node(r.anchor).op));
    }
    rd.iteration_shape = r.iteration_shape;
    rd.prologue = node_list(g, r.prologue);
    rd.epilogue = node_list(g, r.epilogue);
    for (const fuse::ExitReduce& e : r.reductions) {
      rd.reductions.push_back(g.node(e.node).name + ":" + std::string(to_string(g.node(e.node).op)) + " (" +
                              std::string(fuse::to_string(e.pattern)) + ")");
    }
    rd.constants = node_list(g, r.constants);
    rd.inputs = tensor_names(g, r.inputs);
    rd.outputs = tensor_names(g, r.outputs);
    if (r.kind == fuse::RegionKind::collective) {
      rd.collective = describe_collective(g, g.node(r.anchor));
      collective_engine(g, r, rd);
    }
    d.regions.push_back(std::move(rd));
  }
  for (const fuse::Boundary& b : p.boundaries) {
    d.boundaries.push_back({g.tensor(b.tensor).name, b.producer_region, b.consumer_region, b.reason});
  }
  return d;
}

std::string to_text(const PartitionDescription& d) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "graph '%s': %zu node%s in %zu region%s\n\n", d.graph.c_str(), d.nodes,
                d.nodes == 1 ? "" : "s", d.regions.size(), d.regions.size() == 1 ? "" : "s");
  out += buf;
  for (const RegionDescription& r : d.regions) {
    out += "region " + std::to_string(r.index) + ": " + r.kind;
    if (!r.anchor.empty()) out += " anchored on " + r.anchor + ":" + r.anchor_op;
    out += ", iterating over " + dims_to_string(r.iteration_shape) + "\n";
    if (!r.prologue.empty()) out += "  prologue:   " + joined(r.prologue) + "\n";
    if (!r.epilogue.empty()) out += "  epilogue:   " + joined(r.epilogue) + "\n";
    for (const std::string& e : r.reductions) out += "  reduction:  " + e + "\n";
    if (!r.constants.empty()) out += "  constants:  " + joined(r.constants) + "\n";
    if (!r.collective.empty()) out += "  exchange:   " + r.collective + "\n";
    out += "  reads:      " + joined(r.inputs) + "\n  stores:     " + joined(r.outputs) + "\n";
    if (!r.no_engine.empty()) out += "  engine:     none: " + r.no_engine + "\n";
    if (!r.engine.empty()) out += "  engine:     " + r.engine + "\n";
  }
  if (!d.boundaries.empty()) out += "\nboundaries:\n";
  for (const BoundaryDescription& b : d.boundaries) {
    out += "  '" + b.tensor + "': region " + std::to_string(b.producer) + " -> region " + std::to_string(b.consumer) +
           ": " + b.reason + "\n";
  }
  return out;
}

std::string to_json(const PartitionDescription& d) {
  OJson j{{"graph", d.graph}, {"nodes", d.nodes}};
  j["regions"] = OJson::array();
  for (const RegionDescription& r : d.regions) {
    j["regions"].push_back(OJson{{"index", r.index},         {"kind", r.kind},
                                 {"anchor", r.anchor},       {"anchor_op", r.anchor_op},
                                 {"iteration_shape", r.iteration_shape},
                                 {"prologue", r.prologue},   {"epilogue", r.epilogue},
                                 {"reductions", r.reductions}, {"constants", r.constants},
                                 {"inputs", r.inputs},       {"outputs", r.outputs},
                                 {"collective", r.collective}, {"engine", r.engine},
                                 {"no_engine", r.no_engine}});
  }
  j["boundaries"] = OJson::array();
  for (const BoundaryDescription& b : d.boundaries) {
    j["boundaries"].push_back(
        OJson{{"tensor", b.tensor}, {"producer", b.producer}, {"consumer", b.consumer}, {"reason", b.reason}});
  }
  return j.dump(2);
}

EngineReport list_engines(const Graph& graph, const EngineListOptions& options) {
  Graph g;
  const fuse::Partition p = partition(graph, options.fusion, g);
  EngineReport report;
  const cuda::DeviceProperties dev = target_device(options.device, &report.assumed);
  report.device = report.assumed ? dev.name : cuda::describe(dev);
  cuda::KernelCache cache("");  // memory only: listing compiles nothing
  std::vector<std::string> all;
  for (const Engine* e : registered_engines()) all.emplace_back(e->name());
  EngineContext ctx{cache, dev, all, options.max_vendor_candidates, {}};
  for (const fuse::Region& r : p.regions) {
    RegionEngines re;
    re.region = r.id;
    re.kind = std::string(fuse::to_string(r.kind));
    if (r.anchor >= 0) re.anchor = g.node(r.anchor).name;
    for (const Engine* e : registered_engines()) {
      EngineSupport es;
      es.engine = std::string(e->name());
      const Support s = e->supports(g, r, ctx);
      es.supported = s.ok;
      es.reason = s.reason;
      if (s.ok && report.assumed && !e->candidates_without_gpu()) {
        es.reason = "candidates need a GPU";
      } else if (s.ok) {
        try {
          for (const Candidate& c : e->candidates(g, r, ctx)) es.candidates.push_back({c.index, c.config, c.description});
          es.candidates_listed = true;
        } catch (const Error& err) {  // say so for this engine and region, and go on listing
          es.supported = false;
          es.reason = err.message();
        }
      }
      re.engines.push_back(std::move(es));
    }
    report.regions.push_back(std::move(re));
  }
  return report;
}

std::string to_text(const EngineReport& r) {
  std::string out = r.assumed ? "no GPU: candidates of our engines for an assumed H200; vendor candidates need a GPU\n"
                              : "device: " + r.device + "\n";
  for (const RegionEngines& re : r.regions) {
    out += "\nregion " + std::to_string(re.region) + ": " + re.kind + (re.anchor.empty() ? "" : " (" + re.anchor + ")") + "\n";
    for (const EngineSupport& e : re.engines) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "  %-9s ", e.engine.c_str());
      out += buf;
      if (!e.supported) {
        out += "unsupported: " + e.reason + "\n";
      } else if (!e.candidates_listed) {
        out += "supported; " + e.reason + "\n";
      } else {
        out += "supported, " + std::to_string(e.candidates.size()) + " candidate(s)\n";
        for (const CandidateDescription& c : e.candidates) {
          out += "    [" + std::to_string(c.rank) + "] " + c.description + "\n        config: " + c.config + "\n";
        }
      }
    }
  }
  return out;
}

std::string to_json(const EngineReport& r) {
  OJson j{{"device", r.device}, {"assumed", r.assumed}};
  j["regions"] = OJson::array();
  for (const RegionEngines& re : r.regions) {
    OJson engines = OJson::array();
    for (const EngineSupport& e : re.engines) {
      OJson cands = OJson::array();
      for (const CandidateDescription& c : e.candidates) {
        cands.push_back(OJson{{"rank", c.rank}, {"config", c.config}, {"description", c.description}});
      }
      engines.push_back(OJson{{"engine", e.engine},
                              {"supported", e.supported},
                              {"reason", e.reason},
                              {"candidates_listed", e.candidates_listed},
                              {"candidates", cands}});
    }
    j["regions"].push_back(OJson{{"region", re.region}, {"kind", re.kind}, {"anchor", re.anchor}, {"engines", engines}});
  }
  return j.dump(2);
}

std::vector<GeneratedKernel> generated_kernels(const Graph& graph, const FusionOptions& fusion, int device) {
  Graph g;
  const fuse::Partition p = partition(graph, fusion, g);
  bool assumed = false;
  const cuda::DeviceProperties dev = target_device(device, &assumed);
  cuda::KernelCache cache("");
  EngineContext ctx{cache, dev, {}, 1, {}};
  std::vector<GeneratedKernel> out;
  for (const fuse::Region& r : p.regions) {
    for (const Engine* e : registered_engines()) {
      int kernel = 0, last = -1;
      for (const Engine::GeneratedSource& s : e->generated_sources(g, r, ctx)) {
        kernel = s.candidate == last ? kernel + 1 : 0;
        last = s.candidate;
        out.push_back({r.id, s.candidate, kernel, std::string(e->name()), s.config, s.description, s.code});
      }
    }
  }
  return out;
}

}  // namespace sinter
