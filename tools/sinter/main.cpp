// The `sinter` command-line tool.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.hpp"
#include "sinter/error.hpp"

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
  r->add_option("FILE", run.file, "graph file (.json)")->required();
  r->add_option("--seed", run.seed, "seed of the random inputs")->default_val(1);
  r->add_option("--device", run.device, "auto (the GPU when there is one), cpu or gpu")
      ->default_val("auto");
  r->add_option("--iters", run.iters, "timed GPU runs (median reported)")->default_val(20);
  r->add_option("--engine", run.engine, "auto, jit, cublaslt or cudnn (forced where it supports a region)")
      ->default_val("auto");
  r->add_option("--tune", run.tune,
                "heuristic (engines' own ranking), fast (time each engine's top 3) or exhaustive "
                "(time every candidate); timings are kept in the timing cache")
      ->default_val("heuristic");
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
  en->add_option("--max-candidates", engines.max_candidates, "per vendor engine")->default_val(8);

  DemoOptions demo;
  auto* d = app.add_subcommand("demo", "Run every example graph end to end on this machine "
                                       "(the GPU when there is one, else the CPU path)");
  d->add_option("--examples", demo.examples_dir, "folder of example graphs")
      ->default_val(SINTER_EXAMPLES_DIR);
  d->add_option("--seed", demo.seed, "seed of the random inputs")->default_val(1);

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
  } catch (const sinter::Error& e) {
    std::fprintf(stderr, "sinter: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinter: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
