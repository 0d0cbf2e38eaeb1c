// Plan::describe and its text and JSON forms (`sinter inspect`, `sinter build`).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "plan/plan_state.hpp"

namespace sinter {
namespace {

using OJson = nlohmann::ordered_json;

std::string bytes_text(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int i = 0;
  while (b >= 1000 && i < 4) {
    b /= 1000;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.3g %s", b, units[i]);
  return buf;
}

// Text from a file (a bundle's producer, device, descriptions) made safe for a terminal: control
// characters (an escape sequence would drive it) written as \xNN.
std::string printable(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "\\x%02x", static_cast<unsigned>(c));
      out += code;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

TensorDescription tensor_description(const TensorInfo& t) { return {t.name, t.dtype, t.dims, t.strides}; }

KernelDescription kernel_description(const KernelRecord& k, const plan::Plan& p) {
  KernelDescription d;
  d.entry = k.entry;
  d.description = k.description;
  d.grid = k.grid;
  d.block = k.block;
  d.dynamic_shared_memory = k.dynamic_shared_memory;
  d.cluster = k.cluster;
  d.cooperative = k.cooperative;
  d.argument_bytes = k.args.size();
  d.pointers = k.pointers.size();
  d.tensor_maps = k.tensor_maps.size();
  d.cubin = k.cubin;
  if (auto it = p.blobs.find(k.cubin); it != p.blobs.end()) d.cubin_bytes = it->second.bytes.size();
  d.cache_key = k.cache_key;
  return d;
}

OJson tensor_json(const TensorDescription& t) {
  return OJson{{"name", t.name}, {"dtype", std::string(to_string(t.dtype))}, {"dims", t.dims}, {"strides", t.strides}};
}

}  // namespace

PlanDescription Plan::describe() const {
  const State& s = *state_;
  const plan::Plan& p = s.data;
  const Graph& g = p.graph;
  PlanDescription d;
  d.graph = g.name();
  d.nodes = g.nodes().size();
  d.producer = p.producer;
  d.arch = p.target.arch;
  d.device = p.target.device;
  d.sm_count = p.target.sm_count;
  for (TensorId t : g.inputs()) d.inputs.push_back(tensor_description(g.tensor(t)));
  for (TensorId t : g.outputs()) d.outputs.push_back(tensor_description(g.tensor(t)));
  d.memory = {p.memory.arena_bytes, p.memory.naive_bytes, p.memory.buffers.size(), p.workspace.offset,
              p.workspace.bytes, plan::device_bytes(p)};
  const fuse::Partition part = plan::plan_partition(p);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const plan::Step& st = p.steps[i];
    const fuse::Region& r = part.regions.at(st.region);
    StepDescription sd;
    sd.index = static_cast<int>(i);
    sd.kind = std::string(fuse::to_string(st.kind));
    sd.engine = st.engine;
    sd.candidate = st.candidate;
    sd.config = st.config;
    sd.description = st.description;
    sd.fallback = st.fallback;
    for (NodeId n : r.nodes()) sd.nodes.push_back(g.node(n).name);
    for (TensorId t : r.inputs) sd.inputs.push_back(g.tensor(t).name);
    for (TensorId t : r.outputs) sd.outputs.push_back(g.tensor(t).name);
    sd.workspace_offset = st.workspace_offset;
    sd.workspace_bytes = st.workspace_bytes;
    for (const KernelRecord& k : st.saved.kernels) sd.kernels.push_back(kernel_description(k, p));
    sd.vendor_config = st.saved.config_blob;
    sd.vendor_config_description = st.saved.config_description;
    sd.tuned_ms = st.tuned_ms;
    if (i < s.tuning.size()) {
      sd.from_timing_cache = s.tuning[i].from_timing_cache;
      for (const tune::CandidateTime& t : s.tuning[i].tried) {
        sd.tried.push_back({t.engine, t.config, t.description, t.median_ms, t.skipped});
      }
    }
    d.steps.push_back(std::move(sd));
  }
  for (const plan::MegakernelRecord& r : p.megakernels) {
    MegakernelDescription md{r.source_sha256, 0, r.megakernel_ms, r.steps_ms, r.steps_faster()};
    if (auto it = p.blobs.find(r.cubin); it != p.blobs.end()) md.cubin_bytes = it->second.bytes.size();
    d.megakernels.push_back(std::move(md));
  }
  d.blobs = p.blobs.size();
  for (const auto& [key, b] : p.blobs) d.blob_bytes += b.bytes.size();
  d.compile = s.compile;
  return d;
}

std::string to_text(const PlanDescription& d) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "plan of graph '%s' (%zu nodes), built by %s\n", printable(d.graph).c_str(), d.nodes,
                printable(d.producer).c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "target: %s, %s, %d SMs\n", printable(d.arch).c_str(), printable(d.device).c_str(),
                d.sm_count);
  out += buf;
  std::snprintf(buf, sizeof buf,
                "memory: arena %s (%s without reuse, %zu buffers), workspace %s at offset %llu; one allocation of %s\n",
                bytes_text(double(d.memory.arena_bytes)).c_str(), bytes_text(double(d.memory.naive_bytes)).c_str(),
                d.memory.buffers, bytes_text(double(d.memory.workspace_bytes)).c_str(),
                static_cast<unsigned long long>(d.memory.workspace_offset), bytes_text(double(d.memory.device_bytes)).c_str());
  out += buf;
  for (const StepDescription& s : d.steps) {
    std::snprintf(buf, sizeof buf, "step %d: %s -> %s; %s [%s]\n", s.index, s.kind.c_str(),
                  printable(joined(s.outputs)).c_str(), printable(s.engine).c_str(), printable(s.config).c_str());
    out += buf;
    out += "   " + printable(s.description) + "\n";
    if (!s.fallback.empty()) out += "   fallback: " + printable(s.fallback) + "\n";
    if (s.tuned_ms >= 0) {
      std::snprintf(buf, sizeof buf, "   tuned: %.4f ms%s\n", s.tuned_ms, s.from_timing_cache ? " (timing cache)" : "");
      out += buf;
    }
    for (const CandidateTiming& t : s.tried) {
      if (t.median_ms >= 0) {
        std::snprintf(buf, sizeof buf, "     %8.4f ms  %s [%s]\n", t.median_ms, t.engine.c_str(), printable(t.config).c_str());
      } else {
        std::snprintf(buf, sizeof buf, "     skipped     %s [%s]: %s\n", t.engine.c_str(), printable(t.config).c_str(),
                      printable(t.skipped).c_str());
      }
      out += buf;
    }
    if (s.workspace_bytes) {
      std::snprintf(buf, sizeof buf, "   workspace %s at %llu\n", bytes_text(double(s.workspace_bytes)).c_str(),
                    static_cast<unsigned long long>(s.workspace_offset));
      out += buf;
    }
    if (!s.vendor_config.empty()) {
      out += "   vendor config " + printable(s.vendor_config.substr(0, 16)) + "... (" +
             printable(s.vendor_config_description) + ")\n";
    }
    for (const KernelDescription& k : s.kernels) {
      std::snprintf(buf, sizeof buf, "   kernel %s: grid [%u, %u, %u] block [%u, %u, %u] smem %u%s, %zu arg bytes, %zu pointers\n",
                    printable(k.entry).c_str(), k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                    k.dynamic_shared_memory, k.cooperative ? " cooperative" : "", k.argument_bytes, k.pointers);
      out += buf;
      out += "      " + printable(k.description) + "\n      cubin " + printable(k.cubin) + " (" +
             bytes_text(double(k.cubin_bytes)) + "), cache key " +
             (k.cache_key.empty() ? "(unknown)" : printable(k.cache_key)) + "\n";
    }
  }
  if (!d.megakernels.empty()) out += "megakernels (mode mega loads them with no compilation):\n";
  for (const MegakernelDescription& m : d.megakernels) {
    std::snprintf(buf, sizeof buf, "   source %.16s..., cubin %s", printable(m.source_sha256).c_str(),
                  bytes_text(double(m.cubin_bytes)).c_str());
    out += buf;
    if (m.megakernel_ms >= 0 && m.steps_ms >= 0) {
      std::snprintf(buf, sizeof buf, "; a segment %.4f ms as the megakernel, %.4f ms as its steps: %s\n",
                    m.megakernel_ms, m.steps_ms, m.steps_faster ? "runs as its steps" : "runs as the megakernel");
      out += buf;
    } else {
      out += "; not timed: runs as the megakernel\n";
    }
  }
  std::snprintf(buf, sizeof buf, "blobs: %zu (%s)\n", d.blobs, bytes_text(double(d.blob_bytes)).c_str());
  out += buf;
  if (d.compile) {
    out += "compiled: ";
    std::string passes;
    for (const auto& [pass, ms] : d.compile->pass_ms) {
      std::snprintf(buf, sizeof buf, "%s %.1f ms", pass.c_str(), ms);
      passes += (passes.empty() ? "" : ", ") + std::string(buf);
    }
    out += passes + "\n   " + d.compile->kernel_cache + "\n";
    if (d.compile->candidates_timed > 0 || d.compile->timing_cache_hits > 0) {
      std::snprintf(buf, sizeof buf, "   tuning: %d candidates timed, %d regions from the timing cache%s%s\n",
                    d.compile->candidates_timed, d.compile->timing_cache_hits,
                    d.compile->timing_cache.empty() ? "" : " ", d.compile->timing_cache.c_str());
      out += buf;
    }
  }
  return out;
}

