// Memory-bound benchmarks of the JIT engine: residual add + layernorm/rmsnorm, softmax, a 10-op
// pointwise chain with two broadcast operands; the cross-shape kernel cache (0 compilations at a
// new shape) and one cold compile. Each graph is compiled through the public API
// (bench_plan_timing.hpp) and timed as the median of CUDA-event-timed enqueues. Prints one JSON
// object per line for bench/report.py, which puts them beside PyTorch measured in the same run.
//
//   sinter_bench_memory [--quick] [--cases NAME,NAME,...]
//     --cases: only these (add_layernorm, add_layernorm+sum, add_rmsnorm, add_rmsnorm+sum,
//     softmax, pointwise_chain10, copy), for a device call short of time
//   sinter_bench_memory --save-graphs DIR   (writes the benchmark graphs as JSON, no GPU needed)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench_plan_timing.hpp"
#include "sinter/sinter.hpp"

using namespace sinter;
using bench::BenchPlan;

namespace {

double min_bytes(const Graph& g) { return graph_cost(g).min_bytes; }

Graph add_norm(int64_t rows, int64_t cols, bool rms, bool store_sum) {
  Graph g(rms ? "add_rmsnorm" : "add_layernorm");
  auto x = g.input("x", DType::bf16, {rows, cols});
  auto r = g.input("res", DType::bf16, {rows, cols});
  auto w = g.input("w", DType::bf16, {cols});
  auto sum = g.add(x, r);
  if (store_sum) g.output(sum, "sum");
  if (rms) {
    g.output(g.rmsnorm(sum, w, std::nullopt, 1e-6), "y");
  } else {
    auto b = g.input("b", DType::bf16, {cols});
    g.output(g.layernorm(sum, w, b, 1e-5), "y");
  }
  return g;
}

Graph softmax(int64_t rows, int64_t cols) {
  Graph g("softmax");
  auto x = g.input("x", DType::bf16, {rows, cols});
  g.output(g.softmax(x), "y");
  return g;
}

// Ten pointwise ops over x with a row bias and a column scale (two broadcast operands).
Graph chain(int64_t rows, int64_t cols) {
  Graph g("pointwise_chain10");
  auto x = g.input("x", DType::bf16, {rows, cols});
  auto bias = g.input("bias", DType::bf16, {cols});
  auto scale = g.input("scale", DType::bf16, {rows, 1});
  auto h = g.add(x, bias);    // 1
  h = g.mul(h, scale);        // 2
  h = g.mul(h, 0.5);          // 3
  h = g.add(h, 1.0);          // 4
  h = g.relu(h);              // 5
  h = g.square(h);            // 6
  h = g.min(h, 4.0);          // 7
  h = g.sub(h, 0.25);         // 8
  h = g.abs(h);               // 9
  h = g.max(h, 0.0625);       // 10
  g.output(h, "y");
  return g;
}

// A plain copy through our pointwise kernel style (identity: load a vector, store it): the
// ceiling of the chain's kernel shape, next to cudaMemcpy of the same bytes in the same process.
Graph copy_region(int64_t rows, int64_t cols) {
  Graph g("copy_bf16");
  auto x = g.input("x", DType::bf16, {rows, cols});
  g.output(g.identity(x), "y");
  return g;
}

// Median milliseconds of a device-to-device cudaMemcpy of `bytes` (read + written: 2 * bytes),
// timed as our plans are (bench::time_calls, after 3 untimed copies).
double memcpy_ms(size_t bytes, int iters) {
  void* a = nullptr;
  void* b = nullptr;
  bench::check_cuda(cudaMalloc(&a, bytes), "cudaMalloc");
  bench::check_cuda(cudaMalloc(&b, bytes), "cudaMalloc");
  bench::check_cuda(cudaMemset(a, 1, bytes), "cudaMemset");
  auto copy = [&] {
    bench::check_cuda(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync");
  };
  for (int i = 0; i < 3; ++i) copy();
  const double ms = bench::median(bench::time_calls(nullptr, iters, copy));
  cudaFree(a);
  cudaFree(b);
  return ms;
}

void report(const char* name, const Graph& g, double ms, const std::string& extra = "") {
  const double tbps = min_bytes(g) / (ms * 1e-3) / 1e12;
  std::printf("{\"case\": \"%s\", \"engine\": \"sinter\", \"ms\": %.5f, \"bytes\": %.0f, \"tbps\": %.4f%s}\n",
              name, ms, min_bytes(g), tbps, extra.c_str());
  std::fflush(stdout);
}

// What the kernel caches did over every compile of the run (each compile() opens the cache
// folder anew: kernels compiled by an earlier compile are disk hits).
struct CacheTally {
  int plans = 0, compiles = 0, hits = 0;
  double nvrtc_ms = 0;
  void add(const PlanDescription& d) {
    if (!d.compile) return;
    ++plans;
    compiles += d.compile->kernels_compiled;
    hits += d.compile->kernel_cache_hits;
    nvrtc_ms += d.compile->nvrtc_ms;
  }
  std::string text() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "kernel cache over %d compiles: %d hits (memory and disk), %d compiles (%.1f ms)",
                  plans, hits, compiles, nvrtc_ms);
    return buf;
  }
};

