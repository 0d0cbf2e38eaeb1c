#include "tune/tuner.hpp"

#include <algorithm>
#include <cstdio>

#include "cuda/buffer.hpp"
#include "cuda/stream.hpp"
#include "cuda/timing.hpp"
#include "sinter/error.hpp"
#include "sinter/host_tensor.hpp"
#include "tune/tensor_buffers.hpp"

namespace sinter::tune {

namespace {

// The region's outputs as they are in `buffers` now.
std::vector<HostTensor> read_outputs(const Graph& g, const fuse::Region& r, const TensorBuffers& buffers) {
  std::vector<HostTensor> out;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const TensorInfo& info = g.tensor(r.outputs[i]);
    HostTensor h(info.dtype, info.dims, info.strides);
    buffers.outputs[i].copy_to_host(h.data(), std::min(h.storage_bytes(), buffers.outputs[i].size()));
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace

std::string output_disagreement(const Graph& g, const std::vector<TensorId>& tensors,
                                const std::vector<HostTensor>& got, const std::vector<HostTensor>& want,
                                const std::string& want_name) {
  if (got.size() != want.size() || got.size() != tensors.size()) {
    throw Error(ErrorCode::internal, "output_disagreement: output counts differ");
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].storage_bytes() == want[i].storage_bytes() &&
        std::equal(got[i].data(), got[i].data() + got[i].storage_bytes(), want[i].data())) {
      continue;
    }
    const double err = relative_l2_error(got[i], want[i]);
    const double tol = 2 * relative_l2_bound(g, tensors[i]);
    if (!(err <= tol)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "rel L2 %.3g > %.3g", err, tol);
      return "its output '" + g.tensor(tensors[i]).name + "' differs from " + want_name + "'s (" + buf + ")";
    }
  }
  return "";
}

namespace {

// Times one candidate: the median of `repeats` launches, or the reason it could not be timed.
// With `outputs`, also runs it once on the first input copy and returns what it wrote.
CandidateTime time_candidate(const Graph& g, const fuse::Region& r, const Engine& e,
                             const Candidate& c, EngineContext& ctx, const TensorBuffers& buffers,
                             const cuda::Stream& stream, const TuneOptions& o,
                             std::vector<HostTensor>* outputs) {
  CandidateTime t{std::string(e.name()), c.index, c.config, c.description, -1, ""};
  try {
    auto step = e.prepare(g, r, c, ctx);
    if (step->workspace_bytes() > o.max_workspace) {
      t.skipped = "needs " + std::to_string(step->workspace_bytes() >> 20) + " MiB of workspace";
      return t;
    }
    cuda::DeviceBuffer workspace(step->workspace_bytes());
    if (!workspace.empty()) workspace.memset(0);
    size_t copy = 0;
    for (int i = 0; i < o.warmup; ++i) step->launch(buffers.binding(copy++, workspace.data()), stream);
    stream.synchronize();
    // one call first: a candidate slower than the limit needs no more repeats
    auto timed_call = [&] { step->launch(buffers.binding(copy++, workspace.data()), stream); };
    std::vector<float> times = cuda::time_calls(stream, 1, timed_call);
    if (times.front() <= o.time_limit_ms && o.repeats > 1) {
      const std::vector<float> more = cuda::time_calls(stream, o.repeats - 1, timed_call);
      times.insert(times.end(), more.begin(), more.end());
    }
    std::sort(times.begin(), times.end());
    t.median_ms = times[times.size() / 2];
    if (outputs) {
      step->launch(buffers.binding(0, workspace.data()), stream);
      stream.synchronize();
      *outputs = read_outputs(g, r, buffers);
    }
  } catch (const Error& err) {
    t.skipped = err.message();
  }
  return t;
}

}  // namespace

std::vector<RegionCandidates> gather_candidates(const Graph& g, const fuse::Partition& p,
                                               std::span<const Engine* const> engines, const EngineContext& ctx,
                                               const TuneOptions& o) {
  std::vector<RegionCandidates> out;
  for (const fuse::Region& r : p.regions) {
    RegionCandidates rc;
    rc.region = r.id;
    for (const Engine* e : engines) {
      const Support s = e->supports(g, r, ctx);
      if (!s.ok) {
        rc.refusals.push_back({std::string(e->name()), s.reason});
        continue;
      }
      std::vector<Candidate> cands = e->candidates(g, r, ctx);
      if (cands.empty()) {
        rc.refusals.push_back({std::string(e->name()), "it offered no candidate for this region"});
        continue;
      }
      // an output that can share its input's memory runs nothing, and a collective runs only
      // where a runner has its communicator: nothing to time or beat
      if (!e->timed_when_tuning()) {
        rc.list.assign(1, {e, cands.front()});
        break;
      }
      const size_t keep = o.mode == TuneMode::exhaustive ? cands.size()
                          : o.mode == TuneMode::fast     ? std::min<size_t>(cands.size(), o.top_k)
                                                         : 1;
      if (o.mode == TuneMode::heuristic && (o.candidate >= 0 || !o.config.empty())) {
        for (const Candidate& c : cands) {
          if (o.config.empty() ? c.index == o.candidate : c.config == o.config) rc.list.push_back({e, c});
        }
        if (!o.config.empty() && rc.list.empty()) {
          std::string why;
          if (auto c = e->candidate_for_config(g, r, ctx, o.config, &why)) {
            rc.list.push_back({e, *c});
          } else {
            rc.forced_refusal = why;
          }
        }
        rc.forced = !rc.list.empty();
      }
      for (size_t i = 0; i < keep; ++i) rc.list.push_back({e, cands[i]});
      if (o.mode == TuneMode::heuristic) break;
    }
    if (rc.list.empty()) {
      std::string why;
      for (const auto& [e, reason] : rc.refusals) why += (why.empty() ? "" : "; ") + e + ": " + reason;
      throw Error(ErrorCode::unsupported, "region " + std::to_string(r.id) + " (" + std::string(to_string(r.kind)) +
                                              "): no engine supports it: " + why);
    }
    out.push_back(std::move(rc));
  }
  return out;
}

