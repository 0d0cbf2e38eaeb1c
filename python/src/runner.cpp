// Runner: a Plan bound to device memory by name and enqueued on a CUDA stream. Addresses and
// streams are plain integers (a torch tensor's data_ptr(), torch.cuda.current_stream().cuda_stream),
// so this module needs no CUDA Python package; it checks each address as the C++ Runner does.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "log_callback.hpp"
#include "sinter/error.hpp"
#include "sinter/runner.hpp"

namespace sinter::python {
namespace {

ExecMode exec_mode(const nb::object& mode) {
  if (nb::isinstance<ExecMode>(mode)) return nb::cast<ExecMode>(mode);
  const std::string s = nb::cast<std::string>(mode);
  if (s == "stream") return ExecMode::stream;
  if (s == "graph") return ExecMode::graph;
  if (s == "mega") return ExecMode::mega;
  throw Error(ErrorCode::invalid_argument, "Runner: mode='" + s + "' is not one of 'stream', 'graph', 'mega'");
}

MegaSegments mega_segments(const std::string& s) {
  if (s == "as_planned") return MegaSegments::as_planned;
  if (s == "all_megakernels") return MegaSegments::all_megakernels;
  throw Error(ErrorCode::invalid_argument, "Runner: segments='" + s + "' is not one of 'as_planned', 'all_megakernels'");
}

cudaStream_t to_stream(uintptr_t stream) { return reinterpret_cast<cudaStream_t>(stream); }

Runner make_runner(const Plan& plan, const nb::object& mode, int device, uintptr_t workspace,
                   size_t workspace_bytes, double watchdog_ms, bool trace, std::string kernel_cache_dir,
                   const std::string& segments, int graph_streams, nb::object on_log) {
  RunnerOptions o;
  o.mode = exec_mode(mode);
  o.graph_streams = graph_streams;
  o.mega.segments = mega_segments(segments);
  o.device = device;
  o.workspace = reinterpret_cast<void*>(workspace);
  o.workspace_bytes = workspace_bytes;
  o.mega.watchdog_ms = watchdog_ms;
  o.mega.trace = trace;
  o.mega.kernel_cache_dir = std::move(kernel_cache_dir);
  o.on_log = python_log_callback(std::move(on_log));
  return Runner(plan, o);
}

nb::dict stats_dict(const RunnerStats& s) {
  nb::dict d;
  d["enqueues"] = s.enqueues;
  d["captures"] = s.captures;
  d["instantiations"] = s.instantiations;
  d["updates"] = s.updates;
  d["refused_updates"] = s.refused_updates;
  d["capture_streams"] = s.capture_streams;
  d["capture_launches"] = s.capture_launches;
  d["capture_chain"] = s.capture_chain;
  d["load_ms"] = s.load_ms;
  return d;
}

nb::dict segment_timing_dict(const MegaSegmentTiming& t) {
  nb::dict d;
  d["steps"] = t.steps;
  d["source_sha256"] = t.source_sha256;
  d["megakernel_ms"] = t.megakernel_ms;
  d["steps_ms"] = t.steps_ms;
  d["launched_as_steps"] = t.launched_as_steps;
  return d;
}

}  // namespace

void bind_runner(nb::module_& m) {
  nb::class_<Runner>(m, "Runner", "Runs a Plan on device memory bound by name, on a CUDA stream")
      .def(nb::new_(&make_runner), nb::arg("plan"), nb::kw_only(), nb::arg("mode") = "stream",
           nb::arg("device") = 0, nb::arg("workspace") = 0, nb::arg("workspace_bytes") = 0,
           nb::arg("watchdog_ms") = 5000.0, nb::arg("trace") = false, nb::arg("kernel_cache_dir") = "",
           nb::arg("segments") = "as_planned", nb::arg("graph_streams") = RunnerOptions{}.graph_streams,
           nb::arg("on_log") = nb::none(),
           "Loads every step and, without a workspace (a device address of at least "
           "plan.describe()['memory']['device_bytes'] bytes), allocates the plan's memory. mode: "
           "'stream', 'graph' (a CUDA graph, replayed) or 'mega' (persistent megakernels); "
           "graph_streams is graph mode's (the most streams the steps are captured on: independent steps "
           "run side by side on branches of the graph; 1 captures one chain in step order); "
           "watchdog_ms, trace and segments are mega mode's (segments: 'as_planned' launches a "
           "segment's steps where the plan measured them faster than its megakernel, "
           "'all_megakernels' every megakernel). Raises CudaError when there is no usable GPU.")
      .def_prop_ro("plan", [](const Runner& r) { return r.plan(); })
      .def("set_tensor_address", [](Runner& r, const std::string& name, uintptr_t address) {
             r.set_tensor_address(name, reinterpret_cast<const void*>(address));
           },
           nb::arg("name"), nb::arg("address"),
           "Binds graph input or output `name` to device memory laid out as the graph declares it")
      .def("tensor_address", [](const Runner& r, const std::string& name) {
             return reinterpret_cast<uintptr_t>(r.tensor_address(name));
           },
           nb::arg("name"), "The bound address, 0 when none")
      .def("enqueue", [](Runner& r, uintptr_t stream) { r.enqueue(to_stream(stream)); },
           nb::arg("stream") = 0, "Enqueues the plan on a CUDA stream (an integer handle; 0 the default stream)")
      .def("check", &Runner::check,
           "Mega mode: raises WatchdogTimeoutError when a finished launch was stopped by its watchdog")
      .def("stats", [](const Runner& r) { return stats_dict(r.stats()); })
      .def_prop_ro("load_notes", &Runner::load_notes)
      .def("poison_intermediates", [](Runner& r, uintptr_t stream) { r.poison_intermediates(to_stream(stream)); },
           nb::arg("stream") = 0, "Fills every intermediate with 0xFF bytes (NaN), a test's guard")
      .def("time_steps", [](Runner& r, uintptr_t stream, int iters) { return r.time_steps(to_stream(stream), iters); },
           nb::arg("stream") = 0, nb::arg("iters") = 20, "Median milliseconds of each step launched alone")
      .def("time_mega_segments",
           [](Runner& r, uintptr_t stream, int iters) {
             nb::list out;
             for (const MegaSegmentTiming& t : r.time_mega_segments(to_stream(stream), iters)) {
               out.append(segment_timing_dict(t));
             }
             return out;
           },
           nb::arg("stream") = 0, nb::arg("iters") = 20,
           "Mega mode: each megakernel segment timed as its megakernel and as its steps launched one by one "
           "(medians); a list of dicts {steps, source_sha256, megakernel_ms, steps_ms, launched_as_steps}");
}

}  // namespace sinter::python
