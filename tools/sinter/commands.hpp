// The subcommands of the `sinter` tool. Each takes its parsed options and returns the exit code;
// errors are thrown as sinter::Error and reported by main().
#pragma once

#include <cstdint>
#include <string>

namespace sinter::cli {

struct CheckOptions {
  std::string file;
  bool quiet = false;  // only the one-line verdict
};
int cmd_check(const CheckOptions& o);

struct RunOptions {
  std::string file;
  uint64_t seed = 1;
  std::string device = "auto";  // auto | cpu | gpu
  std::string save_outputs;     // folder for NAME.npy files, empty: none
  int iters = 20;               // timed GPU runs
  std::string engine = "auto";  // auto | jit | cublaslt | cudnn
  std::string tune = "heuristic";  // heuristic | fast | exhaustive
  std::string executor;            // "": the StreamExecutor on a graph; stream | graph: through a plan
};
int cmd_run(const RunOptions& o);
int cmd_run_plan(const RunOptions& o);  // a bundle, or any file with --executor

struct BuildOptions {
  std::string file;
  std::string output;
  std::string tune = "heuristic";
  std::string engine = "auto";
  bool no_fusion = false;
};
int cmd_build(const BuildOptions& o);

struct InspectOptions {
  std::string file;
};
int cmd_inspect(const InspectOptions& o);

struct BenchOptions {
  std::string file;
  std::string executor = "graph";
  std::string tune = "heuristic";
  std::string engine = "auto";
  int iters = 200;
  int warmup = 20;
  uint64_t seed = 1;
  bool json = false;
};
int cmd_bench(const BenchOptions& o);

struct ExplainOptions {
  std::string file;
  bool no_fusion = false;  // one region per node, to see the unfused plan
  // When set: the jit engine's generated CUDA source of every region is written there
  // (region<N>_v<candidate>_<k>.cu), for an assumed H200 (sm_90a, 132 SMs) at the graph's shapes.
  std::string kernels_dir;
};
int cmd_explain(const ExplainOptions& o);

struct EnginesOptions {
  std::string file;
  int max_candidates = 8;  // per vendor engine
};
int cmd_engines(const EnginesOptions& o);

struct DemoOptions {
  std::string examples_dir;
  uint64_t seed = 1;
};
int cmd_demo(const DemoOptions& o);

}  // namespace sinter::cli