// Median milliseconds of the whole graph on fresh random inputs (correctness of these regions is
// the GPU tests' job, at shapes the CPU reference can check).
// `inputs`: generated once per case and shared by its runs (filling 2^28 elements on the host
// takes seconds, and the device call has a time limit).
double timed(const Graph& g, const CompileOptions& options, int iters, const TensorMap& inputs, CacheTally& tally) {
  BenchPlan p(g, options);
  tally.add(p.description());
  p.upload(inputs);
  return p.time_ms(iters, 3);
}

// Times every candidate of every region (exhaustive tuning) and prints one line per candidate,
// so the table shows what the heuristic default leaves on the table; returns the tuned graph's
// median time. A candidate's number is its rank in its engine's list (exhaustive tuning times
// each engine's candidates in rank order).
double tuned(const char* name, const Graph& g, CompileOptions options, int iters, const TensorMap& inputs,
             CacheTally& tally) {
  options.tuning = TuneMode::exhaustive;
  options.timing_repeats = iters;
  // Every candidate's correctness is the GPU tests' job (GpuRegions.RowwiseCandidatesEachCorrect);
  // comparing 256 MB outputs on the host per candidate would cost the benchmark minutes.
  options.check_outputs = false;
  BenchPlan p(g, options);
  tally.add(p.description());
  for (const StepDescription& s : p.steps()) {
    std::map<std::string, int> rank;  // by engine
    for (const CandidateTiming& t : s.tried) {
      const int index = rank[t.engine]++;
      std::printf("{\"case\": \"%s\", \"engine\": \"sinter-candidate\", \"region\": %d, "
                  "\"candidate\": \"%s %d: %s\", \"ms\": %.5f%s}\n",
                  name, s.index, t.engine.c_str(), index, t.description.c_str(), t.median_ms,
                  t.skipped.empty() ? "" : (", \"skipped\": \"" + t.skipped + "\"").c_str());
    }
  }
  p.upload(inputs);
  return p.time_ms(iters, 3);
}

// The short runs at new shapes and the cold compile need their own inputs.
double timed(const Graph& g, const CompileOptions& options, int iters, CacheTally& tally) {
  return timed(g, options, iters, random_inputs(g, 11), tally);
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: sinter_bench_memory [--quick] [--cases LIST]   (needs a GPU)\n"
               "       sinter_bench_memory --save-graphs DIR        (the benchmark graphs as JSON, no GPU needed)\n"
               "  --quick        10 timed runs per case instead of 50\n"
               "  --cases LIST   only these, comma-separated: add_layernorm, add_layernorm+sum, add_rmsnorm,\n"
               "                 add_rmsnorm+sum, softmax, pointwise_chain10, copy\n");
}

}  // namespace