TuneReport tune(const Graph& g, const fuse::Partition& p, const std::vector<RegionCandidates>& candidates,
                EngineContext& ctx, TimingCache* cache, const DeviceKey& device, const TuneOptions& o) {
  TuneReport report;
  std::unique_ptr<cuda::Stream> stream;
  const int nregions = static_cast<int>(p.regions.size());
  for (const RegionCandidates& rc : candidates) {
    const fuse::Region& r = p.regions.at(rc.region);
    Choice choice;
    choice.region = r.id;
    const std::vector<std::pair<const Engine*, Candidate>>& all = rc.list;
    if (o.mode == TuneMode::heuristic || !all.front().first->timed_when_tuning()) {
      choice.engine = all.front().first;
      choice.candidate = all.front().second;
      report.choices.push_back(std::move(choice));
      continue;
    }
    const std::string key = region_key(g, r, device);
    if (const TimingEntry* hit = cache ? cache->find(key) : nullptr) {
      for (const auto& [e, c] : all) {
        // By config: the ranks of a newer Sinter may name other kernels.
        if (e->name() == hit->engine && c.config == hit->config) {
          choice.engine = e;
          choice.candidate = c;
          choice.median_ms = hit->median_ms;
          choice.from_cache = true;
          choice.tried = hit->tried;
        }
      }
      if (choice.engine) {
        ++report.cache_hits;
        report.choices.push_back(std::move(choice));
        continue;
      }
    }
    if (!stream) stream = std::make_unique<cuda::Stream>();
    const TensorBuffers buffers(g, r.inputs, r.outputs, ctx.device.l2_cache_bytes);
    double best = -1;
    std::string best_desc;
    std::vector<HostTensor> first_outputs;  // of the first candidate that ran
    std::string first_name;
    for (size_t i = 0; i < all.size(); ++i) {
      const auto& [e, c] = all[i];
      std::vector<HostTensor> outputs;
      CandidateTime t = time_candidate(g, r, *e, c, ctx, buffers, *stream, o, o.check_outputs ? &outputs : nullptr);
      ++report.timings;
      if (o.check_outputs && t.median_ms >= 0) {
        if (first_name.empty()) {
          first_outputs = std::move(outputs);
          first_name = t.engine + "[" + std::to_string(t.index) + "]";
        } else if (const std::string why = output_disagreement(g, r.outputs, outputs, first_outputs, first_name);
                   !why.empty()) {
          char ms[32];
          std::snprintf(ms, sizeof ms, "%.4f ms", t.median_ms);
          t.skipped = "wrong result: " + why + "; timed at " + ms;
          t.median_ms = -1;
        }
      }
      // Strictly faster wins, so ties keep the earlier engine and the lower index.
      if (t.median_ms >= 0 && (best < 0 || t.median_ms < best)) {
        best = t.median_ms;
        best_desc = t.engine + " " + t.description;
        choice.engine = e;
        choice.candidate = c;
        choice.median_ms = t.median_ms;
      }
      choice.tried.push_back(std::move(t));
      if (o.progress) {
        o.progress(r.id, nregions, static_cast<int>(i) + 1, static_cast<int>(all.size()), best_desc);
      }
    }
    if (!choice.engine) {
      std::string why;
      for (const CandidateTime& t : choice.tried) why += "; " + t.engine + "[" + std::to_string(t.index) + "]: " + t.skipped;
      throw Error(ErrorCode::unsupported,
                  "region " + std::to_string(r.id) + ": every candidate failed" + why);
    }
    if (cache) {
      cache->put(key, {std::string(choice.engine->name()), choice.candidate.index, choice.candidate.config,
                       choice.candidate.description, choice.median_ms, choice.tried});
    }
    report.choices.push_back(std::move(choice));
  }
  return report;
}

}  // namespace sinter::tune