std::string to_json(const PlanDescription& d) {
  OJson j;
  j["graph"] = d.graph;
  j["nodes"] = d.nodes;
  j["producer"] = d.producer;
  j["arch"] = d.arch;
  j["device"] = d.device;
  j["sm_count"] = d.sm_count;
  j["inputs"] = OJson::array();
  for (const TensorDescription& t : d.inputs) j["inputs"].push_back(tensor_json(t));
  j["outputs"] = OJson::array();
  for (const TensorDescription& t : d.outputs) j["outputs"].push_back(tensor_json(t));
  j["memory"] = OJson{{"arena_bytes", d.memory.arena_bytes},         {"naive_bytes", d.memory.naive_bytes},
                      {"buffers", d.memory.buffers},                 {"workspace_offset", d.memory.workspace_offset},
                      {"workspace_bytes", d.memory.workspace_bytes}, {"device_bytes", d.memory.device_bytes}};
  j["steps"] = OJson::array();
  for (const StepDescription& s : d.steps) {
    OJson sj{{"index", s.index},     {"kind", s.kind},     {"engine", s.engine},           {"candidate", s.candidate},
             {"config", s.config},   {"description", s.description}, {"fallback", s.fallback},
             {"nodes", s.nodes},     {"inputs", s.inputs}, {"outputs", s.outputs},
             {"workspace_offset", s.workspace_offset},     {"workspace_bytes", s.workspace_bytes}};
    sj["kernels"] = OJson::array();
    for (const KernelDescription& k : s.kernels) {
      OJson kj{{"entry", k.entry},     {"description", k.description}, {"grid", k.grid},
               {"block", k.block},     {"dynamic_shared_memory", k.dynamic_shared_memory}};
      kj["cluster"] = k.cluster ? OJson(*k.cluster) : OJson(nullptr);
      kj["cooperative"] = k.cooperative;
      kj["argument_bytes"] = k.argument_bytes;
      kj["pointers"] = k.pointers;
      kj["tensor_maps"] = k.tensor_maps;
      kj["cubin"] = k.cubin;
      kj["cubin_bytes"] = k.cubin_bytes;
      kj["cache_key"] = k.cache_key;
      sj["kernels"].push_back(std::move(kj));
    }
    sj["vendor_config"] = s.vendor_config;
    sj["vendor_config_description"] = s.vendor_config_description;
    sj["tuned_ms"] = s.tuned_ms;
    sj["from_timing_cache"] = s.from_timing_cache;
    sj["tried"] = OJson::array();
    for (const CandidateTiming& t : s.tried) {
      sj["tried"].push_back(OJson{{"engine", t.engine}, {"config", t.config}, {"description", t.description},
                                  {"median_ms", t.median_ms}, {"skipped", t.skipped}});
    }
    j["steps"].push_back(std::move(sj));
  }
  j["megakernels"] = OJson::array();
  for (const MegakernelDescription& m : d.megakernels) {
    j["megakernels"].push_back(OJson{{"source_sha256", m.source_sha256}, {"cubin_bytes", m.cubin_bytes},
                                     {"megakernel_ms", m.megakernel_ms}, {"steps_ms", m.steps_ms},
                                     {"steps_faster", m.steps_faster}});
  }
  j["blobs"] = d.blobs;
  j["blob_bytes"] = d.blob_bytes;
  if (d.compile) {
    OJson passes = OJson::array();
    for (const auto& [pass, ms] : d.compile->pass_ms) passes.push_back(OJson{{"pass", pass}, {"ms", ms}});
    j["compile"] = OJson{{"passes", passes},
                         {"kernels_compiled", d.compile->kernels_compiled},
                         {"kernel_cache_hits", d.compile->kernel_cache_hits},
                         {"nvrtc_ms", d.compile->nvrtc_ms},
                         {"candidates_timed", d.compile->candidates_timed},
                         {"timing_cache_hits", d.compile->timing_cache_hits},
                         {"timing_cache", d.compile->timing_cache},
                         {"kernel_cache", d.compile->kernel_cache}};
  } else {
    j["compile"] = nullptr;
  }
  return j.dump(2);
}

}  // namespace sinter
