// The `sinter` command-line tool.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.hpp"
#include "sinter/error.hpp"

// a seed: an unsigned 64-bit value (CLI11 would wrap "-1" around to 2^64 - 1)
const CLI::Validator kUnsigned(
    [](std::string& v) { return !v.empty() && v[0] != '-' ? std::string() : "a seed is 0 or more, not " + v; },
    "", "unsigned");

int main(int argc, char** argv) {
  using namespace sinter::cli;
  CLI::App app{"sinter: fuse, tune and run tensor graphs on NVIDIA GPUs.\n"
               "Graphs are JSON files (docs/graph-format.md); every command validates its input."};
  app.set_version_flag("--version", std::string("sinter ") + SINTER_VERSION);
  app.require_subcommand(1);

  CheckOptions check;
  auto* c = app.add_subcommand("check", "Validate a graph file and print its ops, tensors, shapes, "
                                        "FLOPs and minimum bytes");
  c->add_option("FILE", check.file, "graph file (.json)")->required();
  c->add_flag("-q,--quiet", check.quiet, "print only the verdict");

  RunOptions run;
  auto* r = app.add_subcommand("run", "Run a graph on seeded random inputs and print statistics "
                                      "of its outputs");
  r->add_option("FILE", run.file, "graph file (.json) or plan bundle (from sinter build)")->required();
  r->add_option("--executor", run.executor,
                "stream or graph: run through a plan (a bundle always is), launched step by step or "
                "replayed as a CUDA graph")
      ->check(CLI::IsMember({"stream", "graph"}));
  r->add_option("--seed", run.seed, "seed of the random inputs")->default_val(1)->check(kUnsigned);
  r->add_option("--device", run.device, "auto (the GPU when there is one), cpu or gpu")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  r->add_option("--iters", run.iters, "timed GPU runs (median reported)")->default_val(20)->check(CLI::Range(1, 1 << 30));
  r->add_option("--engine", run.engine, "auto, jit, cublaslt or cudnn (forced where it supports a region)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "jit", "cublaslt", "cudnn"}));
  r->add_option("--tune", run.tune,
                "heuristic (engines' own ranking), fast (time each engine's top 3) or exhaustive "
                "(time every candidate); timings are kept in the timing cache")
      ->default_val("heuristic")
      ->check(CLI::IsMember({"heuristic", "fast", "exhaustive"}));
  r->add_option("--save-outputs", run.save_outputs,
                "write each output to DIR/NAME.npy (bf16 and fp8 widened to float32)");

  ExplainOptions explain;
  auto* e = app.add_subcommand("explain", "Show the fused regions of a graph and the reason for "
                                          "every region boundary");
  e->add_option("FILE", explain.file, "graph file (.json)")->required();
  e->add_flag("--no-fusion", explain.no_fusion, "turn every fusion off");
  e->add_option("--kernels", explain.kernels_dir,
                "write the generated CUDA source of every region into this folder");

  EnginesOptions engines;
  auto* en = app.add_subcommand("engines", "For every region, each engine's support (or the reason "
                                           "it has none) and its candidates");
  en->add_option("FILE", engines.file, "graph file (.json)")->required();
  en->add_option("--max-candidates", engines.max_candidates, "per vendor engine")->default_val(8)->check(CLI::Range(1, 1 << 30));

  BuildOptions build;
  auto* b = app.add_subcommand("build", "Prepare (and tune) a graph on the GPU and save the plan as "
                                        "one bundle that run, inspect and bench load with no compilation");
  b->add_option("FILE", build.file, "graph file (.json)")->required();
  b->add_option("-o,--output", build.output, "plan bundle to write")->required();
  b->add_option("--tune", build.tune, "heuristic, fast or exhaustive (timings kept in the timing cache)")
      ->check(CLI::IsMember({"heuristic", "fast", "exhaustive"}))
      ->default_val("heuristic");
  b->add_option("--engine", build.engine, "auto, jit, cublaslt or cudnn (SINTER_PLAN_CUDNN=0 keeps cudnn out of plans)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "jit", "cublaslt", "cudnn"}));
  b->add_flag("--no-fusion", build.no_fusion, "turn every fusion off (one step per op)");
  InspectOptions inspect;
  auto* in = app.add_subcommand("inspect", "Show what a plan bundle holds: steps, engines, candidates, "
                                           "memory, kernels and their cache keys (no GPU needed)");
  in->add_option("PLAN", inspect.file, "plan bundle")->required();
  BenchOptions bench;
  auto* be = app.add_subcommand("bench", "Time a plan (bundle, or a graph built now): latency "
                                         "percentiles, throughput, per-step breakdown");
  be->add_option("FILE", bench.file, "plan bundle or graph file (.json)")->required();
  be->add_option("--executor", bench.executor, "stream or graph")->default_val("graph")->check(CLI::IsMember({"stream", "graph"}));
  be->add_option("--iters", bench.iters, "timed runs")->default_val(200)->check(CLI::Range(1, 1 << 30));
  be->add_option("--warmup", bench.warmup, "untimed runs first")->default_val(20)->check(CLI::Range(0, 1 << 30));
  be->add_option("--tune", bench.tune, "for a graph file: heuristic, fast or exhaustive")
      ->default_val("heuristic")
      ->check(CLI::IsMember({"heuristic", "fast", "exhaustive"}));
  be->add_option("--engine", bench.engine, "for a graph file: auto, jit, cublaslt or cudnn")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "jit", "cublaslt", "cudnn"}));
  be->add_option("--seed", bench.seed, "seed of the random inputs")->default_val(1)->check(kUnsigned);
  be->add_flag("--json", bench.json, "print one JSON object instead of text");
  DemoOptions demo;
  auto* d = app.add_subcommand("demo", "Run every example graph end to end on this machine "
                                       "(the GPU when there is one, else the CPU path)");
  d->add_option("--examples", demo.examples_dir, "folder of example graphs")
      ->default_val(SINTER_EXAMPLES_DIR);
  d->add_option("--seed", demo.seed, "seed of the random inputs")->default_val(1)->check(kUnsigned);

  // a misspelled command: CLI11 alone would say only that a subcommand is required
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "sinter: unknown command '%s' (the commands: %s; see sinter --help)\n", argv[1],
                   names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*c) return cmd_check(check);
    if (*r) return cmd_run(run);
    if (*e) return cmd_explain(explain);
    if (*en) return cmd_engines(engines);
    if (*d) return cmd_demo(demo);
    if (*b) return cmd_build(build);
    if (*in) return cmd_inspect(inspect);
    if (*be) return cmd_bench(bench);
  } catch (const sinter::Error& e) {
    std::fprintf(stderr, "sinter: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinter: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
