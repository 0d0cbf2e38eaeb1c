// The `sinter` command-line tool, on the public API (include/sinter) only.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.hpp"
#include "sinter/compile.hpp"
#include "sinter/error.hpp"
#include "sinter/runner.hpp"

namespace {

// a seed: an unsigned 64-bit value (CLI11 would wrap "-1" around to 2^64 - 1)
const CLI::Validator kUnsigned(
    [](std::string& v) { return !v.empty() && v[0] != '-' ? std::string() : "a seed is 0 or more, not " + v; },
    "", "unsigned");

// a limit in milliseconds: a number above 0
const CLI::Validator kPositiveMs(
    [](std::string& v) {
      double ms = 0;
      return CLI::detail::lexical_cast(v, ms) && ms > 0 ? std::string() : "a time in milliseconds above 0, not " + v;
    },
    "", "milliseconds");

std::vector<std::string> engine_choices() {
  std::vector<std::string> out{"auto"};
  for (const std::string& e : sinter::engine_names()) out.push_back(e);
  return out;
}

const char* kFooter =
    "Exit codes: 0 ok; 1 invalid input (a bad graph, bundle, file or option value, or no GPU where one is "
    "needed); 2 the command line does not parse; 3 results disagree with the CPU reference; 4 internal error "
    "(a bug: please report it) or a megakernel watchdog timeout (a task waited past --watchdog-ms).";

// --executor, the mega executor's --watchdog-ms and the graph executor's --graph-streams, as run
// and bench take them.
void add_executor_options(CLI::App* app, sinter::cli::ExecutorOptions& e) {
  app->add_option("--executor", e.executor,
                  "stream (step by step), graph (replayed as a CUDA graph) or mega (our kernels' steps as tasks of "
                  "persistent megakernels, docs/megakernel.md)")
      ->default_val(e.executor)
      ->check(CLI::IsMember({"stream", "graph", "mega"}));
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", sinter::MegaOptions{}.watchdog_ms);
  app->add_option("--watchdog-ms", e.watchdog_ms,
                  "mega: the longest a task may wait for its producers before the megakernel stops with an error "
                  "(exit code 4; default " + std::string(limit) + ")")
      ->check(kPositiveMs);
  app->add_option("--graph-streams", e.graph_streams,
                  "graph: the most streams the steps are captured on; independent steps run side by side on "
                  "branches of the graph (1: one chain in step order; default " +
                      std::to_string(sinter::RunnerOptions{}.graph_streams) + ")")
      ->check(CLI::Range(1, 64));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sinter::cli;
  CLI::App app{"sinter: fuse, tune and run tensor graphs on NVIDIA GPUs.\n"
               "Graphs are JSON files (docs/graph-format.md); every command validates its input."};
  app.set_version_flag("--version", std::string("sinter ") + SINTER_VERSION);
  app.require_subcommand(1);
  app.footer(kFooter);
  app.fallthrough();  // the common options may follow the command
  Common common;
  bool verbose = false, quiet = false;
  app.add_flag("-v,--verbose", verbose, "say more: each compile pass's time, what engines remark");
  app.add_flag("-q,--quiet", quiet, "say less: no warnings, no progress");
  app.add_option("--device", common.device, "the GPU to use (its ordinal)")->default_val(0)->check(CLI::Range(0, 1 << 20));
  app.add_option("--timing-cache", common.timing_cache,
                 "the timing cache file tuning reads and writes (default: $SINTER_TIMING_CACHE, else "
                 "~/.cache/sinter/timing.json)");
  app.add_flag("--no-timing-cache", common.no_timing_cache, "tune without reading or writing a timing cache");
  const std::vector<std::string> engines = engine_choices();
  const std::vector<std::string> tunes{"heuristic", "fast", "exhaustive"};

  CheckOptions check;
  auto* c = app.add_subcommand("check", "Validate a graph file and print its ops, tensors, shapes, FLOPs and minimum bytes");
  c->add_option("FILE", check.file, "graph file (.json)")->required();
  c->add_flag("--brief", check.quiet, "print only the verdict");
  c->add_flag("--json", check.json, "print one JSON object");

  RunOptions run;
  auto* r = app.add_subcommand("run", "Run a graph or plan bundle on inputs and compare with the CPU reference");
  r->add_option("FILE", run.file, "graph file (.json) or plan bundle (from sinter build)")->required();
  add_executor_options(r, run.exec);
  r->add_option("--seed", run.seed, "seed of the random inputs")->default_val(1)->check(kUnsigned);
  r->add_option("--load-inputs", run.load_inputs, "read each input from DIR/NAME.npy instead of random values");
  r->add_option("--on", run.on, "auto (the GPU when there is one), cpu (the reference alone) or gpu")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  r->add_option("--iters", run.iters, "timed GPU runs (median reported)")->default_val(20)->check(CLI::Range(1, 1 << 30));
  r->add_option("--engine", run.engine, "auto, or the engine to prefer where it supports a region")
      ->default_val("auto")
      ->check(CLI::IsMember(engines));
  r->add_option("--tune", run.tune, "heuristic (engines' own ranking), fast (time each engine's top 3) or exhaustive")
      ->default_val("heuristic")
      ->check(CLI::IsMember(tunes));
  r->add_option("--save-outputs", run.save_outputs, "write each output to DIR/NAME.npy (bf16 and fp8 widened to float32)");

  ExplainOptions explain;
  auto* e = app.add_subcommand("explain",
                               "Show the fused regions of a graph and the reason for every region boundary; with --mega, "
                               "the megakernel segments of its plan (needs a GPU)");
  e->add_option("FILE", explain.file, "graph file (.json); with --mega also a plan bundle")->required();
  e->add_flag("--no-fusion", explain.no_fusion, "turn every fusion off");
  e->add_flag("--unfolded-norms", explain.unfolded_norms,
              "keep rmsnorms as regions of their own (no fold into the decode matmuls that read them)");
  auto* kernels_opt =
      e->add_option("--kernels", explain.kernels_dir, "write the generated CUDA source of every candidate into this folder");
  e->add_flag("--json", explain.json, "print one JSON object");
  auto* explain_mega_flag = e->add_flag("--mega", explain.mega,
                                   "compile the graph (heuristic tuning) or load the bundle, and show the megakernel "
                                   "segments a mega-executor runner makes: steps, task kernels, waits, schedule, the "
                                   "steps outside and why (needs a GPU)")
                           ->excludes(kernels_opt);
  e->add_option("--dot", explain.dot_file, "with --mega: write the task kernels and their waits as a Graphviz DOT file")
      ->needs(explain_mega_flag);

  EnginesOptions engines_opts;
  auto* en = app.add_subcommand("engines", "For every region, each engine's support (or the reason it has none) and its candidates");
  en->add_option("FILE", engines_opts.file, "graph file (.json)")->required();
  en->add_option("--max-candidates", engines_opts.max_candidates, "per vendor engine")->default_val(8)->check(CLI::Range(1, 1 << 30));
  en->add_flag("--json", engines_opts.json, "print one JSON object");

  BuildOptions build;
  auto* b = app.add_subcommand("build", "Compile (and tune) a graph on the GPU and save the plan as one bundle");
  b->add_option("FILE", build.file, "graph file (.json)")->required();
  b->add_option("-o,--output", build.output, "plan bundle to write")->required();
  b->add_option("--tune", build.tune, "heuristic, fast or exhaustive (timings kept in the timing cache)")
      ->check(CLI::IsMember(tunes))
      ->default_val("heuristic");
  b->add_option("--engine", build.engine, "auto, or the engine to prefer where it supports a region")
      ->default_val("auto")
      ->check(CLI::IsMember(engines));
  b->add_flag("--no-fusion", build.no_fusion, "turn every fusion off (one step per op)");
  b->add_flag("--unfolded-norms", build.unfolded_norms,
              "keep rmsnorms as steps of their own (no fold into the decode matmuls that read them)");
  b->add_flag("--megakernels", build.megakernels,
              "also compile the megakernels of --executor mega into the bundle (loaded with no compilation)");
  b->add_flag("--json", build.json, "print the plan's description as JSON");

  InspectOptions inspect;
  auto* in = app.add_subcommand("inspect",
                                "Show what a plan bundle holds: steps, engines, configs, memory, kernels (no GPU needed; "
                                "--mega needs one)");
  in->add_option("PLAN", inspect.file, "plan bundle")->required();
  in->add_flag("--json", inspect.json, "print one JSON object");
  auto* inspect_mega_flag = in->add_flag("--mega", inspect.mega,
                                    "show the megakernel segments a mega-executor runner makes of the plan, as "
                                    "`explain --mega` does (needs a GPU)");
  in->add_option("--dot", inspect.dot_file, "with --mega: write the task kernels and their waits as a Graphviz DOT file")
      ->needs(inspect_mega_flag);

  BenchOptions bench;
  auto* be = app.add_subcommand("bench",
                                "Time a plan (bundle, or a graph compiled now): latency percentiles, throughput, per "
                                "step; with --executor mega --trace, a per-task timeline");
  be->add_option("FILE", bench.file, "plan bundle or graph file (.json)")->required();
  add_executor_options(be, bench.exec);
  be->add_option("--trace", bench.trace_file,
                 "mega: trace one more run after the timed ones (timed runs trace too) and write it as a Chrome/Perfetto "
                 "trace JSON file (a row per CTA, an event per task), with a per-step summary");
  be->add_option("--iters", bench.iters, "timed runs")->default_val(200)->check(CLI::Range(1, 1 << 30));
  be->add_option("--warmup", bench.warmup, "untimed runs first")->default_val(20)->check(CLI::Range(0, 1 << 30));
  be->add_option("--tune", bench.tune, "for a graph file: heuristic, fast or exhaustive")
      ->default_val("heuristic")
      ->check(CLI::IsMember(tunes));
  be->add_option("--engine", bench.engine, "for a graph file: auto, or the engine to prefer")
      ->default_val("auto")
      ->check(CLI::IsMember(engines));
  be->add_option("--seed", bench.seed, "seed of the random inputs")->default_val(1)->check(kUnsigned);
  be->add_flag("--json", bench.json, "print one JSON object instead of text");

  DemoOptions demo;
  auto* d = app.add_subcommand("demo", "Run every example graph end to end on this machine (the GPU when there is one, else the CPU path)");
  d->add_option("--examples", demo.examples_dir, "folder of example graphs")->default_val(SINTER_EXAMPLES_DIR);
  d->add_option("--seed", demo.seed, "seed of the random inputs")->default_val(1)->check(kUnsigned);

  ImportOptions import;
  auto* im = app.add_subcommand("import",
                                "Import an ONNX model as a graph file, and its weights as .npy files, with the sinter "
                                "Python module's importer (runs PYTHON -m sinter import; needs the module and onnx)");
  im->add_option("MODEL", import.model, "ONNX model file (.onnx)")->required();
  im->add_option("-o,--output", import.output, "graph file to write (.json)")->required();
  im->add_option("--name", import.name, "the graph's name (default: the ONNX graph's name)");
  im->add_option("--input-shape", import.input_shapes,
                 "NAME=D0,D1,...: the static shape of an ONNX input with symbolic dimensions (repeatable)")
      ->allow_extra_args(false);
  im->add_option("--weights-out", import.weights_out,
                 "write each weight input as DIR/NAME.npy (bf16 and fp8 as float32), as run --load-inputs DIR reads them");
  im->add_option("--python", import.python, "the Python interpreter that has the sinter module")
      ->default_val(import.python);

  for (CLI::App* sub : app.get_subcommands({})) sub->footer(kFooter);
  // a misspelled command: CLI11 alone would say only that a subcommand is required
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "sinter: unknown command '%s' (the commands: %s; see sinter --help)\n", argv[1], names.c_str());
      return kUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& err) {
    const int code = app.exit(err);  // prints help, the version or the error
    return code == 0 ? kOk : kUsage;
  }
  common.verbosity = quiet ? 0 : verbose ? 2 : 1;
  try {
    if (*c) return cmd_check(common, check);
    if (*r) return cmd_run(common, run);
    if (*e) return cmd_explain(common, explain);
    if (*en) return cmd_engines(common, engines_opts);
    if (*d) return cmd_demo(common, demo);
    if (*b) return cmd_build(common, build);
    if (*in) return cmd_inspect(common, inspect);
    if (*be) return cmd_bench(common, bench);
    if (*im) return cmd_import(common, import);
  } catch (const sinter::Error& err) {
    std::fprintf(stderr, "sinter: %s\n", err.what());
    return err.code() == sinter::ErrorCode::internal || err.code() == sinter::ErrorCode::timeout ? kInternal
                                                                                                   : kInvalidInput;
  } catch (const std::exception& err) {
    std::fprintf(stderr, "sinter: internal error: %s\n", err.what());
    return kInternal;
  }
  return kOk;
}
