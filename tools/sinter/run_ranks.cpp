// sinter run of one rank's program: a graph whose collectives run among W > 1 ranks of one group
// (a tensor-parallel rank of examples/tensor_parallel/, say). Every rank runs the same graph on its
// own inputs (seeded seed + rank); the CPU reference runs the W ranks together
// (run_reference_ranks); on the GPU they run as W virtual ranks of one GPU
// (Communicator::create_virtual), each a megakernel on its share of the SMs, enqueued together,
// each rank's outputs compared with its reference.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "commands.hpp"
#include "format.hpp"
#include "mega_format.hpp"
#include "npy.hpp"
#include "session.hpp"

namespace sinter::cli {
namespace {

// The slowest rank's median.
double slowest_median(const std::vector<std::vector<float>>& ms) {
  double slowest = 0;
  for (const std::vector<float>& m : ms) slowest = std::max(slowest, percentiles(m).p50);
  return slowest;
}

}  // namespace

int graph_world(const Graph& g, std::string* group) {
  std::map<std::string, int64_t> worlds;
  for (const Node& n : g.nodes()) {
    if (const auto* at = std::get_if<CollectiveAttrs>(&n.attrs)) {
      if (at->world > 1) worlds[at->group] = at->world;
    }
  }
  if (worlds.empty()) return 1;
  if (worlds.size() > 1) {
    std::string names;
    for (const auto& [name, world] : worlds) names += (names.empty() ? "'" : ", '") + name + "' (world " + std::to_string(world) + ")";
    throw Error(ErrorCode::unsupported, "run: graph '" + g.name() + "' has collectives of several groups, " + names +
                                            "; `sinter run` runs the ranks of one group");
  }
  if (group) *group = worlds.begin()->first;
  return static_cast<int>(worlds.begin()->second);
}

int run_ranks(const Common& c, const RunOptions& o, const RunnerOptions& runner_opts, const Graph& g,
              const Plan* plan, int world, const std::string& group, const std::string& plan_note) {
  if (!o.load_inputs.empty()) {
    throw Error(ErrorCode::invalid_argument, "--load-inputs: graph '" + g.name() + "' is one rank's program of " +
                                                 std::to_string(world) + " (group '" + group +
                                                 "'); its ranks take seeded random inputs (seed + rank)");
  }
  std::printf("graph '%s': %zu nodes; one rank's program of group '%s', world %d; inputs: seeded random, rank r "
              "seed %llu + r\n",
              g.name().c_str(), g.nodes().size(), group.c_str(), world, static_cast<unsigned long long>(o.seed));
  std::vector<TensorMap> inputs;
  for (int r = 0; r < world; ++r) inputs.push_back(random_inputs(g, o.seed + static_cast<uint64_t>(r)));
  const auto r0 = std::chrono::steady_clock::now();
  const std::vector<TensorMap> ref = run_reference_ranks(std::vector<Graph>(world, g), inputs);
  const double ref_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count();
  std::vector<TensorMap> outputs = ref;
  bool ok = true;
  if (plan) {
    const std::vector<Communicator> comms = Communicator::create_virtual(world, c.device);
    const int sms = device_info(c.device).sm_count;
    // every rank's runner before any enqueue (docs/multi-gpu.md), then all enqueued before any wait
    std::vector<std::unique_ptr<PlanSession>> ranks;
    std::vector<PlanSession*> sessions;
    for (int r = 0; r < world; ++r) {
      RunnerOptions ro = runner_opts;
      ro.communicators[group] = comms[r];
      ro.mega.sm_count = sms / world;
      ranks.push_back(std::make_unique<PlanSession>(*plan, ro));
      sessions.push_back(ranks.back().get());
    }
    // every rank staged before any megakernel runs: a rank's copies and fills need no SMs that a
    // waiting megakernel holds
    for (int r = 0; r < world; ++r) ranks[r]->stage(inputs[r]);
    for (int r = 0; r < world; ++r) ranks[r]->enqueue();
    for (int r = 0; r < world; ++r) outputs[r] = ranks[r]->finish();
    std::printf("device: %s\n   %d virtual ranks on GPU %d, each a megakernel on %d of its %d SMs\n",
                device_info(c.device).description.c_str(), world, c.device, sms / world, sms);
    if (!plan_note.empty()) std::printf("   %s\n", plan_note.c_str());
    std::printf("   megakernel: %s\n", mega_overview(ranks[0]->runner().mega_description()).c_str());
    std::printf("   gpu time %s (every rank enqueued together; the slowest rank's median of %d); cpu reference "
                "of the ranks %s\n",
                human_ms(slowest_median(time_together(sessions, o.iters, 5))).c_str(), o.iters,
                human_ms(ref_ms).c_str());
    for (int r = 0; r < world; ++r) {
      std::printf("   rank %d:\n", r);
      ok = print_comparison(g, outputs[r], ref[r]) && ok;
    }
  } else {
    std::printf("device: cpu (reference executor of the %d ranks, float64 accumulation), %s\n", world,
                human_ms(ref_ms).c_str());
  }
  for (int r = 0; r < world; ++r) {
    std::printf("   rank %d\n", r);
    for (TensorId id : g.outputs()) {
      const TensorInfo& info = g.tensor(id);
      std::printf("   %-14s %-22s %s\n", info.name.c_str(), type_string(info).c_str(),
                  stats_string(outputs[r].at(info.name)).c_str());
    }
    if (!o.save_outputs.empty()) {
      const std::string folder = o.save_outputs + "/rank" + std::to_string(r);
      std::error_code ec;
      std::filesystem::create_directories(folder, ec);
      if (ec) throw Error(ErrorCode::io, "cannot create folder '" + folder + "': " + ec.message());
      for (TensorId id : g.outputs()) {
        const std::string path = folder + "/" + npy_file_name(g.tensor(id).name);
        write_npy(outputs[r].at(g.tensor(id).name), path);
        std::printf("wrote %s\n", path.c_str());
      }
    }
  }
  return ok ? kOk : kDisagrees;
}

}  // namespace sinter::cli
