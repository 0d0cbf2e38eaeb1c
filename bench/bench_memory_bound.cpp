// Memory-bound benchmarks of the JIT engine (issue: GPU path): residual add + layernorm/rmsnorm,
// softmax, a 10-op pointwise chain with two broadcast operands; the cross-shape kernel cache
// (0 compilations at a new shape) and one cold compile. Prints one JSON object per line for
// bench/report.py, which puts them beside PyTorch measured in the same run.
//
//   sinter_bench_memory [--quick] [--cases NAME,NAME,...]
//     --cases: only these (add_layernorm, add_layernorm+sum, add_rmsnorm, add_rmsnorm+sum,
//     softmax, pointwise_chain10, copy), for a device call short of time
//   sinter_bench_memory --save-graphs DIR   (writes the benchmark graphs as JSON, no GPU needed)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda/buffer.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "cuda/timing.hpp"
#include "cuda/buffer.hpp"
#include "sinter/json.hpp"
#include "sinter/reference.hpp"

using namespace sinter;

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
// timed as our kernels are (cuda::time_calls, after 3 untimed copies).
double memcpy_ms(size_t bytes, int iters) {
  cuda::DeviceBuffer a(bytes), b(bytes);
  SINTER_CUDA_CHECK(cudaMemset(a.data(), 1, bytes));
  auto copy = [&] { SINTER_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, nullptr)); };
  for (int i = 0; i < 3; ++i) copy();
  std::vector<float> ms = cuda::time_calls(nullptr, iters, copy);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void report(const char* name, const Graph& g, double ms, const std::string& extra = "") {
  const double tbps = min_bytes(g) / (ms * 1e-3) / 1e12;
  std::printf("{\"case\": \"%s\", \"engine\": \"sinter\", \"ms\": %.5f, \"bytes\": %.0f, \"tbps\": %.4f%s}\n",
              name, ms, min_bytes(g), tbps, extra.c_str());
  std::fflush(stdout);
}

// Median milliseconds of the whole graph on fresh random inputs (correctness of these regions is
// the GPU tests' job, at shapes the CPU reference can check).
// `inputs`: generated once per case and shared by its runs (filling 2^28 elements on the host
// takes seconds, and the device call has a time limit).
double timed(Graph g, cuda::KernelCache& cache, int iters, const TensorMap& inputs) {
  StreamExecutor ex(std::move(g), cache);
  ex.set_inputs(inputs);
  return ex.time_ms(iters, 3);
}

// Times every candidate of every region (exhaustive tuning) and prints one line per candidate,
// so the table shows what the heuristic default leaves on the table; returns the tuned graph's
// median time.
double tuned(const char* name, Graph g, cuda::KernelCache& cache, int iters, const TensorMap& inputs) {
  ExecutorOptions opts;
  opts.tuning.mode = tune::TuneMode::exhaustive;
  opts.tuning.repeats = iters;
  // Every candidate's correctness is the GPU tests' job (GpuRegions.RowwiseCandidatesEachCorrect);
  // comparing 256 MB outputs on the host per candidate would cost the benchmark minutes.
  opts.tuning.check_outputs = false;
  StreamExecutor ex(std::move(g), cache, opts);
  for (const tune::Choice& c : ex.tune_report().choices) {
    for (const tune::CandidateTime& t : c.tried) {
      std::printf("{\"case\": \"%s\", \"engine\": \"sinter-candidate\", \"region\": %d, "
                  "\"candidate\": \"%s %d: %s\", \"ms\": %.5f%s}\n",
                  name, c.region, t.engine.c_str(), t.index, t.description.c_str(), t.median_ms,
                  t.skipped.empty() ? "" : (", \"skipped\": \"" + t.skipped + "\"").c_str());
    }
  }
  ex.set_inputs(inputs);
  return ex.time_ms(iters, 3);
}

