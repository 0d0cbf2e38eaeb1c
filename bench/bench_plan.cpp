// Plan benchmarks (issue 6), on GPU 0:
//   1. launch cost: a chain of 200 dependent pointwise ops over 1024 f32 values, unfused, so
//      launch overhead dominates; microseconds per op through the stream executor (one launch per
//      op) and the graph executor (one graph replay). Acceptance: graph <= 1.3 us per op.
//   2. load to first result of the transformer-block example from a saved bundle: read + check
//      the bundle, load the steps (cubins, cuBLASLt configs), copy inputs, run, copy outputs.
//      Measured in a process whose CUDA context already exists. Acceptance: <= 10 ms.
//   3. rebinding new input/output pointers in a graph executor: cudaGraphExecUpdate from a fresh
//      recording versus capturing and instantiating again.
//   4. the Llama-style decode stack (16 layers, d 2048, ffn 8192, GQA 32/8, cache 1024, batch 1,
//      ~1.98 GB of bf16 weights and cache): build, save, load, run, checked against the CPU
//      reference; one decode step through the stream and graph executors. bench/torch_decode_stack.py
//      times the same model in PyTorch (eager and CUDA graph) for the same run.
// Every run's outputs are checked against the CPU reference once; a mismatch fails the program.
//   sinter_bench_plan [--runs N] [--tuned] [--chain-only]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/event.hpp"
#include "cuda/kernel_cache.hpp"
#include "cuda/sha256.hpp"
#include "example_graphs.hpp"
#include "gpu/plan_graphs.hpp"
#include "plan/bundle.hpp"
#include "tune/timing_cache.hpp"
#include "sinter/error.hpp"
#include "sinter/reference.hpp"

