#include "sinter/mega_trace.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "sinter/error.hpp"

namespace sinter {
namespace {

using OJson = nlohmann::ordered_json;

// A task the trace holds a record of: a launch that stopped early leaves stale or empty records.
bool ran(const MegaTaskEvent& e) { return e.start_ns != 0 && e.end_ns >= e.start_ns; }

void check_segment(const MegaDescription& d, const MegaTaskEvent& e, size_t index) {
  if (e.segment < 0 || static_cast<size_t>(e.segment) >= d.segments.size()) {
    throw Error(ErrorCode::invalid_argument, "mega trace: event " + std::to_string(index) + " names segment " +
                                                 std::to_string(e.segment) + "; the description has " +
                                                 std::to_string(d.segments.size()));
  }
}

std::string segment_name(const MegaDescription& d, int segment) {
  const std::vector<int>& steps = d.segments[segment].steps;
  std::string name = "segment " + std::to_string(segment);
  if (steps.empty()) return name;
  if (steps.size() == 1) return name + ": step " + std::to_string(steps.front());
  return name + ": steps " + std::to_string(steps.front()) + "-" + std::to_string(steps.back());
}

double us_between(uint64_t from_ns, uint64_t to_ns) { return static_cast<double>(to_ns - from_ns) / 1000.0; }

OJson metadata(const char* what, int pid, int tid, OJson args) {
  return OJson{{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

}  // namespace

std::string mega_trace_json(const MegaDescription& d, const std::vector<MegaTaskEvent>& events) {
  uint64_t first = UINT64_MAX;
  std::map<int, std::map<int, int>> sm_of;  // segment -> CTA -> SM
  for (size_t i = 0; i < events.size(); ++i) {
    const MegaTaskEvent& e = events[i];
    check_segment(d, e, i);
    if (!ran(e)) continue;
    first = std::min(first, e.start_ns);
    sm_of[e.segment][e.cta] = e.sm;
  }
  OJson list = OJson::array();
  for (const auto& [segment, ctas] : sm_of) {
    list.push_back(metadata("process_name", segment, 0, {{"name", segment_name(d, segment)}}));
    list.push_back(metadata("process_sort_index", segment, 0, {{"sort_index", segment}}));
    for (const auto& [cta, sm] : ctas) {
      list.push_back(
          metadata("thread_name", segment, cta, {{"name", "CTA " + std::to_string(cta) + " on SM " + std::to_string(sm)}}));
      list.push_back(metadata("thread_sort_index", segment, cta, {{"sort_index", cta}}));
    }
  }
  for (const MegaTaskEvent& e : events) {
    if (!ran(e)) continue;
    list.push_back({{"name", "step " + std::to_string(e.step) + " kernel " + std::to_string(e.kernel)},
                    {"cat", "task"},
                    {"ph", "X"},
                    {"pid", e.segment},
                    {"tid", e.cta},
                    {"ts", us_between(first, e.start_ns)},
                    {"dur", us_between(e.start_ns, e.end_ns)},
                    {"args",
                     {{"step", e.step},
                      {"kernel", e.kernel},
                      {"block", e.block},
                      {"cta", e.cta},
                      {"sm", e.sm},
                      {"waited_ns", e.waited_ns}}}});
  }
  OJson j;
  j["traceEvents"] = std::move(list);
  j["displayTimeUnit"] = "ns";
  return j.dump();
}

std::vector<MegaSegmentTime> summarize_mega_trace(const MegaDescription& d, const std::vector<MegaTaskEvent>& events) {
  std::vector<MegaSegmentTime> out(d.segments.size());
  std::vector<std::map<int, size_t>> row_of(d.segments.size());  // per segment: plan step -> index in steps
  std::vector<std::pair<uint64_t, uint64_t>> span(d.segments.size(), {UINT64_MAX, 0});
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> window(d.segments.size());  // per segment, per row
  for (size_t s = 0; s < d.segments.size(); ++s) {
    out[s].segment = static_cast<int>(s);
    out[s].ctas = d.segments[s].ctas;
    for (const MegaSegmentDescription::TaskKernel& k : d.segments[s].kernels) {
      if (row_of[s].emplace(k.step, out[s].steps.size()).second) out[s].steps.push_back(MegaStepTime{k.step});
    }
    window[s].assign(out[s].steps.size(), {UINT64_MAX, 0});
  }
  for (size_t i = 0; i < events.size(); ++i) {
    const MegaTaskEvent& e = events[i];
    check_segment(d, e, i);
    if (!ran(e)) continue;
    const auto row = row_of[e.segment].find(e.step);
    if (row == row_of[e.segment].end()) {
      throw Error(ErrorCode::invalid_argument, "mega trace: event " + std::to_string(i) + " names step " +
                                                   std::to_string(e.step) + ", which has no task kernel in segment " +
                                                   std::to_string(e.segment));
    }
    MegaStepTime& t = out[e.segment].steps[row->second];
    auto& w = window[e.segment][row->second];
    w.first = std::min(w.first, e.start_ns);
    w.second = std::max(w.second, e.end_ns);
    ++t.tasks;
    t.busy_us += us_between(e.start_ns, e.end_ns);
    t.waited_us += static_cast<double>(e.waited_ns) / 1000.0;
    span[e.segment].first = std::min(span[e.segment].first, e.start_ns);
    span[e.segment].second = std::max(span[e.segment].second, e.end_ns);
  }
  for (size_t s = 0; s < out.size(); ++s) {
    MegaSegmentTime& seg = out[s];
    if (span[s].second > 0) seg.span_us = us_between(span[s].first, span[s].second);
    const double capacity = seg.span_us * seg.ctas;
    auto share = [&](double busy) { return capacity > 0 ? 100.0 * busy / capacity : 0.0; };
    for (size_t r = 0; r < seg.steps.size(); ++r) {
      MegaStepTime& t = seg.steps[r];
      t.busy_percent = share(t.busy_us);
      if (t.tasks > 0) {
        t.first_start_us = us_between(span[s].first, window[s][r].first);
        t.last_end_us = us_between(span[s].first, window[s][r].second);
      }
      seg.tasks += t.tasks;
      seg.busy_us += t.busy_us;
      seg.waited_us += t.waited_us;
    }
    seg.busy_percent = share(seg.busy_us);
  }
  return out;
}

}  // namespace sinter