// The short runs at new shapes and the cold compile need their own inputs.
double timed(Graph g, cuda::KernelCache& cache, int iters) {
  const TensorMap inputs = random_inputs(g, 11);
  return timed(std::move(g), cache, iters, inputs);
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
    } else {
      std::fprintf(stderr, "sinter_bench_memory: unknown argument '%s' (expected --quick, --cases LIST, "
                           "--save-graphs DIR)\n", argv[i]);
      return 2;
    }
  }
  auto wanted = [&](const std::string& name) { return cases.empty() || cases.find("," + name + ",") != std::string::npos; };
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  if (!gpu.available) {
    std::fprintf(stderr, "sinter_bench_memory: no GPU: %s\n", gpu.reason.c_str());
    return 1;
  }
  const int iters = quick ? 10 : 50;
  const std::filesystem::path cache_dir =
      std::filesystem::temp_directory_path() / ("sinter_bench_cache_" + std::to_string(::getpid()));
  cuda::KernelCache cache(cache_dir);
  const int64_t rows = 16384, cols = 8192;

  // The targets first (a time-limited device call keeps what ran), the +sum forms last.
  auto norm_case = [&](bool rms, bool store_sum) {
    const std::string name = std::string(rms ? "add_rmsnorm" : "add_layernorm") + (store_sum ? "+sum" : "");
    if (!wanted(name)) return;
    Graph g = add_norm(rows, cols, rms, store_sum);
    const Graph copy = g;
    const TensorMap inputs = random_inputs(g, 11);
    report(name.c_str(), copy, timed(Graph(g), cache, iters, inputs));
    report((name + "/tuned").c_str(), copy, tuned(name.c_str(), std::move(g), cache, iters, inputs));
  };
  norm_case(false, false);
  norm_case(true, false);
  if (wanted("softmax")) {
    Graph g = softmax(rows, cols);
    const Graph copy = g;
    const TensorMap inputs = random_inputs(g, 11);
    report("softmax", copy, timed(Graph(g), cache, iters, inputs));
    report("softmax/tuned", copy, tuned("softmax", std::move(g), cache, iters, inputs));
  }
  if (wanted("pointwise_chain10")) {
    Graph g = chain(16384, 16384);  // 2^28 elements
    const Graph copy = g;
    const TensorMap inputs = random_inputs(g, 11);
    report("pointwise_chain10", copy, timed(Graph(g), cache, iters, inputs));
    report("pointwise_chain10/tuned", copy, tuned("pointwise_chain10", std::move(g), cache, iters, inputs));
  }
  if (wanted("copy")) {
    // Diagnostics: our pointwise kernel style as a plain copy, and cudaMemcpy, at the chain's size.
    Graph g = copy_region(16384, 16384);
    const Graph copy = g;
    const TensorMap inputs = random_inputs(g, 11);
    report("copy_pointwise", copy, timed(Graph(g), cache, iters, inputs));
    report("copy_pointwise/tuned", copy, tuned("copy_pointwise", std::move(g), cache, iters, inputs));
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
    const auto before = cache.stats().misses;
    Graph a = add_norm(4096, 8192, false, true);
    Graph b = chain(3000, 5000);
    Graph c = softmax(1000, 8192);
    timed(std::move(a), cache, 2);
    timed(std::move(b), cache, 2);
    timed(std::move(c), cache, 2);
    const auto compiles = cache.stats().misses - before;
    std::printf("{\"case\": \"new_shape_compilations\", \"engine\": \"sinter\", \"value\": %llu}\n",
                static_cast<unsigned long long>(compiles));
  }
  // One cold compile: a fresh memory-only cache, a region never compiled in this process.
  {
    cuda::KernelCache cold("");
    Graph g = add_norm(64, 8192, true, true);
    const auto t0 = std::chrono::steady_clock::now();
    StreamExecutor ex(std::move(g), cold);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"case\": \"cold_compile_add_rmsnorm\", \"engine\": \"sinter\", \"ms\": %.1f, "
                "\"nvrtc_ms\": %.1f}\n", ms, cold.stats().compile_ms);
  }
  std::printf("{\"case\": \"kernel_cache\", \"engine\": \"sinter\", \"stats\": \"%s\"}\n",
              cuda::to_string(cache.stats()).c_str());
  std::filesystem::remove_all(cache_dir);
  return 0;
}