int main(int argc, char** argv) {
  // line-buffered even into a file: a run cut short by a timeout keeps every finished line
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc > 2 && std::strcmp(argv[1], "--save-graphs") == 0) {
    const std::string dir = argv[2];
    std::filesystem::create_directories(dir);
    save_graph_file(add_norm(16384, 8192, false, false), dir + "/add_layernorm.json");
    save_graph_file(add_norm(16384, 8192, true, false), dir + "/add_rmsnorm.json");
    save_graph_file(softmax(16384, 8192), dir + "/softmax.json");
    save_graph_file(chain(16384, 16384), dir + "/pointwise_chain10.json");
    return 0;
  }
  bool quick = false;
  std::string cases;  // comma-separated; empty: all
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--cases") == 0 && i + 1 < argc) {
      cases = "," + std::string(argv[++i]) + ",";
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "sinter_bench_memory: unknown argument '%s' (expected --quick, --cases LIST, "
                           "--save-graphs DIR)\n", argv[i]);
      return 2;
    }
  }
  auto wanted = [&](const std::string& name) { return cases.empty() || cases.find("," + name + ",") != std::string::npos; };
  if (!bench::have_gpu("sinter_bench_memory")) return 1;
  try {
    const int iters = quick ? 10 : 50;
    const bench::ScratchDir cache_dir("sinter_bench_cache_");
    CompileOptions options;
    options.kernel_cache_dir = cache_dir.str();
    CacheTally tally;
    const int64_t rows = 16384, cols = 8192;

    // The norms first (a time-limited device call keeps what ran), the +sum forms last.
    auto norm_case = [&](bool rms, bool store_sum) {
      const std::string name = std::string(rms ? "add_rmsnorm" : "add_layernorm") + (store_sum ? "+sum" : "");
      if (!wanted(name)) return;
      const Graph g = add_norm(rows, cols, rms, store_sum);
      const TensorMap inputs = random_inputs(g, 11);
      report(name.c_str(), g, timed(g, options, iters, inputs, tally));
      report((name + "/tuned").c_str(), g, tuned(name.c_str(), g, options, iters, inputs, tally));
    };
    norm_case(false, false);
    norm_case(true, false);
    if (wanted("softmax")) {
      const Graph g = softmax(rows, cols);
      const TensorMap inputs = random_inputs(g, 11);
      report("softmax", g, timed(g, options, iters, inputs, tally));
      report("softmax/tuned", g, tuned("softmax", g, options, iters, inputs, tally));
    }
    if (wanted("pointwise_chain10")) {
      const Graph g = chain(16384, 16384);  // 2^28 elements
      const TensorMap inputs = random_inputs(g, 11);
      report("pointwise_chain10", g, timed(g, options, iters, inputs, tally));
      report("pointwise_chain10/tuned", g, tuned("pointwise_chain10", g, options, iters, inputs, tally));
    }
    if (wanted("copy")) {
      // Diagnostics: our pointwise kernel style as a plain copy, and cudaMemcpy, at the chain's size.
      const Graph g = copy_region(16384, 16384);
      const TensorMap inputs = random_inputs(g, 11);
      report("copy_pointwise", g, timed(g, options, iters, inputs, tally));
      report("copy_pointwise/tuned", g, tuned("copy_pointwise", g, options, iters, inputs, tally));
      const size_t bytes = size_t{16384} * 16384 * 2;
      const double ms = memcpy_ms(bytes, iters);
      std::printf("{\"case\": \"copy_cudaMemcpy\", \"engine\": \"cuda\", \"ms\": %.5f, \"bytes\": %.0f, "
                  "\"tbps\": %.4f}\n", ms, 2.0 * bytes, 2.0 * bytes / (ms * 1e-3) / 1e12);
    }
    norm_case(false, true);
    norm_case(true, true);
    // The same regions at new shapes: the kernel cache must serve them with no compilation (only
    // meaningful when every case ran first).
    if (cases.empty()) {
      CacheTally new_shapes;
      timed(add_norm(4096, 8192, false, true), options, 2, new_shapes);
      timed(chain(3000, 5000), options, 2, new_shapes);
      timed(softmax(1000, 8192), options, 2, new_shapes);
      std::printf("{\"case\": \"new_shape_compilations\", \"engine\": \"sinter\", \"value\": %d}\n",
                  new_shapes.compiles);
      tally.plans += new_shapes.plans;
      tally.compiles += new_shapes.compiles;
      tally.hits += new_shapes.hits;
      tally.nvrtc_ms += new_shapes.nvrtc_ms;
    }
    // One cold compile: a fresh, empty kernel cache folder, a region never compiled in this
    // process. Timed from the graph to a plan ready to run: compile() and the Runner's
    // construction (loading its kernels, allocating its memory).
    {
      const bench::ScratchDir cold_dir("sinter_bench_cold_cache_");
      CompileOptions cold;
      cold.kernel_cache_dir = cold_dir.str();
      const Graph g = add_norm(64, 8192, true, true);
      const auto t0 = std::chrono::steady_clock::now();
      const Plan plan = compile(g, cold);
      const Runner runner(plan);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const PlanDescription d = plan.describe();
      std::printf("{\"case\": \"cold_compile_add_rmsnorm\", \"engine\": \"sinter\", \"ms\": %.1f, "
                  "\"nvrtc_ms\": %.1f}\n", ms, d.compile ? d.compile->nvrtc_ms : 0.0);
    }
    std::printf("{\"case\": \"kernel_cache\", \"engine\": \"sinter\", \"stats\": \"%s\"}\n", tally.text().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinter_bench_memory: %s\n", e.what());
    return 1;
  }
}