using namespace sinter;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double wall_ms(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool matches(const Graph& g, const TensorMap& inputs, const TensorMap& got, const char* label) {
  const TensorMap want = run_reference(g, inputs);
  bool ok = true;
  for (TensorId id : g.outputs()) {
    const TensorInfo& t = g.tensor(id);
    const double err = relative_l2_error(got.at(t.name), want.at(t.name));
    const bool pass = err <= relative_l2_bound(g, id);
    ok = ok && pass;
    std::printf("   check %-8s %-22s rel L2 %.3g %s\n", label, (g.name() + "." + t.name).c_str(), err, pass ? "ok" : "FAIL");
  }
  return ok;
}

plan::Plan make_plan(const Graph& g, const fuse::FusionOptions& fusion, cuda::KernelCache& cache,
                     tune::TimingCache* timings = nullptr) {
  ExecutorOptions opts;
  opts.fusion = fusion;
  opts.for_plan = true;
  if (timings) {  // tuned: the top candidates of every engine timed per region (identical layers hit the cache)
    opts.tuning.mode = tune::TuneMode::fast;
    opts.timing_cache = timings;
  }
  StreamExecutor ex(g, cache, opts);
  return build_plan(ex, "sinter_bench_plan");
}

// Milliseconds of `batch` back-to-back runs between two events; the median of `runs` batches.
double batch_ms(cudaStream_t s, int batch, int runs, const std::function<void()>& launch) {
  cuda::Event start, stop;
  for (int i = 0; i < 3; ++i) launch();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    start.record(s);
    for (int i = 0; i < batch; ++i) launch();
    stop.record(s);
    stop.synchronize();
    t.push_back(cuda::elapsed_ms(start, stop));
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  // line-buffered even into a file: a run cut short by a timeout keeps every finished line
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int runs = 21;
  bool tuned = false;
  bool chain_only = false;  // only part 1 (to compare launch settings, e.g. SINTER_PDL=0)  // also build the decode stack with --tune fast (minutes: every distinct region timed)
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = std::max(3, std::atoi(argv[++i]));
    if (std::strcmp(argv[i], "--tuned") == 0) tuned = true;
    if (std::strcmp(argv[i], "--chain-only") == 0) chain_only = true;
  }
  try {
    const cuda::GpuAvailability& gpu = cuda::gpu_availability();
    if (!gpu.available) {
      std::printf("sinter_bench_plan: no GPU (%s); nothing measured\n", gpu.reason.c_str());
      return 0;
    }
    cuda::set_device(0);
    std::printf("device: %s\n", cuda::describe(cuda::device_properties(0)).c_str());
    cuda::KernelCache cache("");  // memory only: build-time compiles do not touch the disk cache
    bool ok = true;

    // 1. Launch cost of a 200-op unfused chain.
    const int ops = 200;
    const Graph chain = testing::pointwise_chain(ops, 1024);
    PlanExecutor chain_ex(make_plan(chain, testing::no_fusion(), cache));
    const TensorMap chain_in = random_inputs(chain, 7);
    ok &= matches(chain, chain_in, chain_ex.run(chain_in), "stream");
    GraphExecutor chain_graph(chain_ex);
    chain_ex.poison();
    chain_graph.replay();
    ok &= matches(chain, chain_in, chain_ex.outputs(), "graph");
    const int batch = 20;
    const double stream_ms = batch_ms(chain_ex.stream(), batch, runs, [&] { chain_ex.launch(); });
    const double graph_ms = batch_ms(chain_ex.stream(), batch, runs, [&] { chain_graph.replay(); });
    std::printf("1. %d dependent pointwise ops x 1024 f32, unfused (%zu graph nodes), %d back-to-back runs, median of %d:\n",
                ops, chain_graph.node_count(), batch, runs);
    std::printf("   stream executor  %.3f us/op  (%.1f us per run)\n", stream_ms * 1e3 / (batch * ops), stream_ms * 1e3 / batch);
    std::printf("   graph executor   %.3f us/op  (%.1f us per run)   acceptance <= 1.3 us/op: %s\n",
                graph_ms * 1e3 / (batch * ops), graph_ms * 1e3 / batch, graph_ms * 1e3 / (batch * ops) <= 1.3 ? "met" : "NOT met");

    if (chain_only) {
      std::printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
      return ok ? 0 : 1;
    }
    // 2. Transformer block: load to first result from a bundle.
    const Graph block = examples::transformer_block();
    const std::string file = (std::filesystem::temp_directory_path() / ("sinter_bench_plan_" + std::to_string(::getpid()) + ".plan")).string();
    plan::save_plan_bundle(make_plan(block, {}, cache), file);
    const TensorMap block_in = random_inputs(block, 11);
    const cuda::KernelCacheStats before = cache.stats();
    std::vector<double> load_ms;
    // Where the time goes, phase by phase: the work of ex.run timed in parts, whose sum is the
    // load-to-first-result time (the poison fill of run() is done untimed; it is a test aid).
    std::vector<double> read_ms, steps_ms, upload_ms, gpu_ms, download_ms;
    std::vector<std::string> notes;  // of the last load: how each vendor step was rebuilt, in how long
    TensorMap first;
    for (int r = 0; r < std::min(runs, 11); ++r) {
      plan::Plan loaded;
      read_ms.push_back(wall_ms([&] { loaded = plan::load_plan_bundle(file); }));
      std::unique_ptr<PlanExecutor> ex;
      steps_ms.push_back(wall_ms([&] { ex = std::make_unique<PlanExecutor>(std::move(loaded)); }));
      upload_ms.push_back(wall_ms([&] { ex->set_inputs(block_in); cudaStreamSynchronize(ex->stream()); }));
      ex->poison();  // untimed: so an output the plan fails to write cannot pass the check below
      cudaStreamSynchronize(ex->stream());
      gpu_ms.push_back(wall_ms([&] { ex->launch(); cudaStreamSynchronize(ex->stream()); }));
      download_ms.push_back(wall_ms([&] { first = ex->outputs(); }));
      notes = ex->load_notes();
      load_ms.push_back(read_ms.back() + steps_ms.back() + upload_ms.back() + gpu_ms.back() + download_ms.back());
    }
    const cuda::KernelCacheStats after = cache.stats();
    const bool no_compiles = after.misses == before.misses && after.memory_hits == before.memory_hits && after.disk_hits == before.disk_hits;
    ok &= matches(block, block_in, first, "loaded") && no_compiles;
    std::printf("2. transformer block, bundle %s (%ju bytes): load to first result first %.2f ms, median %.2f ms of %zu; "
                "kernel cache requests during loads: %s   acceptance <= 10 ms: %s\n",
                file.c_str(), static_cast<uintmax_t>(std::filesystem::file_size(file)), load_ms.front(), median(load_ms),
                load_ms.size(), no_compiles ? "none (0 compilations)" : "SOME", median(load_ms) <= 10 ? "met" : "NOT met");
    std::printf("   phases (medians): bundle read + checked %.2f ms, steps loaded %.2f ms, inputs uploaded %.2f ms, "
                "launch + run %.2f ms, outputs copied back %.2f ms\n",
                median(read_ms), median(steps_ms), median(upload_ms), median(gpu_ms), median(download_ms));
    for (const std::string& n : notes) std::printf("   last load: %s\n", n.c_str());
    {
      // Inside "bundle read + checked": the file read alone, one SHA-256 pass over all of it (the
      // checksums hash each byte once), and the parse + checks from memory.
      std::vector<double> file_ms, hash_ms, parse_ms;
      for (int r = 0; r < std::min(runs, 11); ++r) {
        std::vector<char> bytes;
        file_ms.push_back(wall_ms([&] {
          std::FILE* f = std::fopen(file.c_str(), "rb");
          bytes.resize(std::filesystem::file_size(file));
          if (!f || std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) throw Error(ErrorCode::io, "read " + file);
          std::fclose(f);
        }));
        hash_ms.push_back(wall_ms([&] { (void)cuda::sha256(bytes.data(), bytes.size()); }));
        parse_ms.push_back(wall_ms([&] { (void)plan::load_plan_bundle(bytes, file); }));
      }
      std::printf("   bundle read + checked, in parts (medians): file read %.2f ms, SHA-256 of all bytes %.2f ms "
                  "(SHA extensions: %s), parse + checks from memory %.2f ms\n",
                  median(file_ms), median(hash_ms), cuda::sha256_uses_cpu_extensions() ? "yes" : "no", median(parse_ms));
      // Inside "launch + run": each step's first launch on a fresh load, synchronized one by one
      // (lazy module loading and vendor first-call costs land here).
      plan::Plan loaded = plan::load_plan_bundle(file);
      PlanExecutor ex(std::move(loaded));
      ex.set_inputs(block_in);
      cudaStreamSynchronize(ex.stream());
      std::string line = "   first launch per step (ms, synchronized):";
      for (size_t i = 0; i < ex.plan().steps.size(); ++i) {
        const double ms = wall_ms([&] { ex.launch_step(i, ex.stream()); cudaStreamSynchronize(ex.stream()); });
        char buf[96];
        std::snprintf(buf, sizeof buf, " %zu:%s %.3f", i, ex.plan().steps[i].engine.c_str(), ms);
        line += buf;
      }
      const double again = wall_ms([&] { ex.launch(); cudaStreamSynchronize(ex.stream()); });
      std::printf("%s; the whole plan again %.3f ms\n", line.c_str(), again);
    }
    std::filesystem::remove(file);

    // 3. Rebinding: exec update versus capture + instantiate, for both graphs.
    for (PlanExecutor* ex : {&chain_ex, static_cast<PlanExecutor*>(nullptr)}) {
      std::unique_ptr<PlanExecutor> owned;
      if (!ex) {
        owned = std::make_unique<PlanExecutor>(make_plan(block, {}, cache));
        ex = owned.get();
      }
      const Graph& g = ex->graph();
      ex->set_inputs(g.name() == chain.name() ? chain_in : block_in);
      GraphExecutor graph(*ex);
      // Two sets of pointers: the executor's own, and fresh buffers holding the same inputs.
      const std::vector<const void*> own_in = ex->input_pointers();
      const std::vector<void*> own_out = ex->output_pointers();
      std::vector<cuda::DeviceBuffer> bufs;
      std::vector<const void*> new_in;
      std::vector<void*> new_out;
      for (size_t i = 0; i < own_in.size(); ++i) {
        const size_t bytes = plan::storage_bytes(g.tensor(g.inputs()[i]));
        bufs.emplace_back(bytes);
        cudaMemcpy(bufs.back().data(), own_in[i], bytes, cudaMemcpyDeviceToDevice);
        new_in.push_back(bufs.back().data());
      }
      for (size_t i = 0; i < own_out.size(); ++i) {
        bufs.emplace_back(plan::storage_bytes(g.tensor(g.outputs()[i])));
        new_out.push_back(bufs.back().data());
      }
      cudaDeviceSynchronize();  // the copies ran on the legacy stream; the executor's does not wait for it
      std::vector<double> update, recapture;
      for (int r = 0; r < runs; ++r) {
        update.push_back(wall_ms([&] { r % 2 ? graph.rebind(own_in, own_out) : graph.rebind(new_in, new_out); }));
        recapture.push_back(wall_ms([&] { graph.recapture(); }));
      }
      std::printf("3. rebind %-22s (%zu nodes): exec update %.1f us, capture + instantiate %.1f us (medians of %d); "
                  "updates refused: %d\n",
                  g.name().c_str(), graph.node_count(), median(update) * 1e3, median(recapture) * 1e3, runs,
                  graph.stats().refused_updates);
      ok &= graph.stats().refused_updates == 0;
    }
    // 4. The decode stack: build, save, load, run, then one decode step per executor.
    {
      const Graph stack = examples::llama_decode_stack();
      const std::string sfile = (std::filesystem::temp_directory_path() /
                                 ("sinter_bench_stack_" + std::to_string(::getpid()) + ".plan")).string();
      const double build_ms = wall_ms([&] { plan::save_plan_bundle(make_plan(stack, {}, cache), sfile); });
      PlanExecutor sx(plan::load_plan_bundle(sfile));
      const TensorMap in = random_inputs(stack, 13);
      const TensorMap out = sx.run(in);
      const bool stack_ok = matches(stack, in, out, "stack");
      ok &= stack_ok;
      GraphExecutor sg(sx);
      const double stream_ms = batch_ms(sx.stream(), 1, runs, [&] { sx.launch(); });
      const double graph_ms = batch_ms(sx.stream(), 1, runs, [&] { sg.replay(); });
      const double gb = graph_cost(stack).min_bytes / 1e9;
      std::printf("4. llama decode stack (16 layers, d2048, ff8192, GQA 32/8, cache 1024; %.2f GB read per step, "
                  "%zu steps, %zu graph nodes): build + save %.0f ms, bundle %ju bytes, outputs %s; one decode step: "
                  "stream executor %.3f ms, graph executor %.3f ms (%.2f TB/s) (medians of %d)\n",
                  gb, sx.plan().steps.size(), sg.node_count(), build_ms,
                  static_cast<uintmax_t>(std::filesystem::file_size(sfile)), stack_ok ? "correct" : "WRONG",
                  stream_ms, graph_ms, gb / graph_ms, runs);
      // Where a decode step's time goes: every step launched alone (PlanExecutor::time_steps;
      // the few microseconds of event overhead per step are in these numbers), summed by kernel.
      std::map<std::string, std::pair<int, double>> by_kind;
      double sum_ms = 0;
      const std::vector<float> step_ms = sx.time_steps(9);
      const size_t steps = step_ms.size();
      const size_t per_layer = steps / 16;
      for (size_t i = 0; i < steps; ++i) {
        const plan::Step& st = sx.plan().steps[i];
        const double ms = step_ms[i];
        sum_ms += ms;
        const std::string key = std::string(fuse::to_string(st.kind)) + " [" + st.engine + "] " + st.description.substr(0, 70);
        by_kind[key].first += 1;
        by_kind[key].second += ms;
        if (i < per_layer + 1) std::printf("   step %-3zu %-9s [%-8s] %8.4f ms  %s\n", i, std::string(fuse::to_string(st.kind)).c_str(),
                                           st.engine.c_str(), ms, st.description.c_str());
      }
      std::printf("   sum of steps launched alone %.3f ms; by kernel:\n", sum_ms);
      for (const auto& [k, v] : by_kind) std::printf("   %4d x  %8.4f ms total  %s\n", v.first, v.second, k.c_str());
      std::filesystem::remove(sfile);
      // The same stack built with --tune fast: what timing the candidates buys over the heuristic.
      if (!tuned) {
        std::printf("4b. (the tuned build of the stack: run with --tuned)\n");
      } else {
        tune::TimingCache timings;
        plan::Plan tuned_plan;
        const double tune_ms = wall_ms([&] { tuned_plan = make_plan(stack, {}, cache, &timings); });
        PlanExecutor tx(std::move(tuned_plan));
        const bool tuned_ok = matches(stack, in, tx.run(in), "tuned");
        ok &= tuned_ok;
        GraphExecutor tg(tx);
        const double tuned_graph_ms = batch_ms(tx.stream(), 1, runs, [&] { tg.replay(); });
        std::map<std::string, int> engines;
        for (const plan::Step& st : tx.plan().steps) engines[st.engine] += 1;
        std::string mix;
        for (const auto& [e, c] : engines) mix += (mix.empty() ? "" : ", ") + e + " " + std::to_string(c);
        std::printf("4b. the stack tuned (fast, %zu timing entries, build %.0f ms): outputs %s; graph executor %.3f ms "
                    "(%.2f TB/s); steps by engine: %s\n",
                    timings.size(), tune_ms, tuned_ok ? "correct" : "WRONG", tuned_graph_ms, gb / tuned_graph_ms, mix.c_str());
      }
    }
    std::printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "sinter_bench_plan: %s\n", e.what());
    return 1;
  }
}
