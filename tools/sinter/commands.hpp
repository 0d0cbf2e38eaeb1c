// The subcommands of the `sinter` tool. Each takes its parsed options and returns the exit code
// (exit_codes below); errors are thrown as sinter::Error and mapped by main().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sinter::cli {

// The exit codes `sinter --help` documents.
enum ExitCode : int {
  kOk = 0,
  kInvalidInput = 1,   // a bad graph, bundle, file or option value; no GPU where one is needed
  kUsage = 2,          // the command line does not parse
  kDisagrees = 3,      // the GPU's results disagree with the CPU reference
  kInternal = 4,       // a bug in Sinter, or a megakernel watchdog timeout
};

// Options every command takes.
struct Common {
  int verbosity = 1;          // 0 quiet (-q), 1 normal, 2 verbose (-v): each pass's time, engine remarks
  int device = 0;             // --device N
  std::string timing_cache;   // --timing-cache FILE ("" the default file)
  bool no_timing_cache = false;
};

struct CheckOptions {
  std::string file;
  bool quiet = false;  // only the one-line verdict
  bool json = false;
};
int cmd_check(const Common& c, const CheckOptions& o);

// How run and bench execute a plan: --executor and the mega executor's options.
struct ExecutorOptions {
  std::string executor;    // stream | graph | mega
  double watchdog_ms = 0;  // --watchdog-ms (mega only); 0: the runner's default
  int graph_streams = 0;   // --graph-streams (graph only); 0: the runner's default
};

struct RunOptions {
  std::string file;
  uint64_t seed = 1;
  std::string load_inputs;      // folder of NAME.npy files, empty: seeded random inputs
  std::string on = "auto";      // auto | cpu | gpu
  std::string save_outputs;     // folder for NAME.npy files, empty: none
  int iters = 20;               // timed GPU runs
  std::string engine = "auto";  // auto, or one engine to prefer (the jit engine takes what it cannot)
  std::string tune = "heuristic";
  ExecutorOptions exec{"stream"};
};
int cmd_run(const Common& c, const RunOptions& o);

struct BuildOptions {
  std::string file;
  std::string output;
  std::string tune = "heuristic";
  std::string engine = "auto";
  bool no_fusion = false;
  bool unfolded_norms = false;
  bool megakernels = false;
  bool json = false;
};
int cmd_build(const Common& c, const BuildOptions& o);

struct InspectOptions {
  std::string file;
  bool json = false;
  bool mega = false;      // the megakernel segments of a mega-mode runner (needs a GPU)
  std::string dot_file;   // with mega: a Graphviz DOT of the task kernels
};
int cmd_inspect(const Common& c, const InspectOptions& o);

struct BenchOptions {
  std::string file;
  ExecutorOptions exec{"graph"};
  std::string trace_file;  // mega: a Chrome/Perfetto trace of one run after the timed ones
  std::string tune = "heuristic";
  std::string engine = "auto";
  int iters = 200;
  int warmup = 20;
  uint64_t seed = 1;
  bool json = false;
};
int cmd_bench(const Common& c, const BenchOptions& o);

struct ExplainOptions {
  std::string file;
  bool no_fusion = false;  // one region per node, to see the unfused plan
  bool unfolded_norms = false;  // FusionOptions::fold_norms_into_matmuls off
  // When set: the jit engine's generated CUDA source of every region is written there
  // (region<N>_v<candidate>_<k>.cu), for this GPU or an assumed H200.
  std::string kernels_dir;
  bool json = false;
  bool mega = false;      // the megakernel segments of the graph's plan (or a bundle's; needs a GPU)
  std::string dot_file;   // with mega: a Graphviz DOT of the task kernels
};
int cmd_explain(const Common& c, const ExplainOptions& o);

struct EnginesOptions {
  std::string file;
  int max_candidates = 8;  // per vendor engine
  bool json = false;
};
int cmd_engines(const Common& c, const EnginesOptions& o);

struct DemoOptions {
  std::string examples_dir;
  uint64_t seed = 1;
};
int cmd_demo(const Common& c, const DemoOptions& o);

// The arguments of `python -m sinter import` (python/sinter/cli.py), which the command runs.
struct ImportOptions {
  std::string model;                      // the ONNX model file
  std::string output;                     // -o: the graph file to write
  std::string name;                       // --name; "": the ONNX graph's name
  std::vector<std::string> input_shapes;  // --input-shape NAME=D0,D1,..., each as given
  std::string weights_out;                // --weights-out DIR; "": no weights written
  std::string python = "python3";         // --python: the interpreter (searched on PATH without a '/')
};
int cmd_import(const Common& c, const ImportOptions& o);

}  // namespace sinter::cli
