// Running a graph on the GPU from the CLI: the StreamExecutor, compared with the CPU reference.
#pragma once

#include <string>

#include "sinter/host_tensor.hpp"

namespace sinter::cli {

struct GpuRunReport {
  TensorMap outputs;
  std::string device;       // one line describing the GPU
  double median_ms = 0;     // of repeated launches of the whole graph
  int regions = 0, kernels_compiled = 0;
  double compile_ms = 0;
  std::string cache_stats;
  std::string plan;         // one line per step
  std::string tuning;       // what tuning timed, when it did
};

// Runs `g` on GPU 0 with the given inputs (outputs poisoned first) and times it.
GpuRunReport run_on_gpu(const Graph& g, const TensorMap& inputs, int timing_iters,
                        const std::string& engine = "auto", const std::string& tune = "heuristic");

// Prints each output's relative L2 error against the reference and whether it is within the
// dtype's bound (DESIGN.md); returns false when one is not.
bool print_comparison(const Graph& g, const TensorMap& gpu, const TensorMap& ref);

}  // namespace sinter::cli
