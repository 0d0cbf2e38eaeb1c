#include "mega_format.hpp"

#include <cstdarg>
#include <cstdio>

#include "format.hpp"

namespace sinter::cli {
namespace {

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string plural(long long n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string step_range(const std::vector<int>& steps) {
  if (steps.empty()) return "no steps";
  if (steps.size() == 1) return "step " + std::to_string(steps.front());
  return "steps " + std::to_string(steps.front()) + "-" + std::to_string(steps.back());
}

std::string waits_list(const std::vector<int>& waits) {
  if (waits.empty()) return "-";
  std::string s;
  for (int w : waits) {
    if (!s.empty()) s += ',';
    s += std::to_string(w);
  }
  return s;
}

// A DOT double-quoted string's contents.
std::string dot_escaped(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch == '\n' ? ' ' : ch;
  }
  return out;
}

}  // namespace

std::string mega_overview(const MegaDescription& d) {
  size_t steps = 0, tasks = 0;
  for (const MegaSegmentDescription& s : d.segments) {
    steps += s.steps.size();
    tasks += static_cast<size_t>(s.tasks);
  }
  return plural(d.segments.size(), "segment", "segments") + ": " + plural(steps, "step", "steps") + " as " +
         plural(tasks, "task", "tasks") + "; " + plural(d.outside.size(), "step", "steps") + " outside";
}

std::string mega_text(const MegaDescription& d) {
  std::string out = "megakernel: " + mega_overview(d) + "\n";
  for (size_t i = 0; i < d.segments.size(); ++i) {
    const MegaSegmentDescription& s = d.segments[i];
    out += printf_string("\nsegment %zu: %s\n", i, step_range(s.steps).c_str());
    out += printf_string("   %s, %s, %s on %s of %d threads, %s of shared memory a CTA\n",
                         plural(s.kernels.size(), "task kernel", "task kernels").c_str(),
                         plural(s.functions, "function", "functions").c_str(), plural(s.tasks, "task", "tasks").c_str(),
                         plural(s.ctas, "CTA", "CTAs").c_str(), s.threads, human_bytes(double(s.shared_memory_bytes)).c_str());
    out += printf_string("   cost model: critical path %.1f us, schedule %.1f us; queues of %d to %d tasks a CTA, in %s "
                         "of up to %s; compiled or loaded in %s\n",
                         s.critical_path_us, s.estimated_us, s.min_queue, s.max_queue,
                         plural(s.queue_chunks, "chunk", "chunks").c_str(), human_bytes(double(s.chunk_bytes)).c_str(),
                         human_ms(s.compile_ms).c_str());
    out += printf_string("   %s (%d over ranges of a kernel's tasks), %s in the queues, %d of %d tasks wait on none\n",
                         plural(s.counters, "counter", "counters").c_str(), s.counters - static_cast<int>(s.kernels.size()),
                         plural(s.counter_waits, "counter wait", "counter waits").c_str(), s.waitless_tasks, s.tasks);
    out += "   task kernel  step kernel  tasks threads function  waits       dependents  ranges  description\n";
    for (size_t k = 0; k < s.kernels.size(); ++k) {
      const MegaSegmentDescription::TaskKernel& t = s.kernels[k];
      out += printf_string("   %-12zu %-4d %-7d %-6d %-7d %-9d %-11s %-11d %-7d %s\n", k, t.step, t.kernel, t.tasks, t.threads,
                           t.function, waits_list(t.waits).c_str(), t.dependents, t.range_counters, t.description.c_str());
    }
  }
  if (!d.outside.empty()) {
    out += "\nsteps outside the megakernels (each launched on its own, between segments):\n";
    for (const MegaDescription::Outside& o : d.outside) out += printf_string("   step %-4d %s\n", o.step, o.why.c_str());
  }
  return out;
}

nlohmann::ordered_json mega_json(const MegaDescription& d) {
  nlohmann::ordered_json segments = nlohmann::ordered_json::array();
  for (const MegaSegmentDescription& s : d.segments) {
    nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
    for (const MegaSegmentDescription::TaskKernel& t : s.kernels) {
      kernels.push_back({{"step", t.step}, {"kernel", t.kernel}, {"description", t.description}, {"tasks", t.tasks},
                         {"threads", t.threads}, {"function", t.function}, {"waits", t.waits},
                         {"dependents", t.dependents}, {"range_counters", t.range_counters}});
    }
    segments.push_back({{"steps", s.steps},
                        {"functions", s.functions},
                        {"tasks", s.tasks},
                        {"ctas", s.ctas},
                        {"threads", s.threads},
                        {"counters", s.counters},
                        {"counter_waits", s.counter_waits},
                        {"waitless_tasks", s.waitless_tasks},
                        {"shared_memory_bytes", s.shared_memory_bytes},
                        {"queue_chunks", s.queue_chunks},
                        {"chunk_bytes", s.chunk_bytes},
                        {"critical_path_us", s.critical_path_us},
                        {"estimated_us", s.estimated_us},
                        {"max_queue", s.max_queue},
                        {"min_queue", s.min_queue},
                        {"compile_ms", s.compile_ms},
                        {"kernels", std::move(kernels)}});
  }
  nlohmann::ordered_json outside = nlohmann::ordered_json::array();
  for (const MegaDescription::Outside& o : d.outside) outside.push_back({{"step", o.step}, {"why", o.why}});
  nlohmann::ordered_json j;
  j["segments"] = std::move(segments);
  j["outside"] = std::move(outside);
  return j;
}

std::string mega_dot(const MegaDescription& d, const std::string& title) {
  std::string out = "digraph \"" + dot_escaped(title) + "\" {\n  node [shape=box, fontname=\"monospace\"];\n";
  std::string edges;
  for (size_t i = 0; i < d.segments.size(); ++i) {
    const MegaSegmentDescription& s = d.segments[i];
    out += printf_string("  subgraph cluster_%zu {\n    label=\"segment %zu: %s\";\n", i, i, step_range(s.steps).c_str());
    for (size_t k = 0; k < s.kernels.size(); ++k) {
      const MegaSegmentDescription::TaskKernel& t = s.kernels[k];
      out += printf_string("    s%zuk%zu [label=\"step %d kernel %d\\n%s\", tooltip=\"", i, k, t.step, t.kernel,
                           plural(t.tasks, "task", "tasks").c_str()) +
             dot_escaped(t.description) + "\"];\n";
      for (int w : t.waits) edges += printf_string("  s%zuk%d -> s%zuk%zu;\n", i, w, i, k);
    }
    out += "  }\n";
  }
  return out + edges + "}\n";
}

std::string mega_trace_summary_text(const std::vector<MegaSegmentTime>& segments) {
  std::string out;
  for (const MegaSegmentTime& s : segments) {
    out += printf_string("segment %d: span %.1f us on %d CTAs, %d tasks, busy %.1f%% (busy %.1f us, waited %.1f us)\n",
                         s.segment, s.span_us, s.ctas, s.tasks, s.busy_percent, s.busy_us, s.waited_us);
    out += "   step   tasks      busy us    waited us   busy %   window us (first start - last end)\n";
    for (const MegaStepTime& t : s.steps) {
      out += printf_string("   %-6d %-10d %-10.1f %-11.1f %-8.1f %.1f - %.1f\n", t.step, t.tasks, t.busy_us, t.waited_us,
                           t.busy_percent, t.first_start_us, t.last_end_us);
    }
  }
  return out;
}

nlohmann::ordered_json mega_trace_summary_json(const std::vector<MegaSegmentTime>& segments) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const MegaSegmentTime& s : segments) {
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const MegaStepTime& t : s.steps) {
      steps.push_back({{"step", t.step}, {"tasks", t.tasks}, {"busy_us", t.busy_us}, {"waited_us", t.waited_us},
                       {"busy_percent", t.busy_percent}, {"first_start_us", t.first_start_us},
                       {"last_end_us", t.last_end_us}});
    }
    out.push_back({{"segment", s.segment}, {"ctas", s.ctas}, {"tasks", s.tasks}, {"span_us", s.span_us},
                   {"busy_us", s.busy_us}, {"waited_us", s.waited_us}, {"busy_percent", s.busy_percent},
                   {"steps", std::move(steps)}});
  }
  return out;
}

}  // namespace sinter::cli
