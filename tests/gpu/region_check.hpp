// The GPU-versus-reference check shared by the region tests: fresh random inputs (the seed is
// printed), outputs poisoned before the run, relative L2 error within the dtype's bound.
#pragma once

#include <cstdio>
#include <functional>
#include <random>

#include "exec/stream_executor.hpp"
#include "gpu/gpu_test.hpp"
#include "sinter/reference.hpp"

namespace sinter::testing {

inline uint64_t fresh_seed() {
  static std::mt19937_64 rng(std::random_device{}());
  return rng();
}

inline cuda::KernelCache& shared_cache() {
  static cuda::KernelCache cache("");  // memory only: tests must not depend on disk state
  return cache;
}

class GpuRegions : public GpuTest {
 protected:
  // Runs `g` through the StreamExecutor and the CPU reference and compares every output.
  // `bound_scale` loosens the bound for outputs that amplify rounding (long f32 sums);
  // `adjust` may overwrite some of the random inputs (special values such as -inf).
  void check(Graph g, double bound_scale = 1.0, ExecutorOptions opts = {},
             const std::function<void(TensorMap&)>& adjust = nullptr) {
    g.validate();
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("graph '" + g.name() + "', seed " + std::to_string(seed));
    TensorMap inputs = random_inputs(g, seed);
    if (adjust) adjust(inputs);
    const TensorMap want = run_reference(g, inputs);
    StreamExecutor ex(g, shared_cache(), opts);
    const TensorMap got = ex.run(inputs);
    for (TensorId id : g.outputs()) {
      const TensorInfo& info = g.tensor(id);
      const double err = relative_l2_error(got.at(info.name), want.at(info.name));
      const double bound = relative_l2_bound(g, id) * bound_scale;
      std::printf("  %-28s %-8s %-18s rel L2 %.3g (bound %.3g)\n", (g.name() + "." + info.name).c_str(),
                  std::string(to_string(info.dtype)).c_str(), dims_to_string(info.dims).c_str(), err,
                  bound);
      EXPECT_LE(err, bound) << "output '" << info.name << "'";
    }
  }

  // Runs an already prepared executor `runs` more times on fresh inputs and compares each with
  // the reference: workspace counters and exit accumulators must reset between launches.
  void check_reruns(StreamExecutor& ex, const Graph& g, double bound_scale = 1.0, int runs = 2) {
    for (int run = 0; run < runs; ++run) {
      const uint64_t seed = fresh_seed();
      SCOPED_TRACE("rerun " + std::to_string(run) + ", seed " + std::to_string(seed));
      const TensorMap inputs = random_inputs(g, seed);
      const TensorMap want = run_reference(g, inputs);
      const TensorMap got = ex.run(inputs);
      for (TensorId id : g.outputs()) {
        const TensorInfo& info = g.tensor(id);
        const double err = relative_l2_error(got.at(info.name), want.at(info.name));
        EXPECT_LE(err, relative_l2_bound(g, id) * bound_scale) << "output '" << info.name << "'";
      }
    }
  }
};

}  // namespace sinter::testing
