// Plan (load, save, describe), compile(), and what needs no GPU to ask: explain() (the fused
// regions), engine_names(), gpu_availability(). Descriptions are dicts with the field names of
// plan.hpp and explain.hpp: the JSON that `sinter inspect --json` and `sinter explain --json`
// print, parsed.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <span>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "log_callback.hpp"
#include "sinter/compile.hpp"
#include "sinter/device.hpp"
#include "sinter/error.hpp"
#include "sinter/explain.hpp"
#include "sinter/plan.hpp"

namespace sinter::python {
namespace {

nb::object parse_json(const std::string& text) { return nb::module_::import_("json").attr("loads")(text); }

TuneMode tune_mode(std::string_view s) {
  if (auto t = parse_tune_mode(s)) return *t;
  throw Error(ErrorCode::invalid_argument,
              "compile: tune='" + std::string(s) + "' is not one of 'heuristic', 'fast', 'exhaustive'");
}

// FusionOptions from {"fuse_epilogues": False, ...}; names not in FusionOptions are an error.
FusionOptions fusion_options(const nb::dict& d) {
  FusionOptions f;
  const std::pair<const char*, bool FusionOptions::*> fields[] = {
      {"fuse_epilogues", &FusionOptions::fuse_epilogues},
      {"fuse_prologues", &FusionOptions::fuse_prologues},
      {"fuse_reductions", &FusionOptions::fuse_reductions},
      {"fuse_pointwise", &FusionOptions::fuse_pointwise},
      {"fuse_layout_chains", &FusionOptions::fuse_layout_chains},
      {"fold_norms_into_matmuls", &FusionOptions::fold_norms_into_matmuls}};
  for (auto [key, value] : d) {
    const std::string name = nb::cast<std::string>(key);
    bool known = false;
    for (const auto& [field, member] : fields) {
      if (name == field) {
        f.*member = nb::cast<bool>(value);
        known = true;
      }
    }
    if (!known) {
      throw Error(ErrorCode::invalid_argument,
                  "fusion: '" + name + "' is not one of fuse_epilogues, fuse_prologues, "
                                       "fuse_reductions, fuse_pointwise, fuse_layout_chains, "
                                       "fold_norms_into_matmuls");
    }
  }
  return f;
}

Plan compile_graph(const Graph& graph, const nb::object& tune, std::vector<std::string> engines, int top_k,
                   size_t workspace_limit, int device, std::string timing_cache,
                   std::string kernel_cache_dir, std::optional<nb::dict> fusion,
                   std::string candidate_config, int candidate, int max_vendor_candidates,
                   bool check_outputs, int timing_warmup, int timing_repeats, nb::object on_log) {
  CompileOptions o;
  o.tuning = nb::isinstance<TuneMode>(tune) ? nb::cast<TuneMode>(tune) : tune_mode(nb::cast<std::string>(tune));
  o.engines = std::move(engines);
  o.top_k = top_k;
  o.workspace_limit = workspace_limit;
  o.device = device;
  o.timing_cache = std::move(timing_cache);
  o.kernel_cache_dir = std::move(kernel_cache_dir);
  if (fusion) o.fusion = fusion_options(*fusion);
  o.candidate_config = std::move(candidate_config);
  o.candidate = candidate;
  o.max_vendor_candidates = max_vendor_candidates;
  o.check_outputs = check_outputs;
  o.timing_warmup = timing_warmup;
  o.timing_repeats = timing_repeats;
  o.on_log = python_log_callback(std::move(on_log));
  nb::gil_scoped_release released;  // compiling and tuning take seconds
  return compile(graph, o);
}

void bind_plan_class(nb::module_& m) {
  nb::class_<Plan>(m, "Plan", "A compiled graph: steps, memory and kernels, ready to run (include/sinter/plan.hpp)")
      .def_static("load", &Plan::load, nb::arg("path"),
                  "A saved plan bundle, checked completely (CorruptBundleError names what is wrong)")
      .def_static("from_bytes", [](nb::bytes data, const std::string& source) {
            return Plan::from_bytes(std::span<const char>(data.c_str(), data.size()), source);
          },
          nb::arg("data"), nb::arg("source") = "<bytes>")
      .def("save", &Plan::save, nb::arg("path"), "One self-contained bundle file, written atomically")
      .def("to_bytes", [](const Plan& p) {
        std::vector<char> bytes = p.to_bytes();
        return nb::bytes(bytes.data(), bytes.size());
      })
      .def_prop_ro("graph", [](const Plan& p) { return Graph(p.graph()); }, "A copy of the plan's graph")
      .def("describe", [](const Plan& p) { return parse_json(to_json(p.describe())); },
           "Steps, engines, configs, kernels and memory as a dict (`sinter inspect --json`)")
      .def("describe_text", [](const Plan& p) { return to_text(p.describe()); },
           "The same as text (`sinter inspect`)");
}

}  // namespace

void bind_plan(nb::module_& m) {
  bind_plan_class(m);

  m.def("compile", &compile_graph, nb::arg("graph"), nb::kw_only(), nb::arg("tune") = "heuristic",
        nb::arg("engines") = std::vector<std::string>{}, nb::arg("top_k") = 3,
        nb::arg("workspace_limit") = size_t{256} << 20, nb::arg("device") = 0, nb::arg("timing_cache") = "",
        nb::arg("kernel_cache_dir") = "", nb::arg("fusion") = nb::none(), nb::arg("candidate_config") = "",
        nb::arg("candidate") = -1, nb::arg("max_vendor_candidates") = 4, nb::arg("check_outputs") = true,
        nb::arg("timing_warmup") = 3, nb::arg("timing_repeats") = 20, nb::arg("on_log") = nb::none(),
        "Compiles a graph into a Plan on GPU `device` (CompileOptions of include/sinter/compile.hpp). "
        "tune: 'heuristic' (nothing timed), 'fast' (each engine's top_k timed) or 'exhaustive'; "
        "engines: names from engine_names(), in preference order; fusion: a dict of FusionOptions "
        "flags; on_log(severity, message). Raises CudaError when there is no usable GPU.");

  m.def("explain", [](const Graph& g, std::optional<nb::dict> fusion) {
        return parse_json(to_json(explain(g, fusion ? fusion_options(*fusion) : FusionOptions{})));
      },
      nb::arg("graph"), nb::arg("fusion") = nb::none(),
      "The fused regions and why each boundary exists, as a dict (`sinter explain --json`); no GPU needed");
  m.def("engine_names", &engine_names, "The registered engines in Sinter's preference order");
  m.def("gpu_availability", [] {
    GpuAvailability a = gpu_availability();
    nb::dict d;
    d["available"] = a.available;
    d["count"] = a.count;
    d["reason"] = a.reason;
    return d;
  }, "{'available', 'count', 'reason'}: whether this process can use a GPU, and why not");
  m.def("default_timing_cache_path", &default_timing_cache_path);
  m.def("default_kernel_cache_dir", &default_kernel_cache_dir);
}

}  // namespace sinter::python
