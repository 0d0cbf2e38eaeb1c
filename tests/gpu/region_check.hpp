// The GPU-versus-reference check shared by the region tests: fresh random inputs (the seed is
// printed), outputs poisoned before the run, relative L2 error within the dtype's bound.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <random>

#include "gpu/gpu_test.hpp"
#include "gpu/test_plan.hpp"
#include "sinter/reference.hpp"

namespace sinter::testing {

inline uint64_t fresh_seed() {
  static std::mt19937_64 rng(std::random_device{}());
  return rng();
}

// The error of output `id` of `got` against the reference. The reference rounds every tensor
// (the unfused semantics, `want`); a fused kernel keeps intermediates in f32, and where a sum
// cancels after its terms were rounded (a 1x1 matmul + bias near zero: 0.00098 rounded against
// 0.00051 exact, seen on the H200) the two semantics differ by far more than the dtype's bound.
// So where `want` misses `bound`, the output is compared with the fused semantics too
// (ReferenceOptions::round_intermediates = false, computed once per input set into
// `fused_want`) and the smaller error counts. Given the plan's `steps`, the fused reference is the
// plan's own semantics (ReferenceOptions::fused_steps): a value read inside its step unrounded,
// one read by another step rounded, as it went through memory. That matters where a norm
// amplifies an ulp (a layernorm over 2 elements of which a fused step read one unrounded).
struct OutputError {
  double err = 0;
  bool fused_semantics = false;  // the smaller error is against the fused reference
};
inline OutputError output_error(const Graph& g, TensorId id, const TensorMap& inputs, const TensorMap& got,
                                const TensorMap& want, std::optional<TensorMap>& fused_want, double bound,
                                const std::vector<StepDescription>* steps = nullptr) {
  const std::string& name = g.tensor(id).name;
  OutputError e{relative_l2_error(got.at(name), want.at(name)), false};
  if (e.err <= bound) return e;
  if (!fused_want) {
    ReferenceOptions o;
    o.round_intermediates = false;
    if (steps) {
      for (const StepDescription& st : *steps) o.fused_steps.push_back(st.nodes);
    }
    fused_want = run_reference(g, inputs, o);
  }
  const double fused = relative_l2_error(got.at(name), fused_want->at(name));
  if (fused < e.err) e = {fused, true};
  return e;
}

class GpuRegions : public GpuTest {
 protected:
  // Compiles and runs `g` (test_plan.hpp) and the CPU reference and compares every output.
  // `bound_scale` loosens the bound for outputs that amplify rounding (long f32 sums);
  // `adjust` may overwrite some of the random inputs (special values such as -inf).
  void check(Graph g, double bound_scale = 1.0, CompileOptions opts = {},
             const std::function<void(TensorMap&)>& adjust = nullptr) {
    g.validate();
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("graph '" + g.name() + "', seed " + std::to_string(seed));
    TensorMap inputs = random_inputs(g, seed);
    if (adjust) adjust(inputs);
    const TensorMap want = run_reference(g, inputs);
    TestPlan ex(g, opts);
    const TensorMap got = ex.run(inputs);
    std::optional<TensorMap> fused_want;
    for (TensorId id : g.outputs()) {
      const TensorInfo& info = g.tensor(id);
      const double bound = relative_l2_bound(g, id) * bound_scale;
      const OutputError e = output_error(g, id, inputs, got, want, fused_want, bound, &ex.steps());
      std::printf("  %-28s %-8s %-18s rel L2 %.3g (bound %.3g)%s\n", (g.name() + "." + info.name).c_str(),
                  std::string(to_string(info.dtype)).c_str(), dims_to_string(info.dims).c_str(), e.err,
                  bound, e.fused_semantics ? " against the fused reference (intermediates unrounded)" : "");
      EXPECT_LE(e.err, bound) << "output '" << info.name << "'";
    }
  }

  // Runs an already compiled plan `runs` more times on fresh inputs and compares each with
  // the reference: workspace counters and exit accumulators must reset between launches.
  void check_reruns(TestPlan& ex, const Graph& g, double bound_scale = 1.0, int runs = 2) {
    for (int run = 0; run < runs; ++run) {
      const uint64_t seed = fresh_seed();
      SCOPED_TRACE("rerun " + std::to_string(run) + ", seed " + std::to_string(seed));
      const TensorMap inputs = random_inputs(g, seed);
      const TensorMap want = run_reference(g, inputs);
      const TensorMap got = ex.run(inputs);
      std::optional<TensorMap> fused_want;
      for (TensorId id : g.outputs()) {
        const double bound = relative_l2_bound(g, id) * bound_scale;
        EXPECT_LE(output_error(g, id, inputs, got, want, fused_want, bound, &ex.steps()).err, bound)
            << "output '" << g.tensor(id).name << "'";
      }
    }
  }
};

// Every output of `got` against the CPU reference of `inputs`, within its dtype's bound; prints
// each error.
inline void expect_matches_reference(const Graph& g, const TensorMap& inputs, const TensorMap& got) {
  const TensorMap want = run_reference(g, inputs);
  for (TensorId id : g.outputs()) {
    const std::string& name = g.tensor(id).name;
    const double err = relative_l2_error(got.at(name), want.at(name)), bound = relative_l2_bound(g, id);
    std::printf("  %-28s rel L2 %.3g (bound %.3g)\n", (g.name() + "." + name).c_str(), err, bound);
    EXPECT_LE(err, bound) << name;
  }
}

}  // namespace sinter::testing
