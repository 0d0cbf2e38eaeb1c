// What several commands share: the log and progress printing the verbosity asks for, building a
// plan from a graph (or loading a bundle), running a plan once on host inputs, timing it, and
// comparing outputs with the CPU reference. Everything goes through the public API.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "commands.hpp"
#include "sinter/sinter.hpp"

namespace sinter::cli {

// Prints the library's log lines to stderr: warnings and errors always (but under -q), info and
// debug under -v.
LogCallback stderr_log(const Common& c);

struct BuildChoices {
  std::string tune = "heuristic";
  std::string engine = "auto";
  bool no_fusion = false;
  bool megakernels = false;  // store the mega executor's megakernels in the plan
  bool unfolded_norms = false;  // FusionOptions::fold_norms_into_matmuls off
  // With engine "auto": our kernels only (engine jit), as virtual ranks need (every step a task
  // of the megakernel).
  bool our_kernels = false;
};
CompileOptions compile_options(const Common& c, const BuildChoices& b);

// A bundle (by its first bytes) or a graph file.
bool is_plan_bundle_file(const std::string& path);

struct LoadedPlan {
  Plan plan;
  bool from_bundle = false;
  double ms = 0;  // reading and checking the bundle, or compiling the graph
};
// A bundle is loaded (no compilation); a graph file is compiled with `b`.
LoadedPlan plan_from_file(const Common& c, const std::string& path, const BuildChoices& b);
// A graph already loaded, compiled with `b`.
LoadedPlan plan_from_graph(const Common& c, const Graph& g, const BuildChoices& b);

// Throws Error(unsupported) with the reason when there is no GPU.
void require_gpu(const char* what);

// The runner options of an executor choice; `trace`: the mega executor records every task.
// Error(invalid_argument) when a mega executor option comes with another executor.
RunnerOptions runner_options(const Common& c, const ExecutorOptions& e, bool trace = false);

// A runner of `plan` with device memory for its inputs and outputs, on its own stream. Every
// method that waits for the stream then calls Runner::check, so a megakernel watchdog stop
// surfaces as Error(timeout).
class PlanSession {
 public:
  PlanSession(const Plan& plan, const RunnerOptions& options);
  ~PlanSession();
  // Uploads, poisons outputs and intermediates, enqueues once, downloads: start, then finish.
  TensorMap run(const TensorMap& inputs);
  // The parts of run, for sessions that must all be enqueued before any is waited for (the
  // virtual ranks of one program): stage uploads and poisons, enqueue enqueues, start is both;
  // finish downloads.
  void stage(const TensorMap& inputs);
  void enqueue();
  void start(const TensorMap& inputs);
  TensorMap finish();
  // Milliseconds of each of `iters` enqueues (after `warmup`), CUDA events around each.
  std::vector<float> time(int iters, int warmup);
  // Median milliseconds of each step launched alone (Runner::time_steps).
  std::vector<float> time_steps(int iters);
  // One enqueue, waited for.
  void enqueue_and_wait();
  Runner& runner() { return runner_; }
  cudaStream_t stream() const { return stream_; }
  // Waits for the stream, then Runner::check.
  void wait_and_check();

 private:
  Runner runner_;
  DeviceTensors io_;
  cudaStream_t stream_ = nullptr;
};

// Milliseconds of each of `iters` enqueues of every session (after `warmup`), CUDA events around
// each, the sessions enqueued in turn before any is waited for: ranks that wait for each other.
std::vector<std::vector<float>> time_together(const std::vector<PlanSession*>& sessions, int iters, int warmup);

// One line per output: its relative L2 error against the reference and the bound; true when
// every output is within its bound.
bool print_comparison(const Graph& g, const TensorMap& got, const TensorMap& ref);

// The inputs: NAME.npy files from `folder` when given (each checked against the graph's input),
// else seeded random ones.
TensorMap load_or_random_inputs(const Graph& g, const std::string& folder, uint64_t seed);

// The world of a graph's collectives (1: none of world > 1), and their group; Error(unsupported)
// for collectives of several groups (run_ranks.cpp).
int graph_world(const Graph& g, std::string* group);
// cmd_run of one rank's program of `world`: the ranks' CPU reference and, with `plan`, the ranks
// as virtual ranks of one GPU (run_ranks.cpp); `plan_note`, when not empty, says how the plan was
// made.
int run_ranks(const Common& c, const RunOptions& o, const RunnerOptions& runner_opts, const Graph& g, const Plan* plan,
              int world, const std::string& group, const std::string& plan_note);

struct Percentiles {
  double min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
Percentiles percentiles(std::vector<float> ms);

}  // namespace sinter::cli
