// Plan benchmarks, on GPU 0, through the public API: compile() or Plan::load(), then Runners in
// stream mode ("stream executor": the steps launched one by one) and graph mode ("graph
// executor": one CUDA graph replay).
//   1. launch cost: a chain of 200 dependent pointwise ops over 1024 f32 values, unfused, so
//      launch overhead dominates; microseconds per op through a stream-mode runner (one launch
//      per op) and a graph-mode runner. Acceptance: graph <= 1.3 us per op.
//   2. load to first result of the transformer-block example from a saved bundle: Plan::load
//      (read + check the bundle), a Runner and device memory for the inputs and outputs (the
//      steps loaded: cubins, cuBLASLt and cuDNN configs), copy inputs, run, copy outputs.
//      Measured in a process whose CUDA context and stream already exist. Acceptance: <= 10 ms.
//   3. rebinding new input/output pointers in a graph-mode runner: set_tensor_address of every
//      input and output, then one enqueue (capture, cudaGraphExecUpdate, launch), against the
//      first enqueue of a fresh graph-mode runner (capture, cudaGraphInstantiate, launch).
//   4. the Llama-style decode stack (16 layers, d 2048, ffn 8192, GQA 32/8, cache 1024, batch 1,
//      ~1.98 GB of bf16 weights and cache): compile, save, load, run, checked against the CPU
//      reference; one decode step through stream- and graph-mode runners, and in mega mode (the
//      plan; compiled on our kernels only; the same with nn.Linear's [N, K] weights), and the
//      same plans with the rmsnorms left as steps of their own (4n: not folded into the GEMVs).
//      bench/torch_decode_stack.py
//      times the same model in PyTorch (eager and CUDA graph) for the same run. Every time is also
//      given as a fraction of the read-once floor of the same bytes (read_floor.hpp), measured here.
//   5. (--models) whole-model decode steps: Llama-3.2-1B and Llama-3-8B's shape, graph executor and
//      megakernel against their read-once floors (bench_model), at each batch of --batch (B
//      sequences decoded in one step, the weights read once for all of them).
// Every run's outputs are checked against the CPU reference once; a mismatch fails the program.
//
//   sinter_bench_plan [--runs N] [--tuned] [--chain-only | --stack-only] [--models 1b,8b [--batch 1,4,16,64]]
//                     [--trace-dir DIR]
//     --runs N: medians of N (at least 3; 21 by default); --tuned: also compile the decode stack
//     with fast tuning (minutes: every distinct region timed); --chain-only: part 1 alone;
//     --stack-only: part 4 alone;
//     --batch: the batches of part 5 (default 1);
//     --trace-dir: the megakernel runs' Chrome traces written there (a summary is always printed)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_plan_timing.hpp"
#include "read_floor.hpp"
#include "cuda/sha256.hpp"
#include "example_graphs.hpp"
#include "gpu/plan_graphs.hpp"
#include "sinter/sinter.hpp"

using namespace sinter;
using bench::BenchPlan;
using bench::median;

namespace {

double wall_ms(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool matches_want(const Graph& g, const TensorMap& want, const TensorMap& got, const char* label) {
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

bool matches(const Graph& g, const TensorMap& inputs, const TensorMap& got, const char* label) {
  return matches_want(g, run_reference(g, inputs), got, label);
}

// Heuristic compile, or with `timing_cache` fast tuning (the top candidates of every engine timed
// per region; identical layers find the first one's timing in the cache).
// With a timing cache: fast tuning, and the megakernels in the plan (each timed against its steps).
Plan make_plan(const Graph& g, const FusionOptions& fusion, const std::string& kernel_cache,
               const std::string& timing_cache = "") {
  CompileOptions o;
  o.fusion = fusion;
  o.kernel_cache_dir = kernel_cache;
  if (!timing_cache.empty()) {
    o.tuning = TuneMode::fast;
    o.timing_cache = timing_cache;
    o.megakernels = true;
  }
  return compile(g, o);
}

// Milliseconds of `batch` back-to-back runs between two events; the median of `runs` batches.
double batch_ms(cudaStream_t s, int batch, int runs, const std::function<void()>& launch) {
  cudaEvent_t start = nullptr, stop = nullptr;
  bench::check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  bench::check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 3; ++i) launch();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    bench::check_cuda(cudaEventRecord(start, s), "cudaEventRecord");
    for (int i = 0; i < batch; ++i) launch();
    bench::check_cuda(cudaEventRecord(stop, s), "cudaEventRecord");
    bench::check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    bench::check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    t.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(t);
}

// A graph-mode runner of `plan` on `io`'s buffers, its steps captured on at most `streams` streams
// (independent steps on branches of their own; 1: one chain in step order).
std::unique_ptr<Runner> graph_runner(const Plan& plan, const DeviceTensors& io, int streams = RunnerOptions{}.graph_streams) {
  RunnerOptions o;
  o.mode = ExecMode::graph;
  o.graph_streams = streams;
  auto r = std::make_unique<Runner>(plan, o);
  io.bind(*r);
  return r;
}

// A mega-mode runner of `plan` on `io`'s buffers, its megakernels compiled into `kernel_cache`.
std::unique_ptr<Runner> mega_runner(const Plan& plan, const DeviceTensors& io, const std::string& kernel_cache) {
  RunnerOptions o;
  o.mode = ExecMode::mega;
  o.mega.kernel_cache_dir = kernel_cache;
  auto r = std::make_unique<Runner>(plan, o);
  io.bind(*r);
  return r;
}

// Runs `r` once on `io`'s inputs with every output and intermediate poisoned, and checks it.
bool runner_matches(const Graph& g, const TensorMap& inputs, Runner& r, DeviceTensors& io, cudaStream_t s,
                  const char* label, const TensorMap* want = nullptr) {
  io.upload(inputs, s);
  io.poison_outputs(s);
  r.poison_intermediates(s);
  r.enqueue(s);
  const TensorMap got = io.download(s);
  r.check();
  return want ? matches_want(g, *want, got, label) : matches(g, inputs, got, label);
}

std::string mega_summary(const Runner& r) {
  const MegaDescription d = r.mega_description();
  int tasks = 0, kernels = 0, functions = 0;
  double compile = 0;
  for (const MegaSegmentDescription& s : d.segments) {
    tasks += s.tasks;
    kernels += static_cast<int>(s.kernels.size());
    functions += s.functions;
    compile += s.compile_ms;
  }
  return std::to_string(d.segments.size()) + " megakernel segment(s), " + std::to_string(kernels) + " task kernels, " +
         std::to_string(functions) + " task functions, " + std::to_string(tasks) + " tasks, " +
         std::to_string(d.outside.size()) + " steps outside; megakernel compile/load " + std::to_string(compile) + " ms";
}

// One traced launch of `plan` in mega mode on `io`'s buffers: prints where the CTAs' time went
// (span, busy and waiting shares, the steps that waited longest) and, when `trace_dir` is set,
// writes the Chrome trace there as LABEL.trace.json.
// The first task kernel's description of each plan step of a segment.
std::map<int, std::string> step_descriptions(const MegaSegmentDescription& seg) {
  std::map<int, std::string> out;
  for (const MegaSegmentDescription::TaskKernel& k : seg.kernels) out.emplace(k.step, k.description);
  return out;
}

// Steps of one kind (the same task kernel description: a layer's step and its twins in the
// other layers) over a trace: how long their windows are (first task start to last task end),
// their tasks' mean run and wait. Where a megakernel's time goes, a line per kind, the kinds
// with the longest windows in all first.
void print_windows_by_kernel(const MegaSegmentDescription& seg, const MegaSegmentTime& t, const std::string& label) {
  struct Kind {
    int steps = 0, tasks = 0;
    double window_us = 0, busy_us = 0, waited_us = 0;
  };
  const std::map<int, std::string> what = step_descriptions(seg);
  std::map<std::string, Kind> kinds;
  for (const MegaStepTime& st : t.steps) {
    Kind& k = kinds[what.at(st.step)];
    ++k.steps;
    k.tasks += st.tasks;
    k.window_us += st.last_end_us - st.first_start_us;
    k.busy_us += st.busy_us;
    k.waited_us += st.waited_us;
  }
  std::vector<std::pair<std::string, Kind>> sorted(kinds.begin(), kinds.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.window_us > b.second.window_us; });
  std::printf("   trace %s segment %d by kernel (windows: first task start to last task end; they overlap):\n",
              label.c_str(), t.segment);
  for (size_t i = 0; i < std::min<size_t>(12, sorted.size()); ++i) {
    const Kind& k = sorted[i].second;
    std::printf("     %3d steps x %5.1f tasks: window %7.2f us a step (%8.1f in all), task %6.2f us, waited %6.2f us  %s\n",
                k.steps, static_cast<double>(k.tasks) / k.steps, k.window_us / k.steps, k.window_us,
                k.busy_us / std::max(1, k.tasks), k.waited_us / std::max(1, k.tasks), sorted[i].first.substr(0, 110).c_str());
  }
}

// Every step of one segment over a trace, tab-separated, in plan order.
void write_step_table(const MegaSegmentDescription& seg, const MegaSegmentTime& t, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  const std::map<int, std::string> what = step_descriptions(seg);
  std::fprintf(f, "step\ttasks\tfirst_start_us\tlast_end_us\tbusy_us\twaited_us\tkernel\n");
  for (const MegaStepTime& st : t.steps) {
    std::fprintf(f, "%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\n", st.step, st.tasks, st.first_start_us, st.last_end_us,
                 st.busy_us, st.waited_us, what.at(st.step).c_str());
  }
  std::fclose(f);
}

void trace_report(const Plan& plan, const DeviceTensors& io, cudaStream_t s, const std::string& kernel_cache,
                  const std::string& label, const std::string& trace_dir) {
  RunnerOptions o;
  o.mode = ExecMode::mega;
  o.mega.kernel_cache_dir = kernel_cache;
  o.mega.trace = true;
  Runner r(plan, o);
  io.bind(r);
  for (int i = 0; i < 3; ++i) r.enqueue(s);
  bench::check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  r.check();
  const MegaDescription d = r.mega_description();
  const std::vector<MegaTaskEvent> events = r.mega_trace();
  for (const MegaSegmentTime& t : summarize_mega_trace(d, events)) {
    std::vector<MegaStepTime> steps = t.steps;
    std::sort(steps.begin(), steps.end(),
              [](const MegaStepTime& a, const MegaStepTime& b) { return a.busy_us + a.waited_us > b.busy_us + b.waited_us; });
    std::printf("   trace %s segment %d: %d tasks on %d CTAs, span %.1f us, busy %.1f%%, task mean %.3f us, "
                "waited %.1f us in all; longest steps:",
                label.c_str(), t.segment, t.tasks, t.ctas, t.span_us, t.busy_percent, t.busy_us / std::max(1, t.tasks),
                t.waited_us);
    for (size_t i = 0; i < std::min<size_t>(4, steps.size()); ++i) {
      std::printf(" step %d (%d tasks, busy %.1f us, waited %.1f us)", steps[i].step, steps[i].tasks, steps[i].busy_us,
                  steps[i].waited_us);
    }
    std::printf("\n");
    print_windows_by_kernel(d.segments.at(static_cast<size_t>(t.segment)), t, label);
    if (!trace_dir.empty()) write_step_table(d.segments.at(static_cast<size_t>(t.segment)), t, trace_dir + "/" + label +
                                                 ".segment" + std::to_string(t.segment) + ".steps.tsv");
  }
  if (!trace_dir.empty()) {
    const std::string path = trace_dir + "/" + label + ".trace.json";
    if (std::FILE* f = std::fopen(path.c_str(), "w")) {
      const std::string json = mega_trace_json(d, events);
      std::fwrite(json.data(), 1, json.size(), f);
      std::fclose(f);
    }
  }
}

// 5. A whole model's decode step for `batch` sequences (Llama-3.2-1B: 16 layers, LM head and
// argmax; Llama-3-8B's shape: 32 layers, LM head and argmax) through the graph executor and the
// megakernel, each as a fraction of the read-once floor of the step's bytes (the weights once,
// every sequence's KV caches read and written back). Correctness: the step against the CPU
// reference -- the 1B at batch 1 whole; the 8B's shape, and every model above batch 1, on two of
// its layers (the 8B's 15 GB in float64 on the host would take minutes, and the reference's time
// grows with the batch); the timings run on whatever values device memory holds (they do not
// depend on them). A step whose inputs and outputs do not fit the GPU's free memory (the 8B's
// shape at batch 64 holds 2 x 34 GB of KV caches) is skipped, and the line says so.
bool bench_model(const std::string& which, int64_t batch, int runs, const std::string& kernels) {
  examples::LlamaConfig c = which == "8b" ? examples::llama_3_8b() : examples::llama_3_2_1b();
  c.batch = batch;
  const auto b = static_cast<long long>(batch);
  const Graph g = examples::llama_decode_stack(c);
  const double bytes = graph_cost(g).min_bytes;
  const double gb = bytes / 1e9;
  size_t free_bytes = 0, total_bytes = 0;
  bench::check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  // the plan's inputs and outputs, and a GiB for its arena, workspace and kernels (the floor's
  // buffer of the same bytes comes after the plan is gone)
  if (bytes + double(1ull << 30) > static_cast<double>(free_bytes)) {
    std::printf("5. %s decode step, %d layers, batch %lld, %.2f GB: skipped: its inputs and outputs need %.1f GB "
                "of device memory and a GiB more, %.1f GB of %.1f GB are free\n",
                c.name.c_str(), c.layers, b, gb, gb, free_bytes / 1e9, total_bytes / 1e9);
    return true;
  }
  bool ok = true;
  {
    examples::LlamaConfig small = c;
    if (which == "8b" || batch > 1) small.layers = 2;
    const Graph sg = examples::llama_decode_stack(small);
    BenchPlan x(make_plan(sg, {}, kernels));
    const TensorMap in = random_inputs(sg, 17);
    const TensorMap want = run_reference(sg, in);
    const std::string label = which + (batch > 1 ? "b" + std::to_string(batch) : "");
    ok &= matches_want(sg, want, x.run(in), (label + " graph").c_str());
    const std::unique_ptr<Runner> m = mega_runner(x.plan(), x.io(), kernels);
    ok &= runner_matches(sg, in, *m, x.io(), x.stream(), (label + " mega").c_str(), &want);
    std::printf("5. %s decode step, %d layers, batch %lld: outputs (graph, megakernel) against the CPU reference: %s\n",
                c.name.c_str(), small.layers, b, ok ? "correct" : "WRONG");
  }
  double graph_ms = 0, mega_ms = 0;
  std::string summary;
  {
    BenchPlan x(make_plan(g, {}, kernels));
    const std::unique_ptr<Runner> graph = graph_runner(x.plan(), x.io());
    const std::unique_ptr<Runner> mega = mega_runner(x.plan(), x.io(), kernels);
    graph_ms = batch_ms(x.stream(), 1, runs, [&] { graph->enqueue(x.stream()); });
    mega_ms = batch_ms(x.stream(), 1, runs, [&] { mega->enqueue(x.stream()); });
    mega->check();
    summary = mega_summary(*mega);
  }
  const bench::Stream stream;
  const bench::ReadFloor floor = bench::read_once_floor(static_cast<size_t>(bytes), stream, runs);
  std::printf("5. %s decode step, %d layers, batch %lld, %.2f GB: read-once floor %.3f ms (%.2f TB/s); graph executor "
              "%.3f ms (%.0f%% of the floor's speed), megakernel %.3f ms (%.0f%%; %s)   acceptance >= 80%%: %s\n",
              c.name.c_str(), c.layers, b, gb, floor.ms, floor.tb_per_s, graph_ms, 100 * floor.ms / graph_ms, mega_ms,
              100 * floor.ms / mega_ms, summary.c_str(), floor.ms / std::min(graph_ms, mega_ms) >= 0.8 ? "met" : "NOT met");
  return ok;
}

// A comma-separated list of positive integers ("1,4,16"), or nothing where any entry is not one.
// "a,b,c" -> {"a", "b", "c"} (empty items kept, for the callers to refuse).
std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    out.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

std::optional<std::vector<int64_t>> parse_batches(const std::string& list) {
  std::vector<int64_t> out;
  for (const std::string& item : split_commas(list)) {
    if (item.empty() || item.size() > 6 || item.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const int64_t v = std::stoll(item);
    if (v < 1) return std::nullopt;
    out.push_back(v);
  }
  return out;
}

// Where a decode step's time goes: every step of `x` launched alone (Runner::time_steps; the few
// microseconds of event overhead per step are in these numbers), the first layer's steps one by
// one, then summed by kind of kernel (a description up to its first quoted tensor name).
void step_breakdown(BenchPlan& x, const char* label, int layers) {
  std::map<std::string, std::pair<int, double>> by_kind;
  double sum_ms = 0;
  const std::vector<float> step_ms = x.step_ms(9);
  const size_t per_layer = step_ms.size() / static_cast<size_t>(layers);
  std::printf("   %s, steps launched alone:\n", label);
  for (size_t i = 0; i < step_ms.size(); ++i) {
    const StepDescription& st = x.steps()[i];
    sum_ms += step_ms[i];
    const std::string kind = st.kind + " [" + st.engine + "] " + st.description.substr(0, st.description.find('\''));
    by_kind[kind.substr(0, 110)].first += 1;
    by_kind[kind.substr(0, 110)].second += step_ms[i];
    if (i < per_layer + 1) {
      std::printf("   step %-3zu %-9s [%-8s] %8.4f ms  %s\n", i, st.kind.c_str(), st.engine.c_str(), step_ms[i],
                  st.description.c_str());
    }
  }
  std::printf("   sum of steps launched alone %.3f ms; by kernel:\n", sum_ms);
  for (const auto& [k, v] : by_kind) std::printf("   %4d x  %8.4f ms total  %s\n", v.first, v.second, k.c_str());
}

std::string temp_file(const std::string& stem) {
  return (std::filesystem::temp_directory_path() / (stem + std::to_string(::getpid()) + ".plan")).string();
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: sinter_bench_plan [--runs N] [--tuned] [--chain-only | --stack-only] [--models 1b,8b [--batch 1,4,16,64]]\n"
               "                         [--trace-dir DIR]   (needs a GPU)\n"
               "  --runs N       medians of N runs (at least 3, default 21)\n"
               "  --tuned        also compile the decode stack with fast tuning (minutes)\n"
               "  --chain-only   only part 1, the launch cost of a 200-op chain\n"
               "  --stack-only   only part 4, the 16-layer decode stack\n"
               "  --models LIST  only part 5: whole-model decode steps (1b: Llama-3.2-1B, 8b: Llama-3-8B's shape)\n"
               "  --batch LIST   with --models: each model at each of these batches (sequences per step; default 1)\n"
               "  --trace-dir D  write the megakernel traces (Chrome trace JSON) into folder D\n");
}

// The decode stack's inputs, reference and what its lines are measured against (part 4).
struct StackRun {
  const TensorMap& in;
  const TensorMap& want;
  int runs;
  std::string kernels, trace_dir;
  double floor_ms, gb;
};

// Part 4m on one plan compiled with `o` (our kernels): the graph executor and the megakernel,
// both checked against the reference, on a line that starts `head`; then the megakernel's trace
// and the steps' breakdown. False when an output is wrong.
bool bench_our_kernels(const Graph& g, const CompileOptions& o, const StackRun& r, const char* head, const char* label,
                       const char* trace_label, const char* breakdown_label) {
  BenchPlan x(compile(g, o));
  const bool graph_ok = matches_want(g, r.want, x.run(r.in), label);
  const std::unique_ptr<Runner> gr = graph_runner(x.plan(), x.io());
  const std::unique_ptr<Runner> mr = mega_runner(x.plan(), x.io(), r.kernels);
  const std::string mega_label = std::string(label) + " mega";
  const bool mega_ok = runner_matches(g, r.in, *mr, x.io(), x.stream(), mega_label.c_str(), &r.want);
  const double graph_ms = batch_ms(x.stream(), 1, r.runs, [&] { gr->enqueue(x.stream()); });
  const double mega_ms = batch_ms(x.stream(), 1, r.runs, [&] { mr->enqueue(x.stream()); });
  std::printf("%s: graph executor %.3f ms, megakernel %.3f ms (%.2f TB/s, %.0f%% of the floor's speed), outputs %s; %s\n",
              head, graph_ms, mega_ms, r.gb / mega_ms, 100 * r.floor_ms / mega_ms,
              graph_ok && mega_ok ? "correct" : "WRONG", mega_summary(*mr).c_str());
  trace_report(x.plan(), x.io(), x.stream(), r.kernels, trace_label, r.trace_dir);
  step_breakdown(x, breakdown_label, 16);
  return graph_ok && mega_ok;
}

// Part 4n: the stack with its rmsnorms left as steps of their own (FusionOptions::
// fold_norms_into_matmuls off), against the folded plans of parts 4 and 4m: the default plan's
// graph executor, and the plan on our kernels for megakernels in mega mode (whose GEMVs after a
// norm then take the TMA tile with its task prologue). False when an output is wrong.
bool bench_unfolded_norms(const Graph& g, const CompileOptions& mega_options, const StackRun& r) {
  CompileOptions o;
  o.kernel_cache_dir = r.kernels;
  o.fusion.fold_norms_into_matmuls = false;
  BenchPlan x(compile(g, o));
  const bool graph_ok = matches_want(g, r.want, x.run(r.in), "unfolded");
  const std::unique_ptr<Runner> gr = graph_runner(x.plan(), x.io());
  const double graph_ms = batch_ms(x.stream(), 1, r.runs, [&] { gr->enqueue(x.stream()); });
  CompileOptions mo = mega_options;
  mo.fusion.fold_norms_into_matmuls = false;
  BenchPlan y(compile(g, mo));
  const std::unique_ptr<Runner> mr = mega_runner(y.plan(), y.io(), r.kernels);
  const bool mega_ok = runner_matches(g, r.in, *mr, y.io(), y.stream(), "unfolded mega", &r.want);
  const double mega_ms = batch_ms(y.stream(), 1, r.runs, [&] { mr->enqueue(y.stream()); });
  std::printf("4n. norms not folded into the GEMVs: default plan, %zu steps, graph executor %.3f ms; on our kernels "
              "for megakernels, megakernel %.3f ms; outputs %s\n",
              x.steps().size(), graph_ms, mega_ms, graph_ok && mega_ok ? "correct" : "WRONG");
  return graph_ok && mega_ok;
}

}  // namespace

int main(int argc, char** argv) {
  // line-buffered even into a file: a run cut short by a timeout keeps every finished line
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int runs = 21;
  bool tuned = false;
  bool chain_only = false, stack_only = false;
  std::string trace_dir;
  std::vector<std::string> models;
  std::vector<int64_t> batches{1};
  bool batch_given = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(3, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--tuned") == 0) {
      tuned = true;
    } else if (std::strcmp(argv[i], "--chain-only") == 0) {
      chain_only = true;
    } else if (std::strcmp(argv[i], "--stack-only") == 0) {
      stack_only = true;
    } else if (std::strcmp(argv[i], "--models") == 0 && i + 1 < argc) {
      for (const std::string& m : split_commas(argv[++i])) {
        if (m != "1b" && m != "8b") {
          std::fprintf(stderr, "sinter_bench_plan: --models takes 1b and 8b, not '%s'\n", m.c_str());
          return 2;
        }
        models.push_back(m);
      }
    } else if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      const std::optional<std::vector<int64_t>> list = parse_batches(argv[++i]);
      if (!list) {
        std::fprintf(stderr, "sinter_bench_plan: --batch takes positive integers separated by commas (1,4,16,64), "
                     "not '%s'\n", argv[i]);
        return 2;
      }
      batches = *list;
      batch_given = true;
    } else if (std::strcmp(argv[i], "--trace-dir") == 0 && i + 1 < argc) {
      trace_dir = argv[++i];
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "sinter_bench_plan: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (chain_only && stack_only) {
    std::fprintf(stderr, "sinter_bench_plan: --chain-only and --stack-only name different parts: give one\n");
    return 2;
  }
  if (batch_given && models.empty()) {
    std::fprintf(stderr, "sinter_bench_plan: --batch applies to the whole-model steps: name them with --models\n");
    return 2;
  }
  if (!bench::have_gpu("sinter_bench_plan")) return 1;
  try {
    bench::check_cuda(cudaSetDevice(0), "cudaSetDevice");
    std::printf("device: %s\n", device_info(0).description.c_str());
    // Compiled kernels go to a folder of this run: build times do not depend on the user's cache.
    const bench::ScratchDir kernels("sinter_bench_plan_kernels_");
    bool ok = true;
    if (!models.empty()) {
      for (const std::string& m : models) {
        for (int64_t b : batches) ok &= bench_model(m, b, runs, kernels.str());
      }
      std::printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
      return ok ? 0 : 1;
    }

    if (!stack_only) {
      // 1. Launch cost of a 200-op unfused chain.
      const int ops = 200;
      const Graph chain = testing::pointwise_chain(ops, 1024);
      const Plan chain_plan = make_plan(chain, testing::no_fusion(), kernels.str());
      BenchPlan chain_ex(chain_plan);
      const TensorMap chain_in = random_inputs(chain, 7);
      ok &= matches(chain, chain_in, chain_ex.run(chain_in), "stream");
      const std::unique_ptr<Runner> chain_graph = graph_runner(chain_plan, chain_ex.io());
      chain_ex.io().poison_outputs(chain_ex.stream());
      chain_graph->poison_intermediates(chain_ex.stream());
      chain_graph->enqueue(chain_ex.stream());
      ok &= matches(chain, chain_in, chain_ex.io().download(chain_ex.stream()), "graph");
      const size_t chain_nodes = bench::captured_graph_nodes(chain_plan, chain_ex.io(), chain_ex.stream());
      const int batch = 20;
      const double stream_ms = batch_ms(chain_ex.stream(), batch, runs, [&] { chain_ex.enqueue(); });
      const double graph_ms = batch_ms(chain_ex.stream(), batch, runs, [&] { chain_graph->enqueue(chain_ex.stream()); });
      const std::unique_ptr<Runner> chain_mega = mega_runner(chain_plan, chain_ex.io(), kernels.str());
      ok &= runner_matches(chain, chain_in, *chain_mega, chain_ex.io(), chain_ex.stream(), "mega");
      const double mega_ms = batch_ms(chain_ex.stream(), batch, runs, [&] { chain_mega->enqueue(chain_ex.stream()); });
      std::printf("1. %d dependent pointwise ops x 1024 f32, unfused (%zu graph nodes), %d back-to-back runs, median of %d:\n",
                  ops, chain_nodes, batch, runs);
      std::printf("   stream executor  %.3f us/op  (%.1f us per run)\n", stream_ms * 1e3 / (batch * ops), stream_ms * 1e3 / batch);
      std::printf("   graph executor   %.3f us/op  (%.1f us per run)   acceptance <= 1.3 us/op: %s\n",
                  graph_ms * 1e3 / (batch * ops), graph_ms * 1e3 / batch, graph_ms * 1e3 / (batch * ops) <= 1.3 ? "met" : "NOT met");
      std::printf("   megakernel       %.3f us/op  (%.1f us per run)   acceptance <= 0.30 us/op: %s; %s\n",
                  mega_ms * 1e3 / (batch * ops), mega_ms * 1e3 / batch, mega_ms * 1e3 / (batch * ops) <= 0.30 ? "met" : "NOT met",
                  mega_summary(*chain_mega).c_str());
      trace_report(chain_plan, chain_ex.io(), chain_ex.stream(), kernels.str(), "chain", trace_dir);

      if (chain_only) {
        std::printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
        return ok ? 0 : 1;
      }
      // 2. Transformer block: load to first result from a bundle.
      const Graph block = examples::transformer_block();
      const std::string file = temp_file("sinter_bench_plan_");
      make_plan(block, {}, kernels.str()).save(file);
      const TensorMap block_in = random_inputs(block, 11);
      const bench::Stream stream;  // an application's stream exists before it loads a plan
      std::vector<double> load_ms;
      // Where the time goes, phase by phase; their sum is the load-to-first-result time (the poison
      // fill before the run is done untimed; it is a test aid).
      std::vector<double> read_ms, steps_ms, runner_ms, upload_ms, gpu_ms, download_ms;
      std::vector<std::string> notes;  // of the last load: how each vendor step was rebuilt, in how long
      TensorMap first;
      for (int r = 0; r < std::min(runs, 11); ++r) {
        std::optional<Plan> loaded;
        read_ms.push_back(wall_ms([&] { loaded.emplace(Plan::load(file)); }));
        std::unique_ptr<Runner> runner;
        std::unique_ptr<DeviceTensors> io;
        steps_ms.push_back(wall_ms([&] {
          runner = std::make_unique<Runner>(*loaded);
          io = std::make_unique<DeviceTensors>(*loaded);
          io->bind(*runner);
        }));
        runner_ms.push_back(runner->stats().load_ms);
        upload_ms.push_back(wall_ms([&] { io->upload(block_in, stream); stream.synchronize(); }));
        io->poison_outputs(stream);  // untimed: so an output the plan fails to write cannot pass the check below
        runner->poison_intermediates(stream);
        stream.synchronize();
        gpu_ms.push_back(wall_ms([&] { runner->enqueue(stream); stream.synchronize(); }));
        download_ms.push_back(wall_ms([&] { first = io->download(stream); }));
        notes = runner->load_notes();
        load_ms.push_back(read_ms.back() + steps_ms.back() + upload_ms.back() + gpu_ms.back() + download_ms.back());
      }
      ok &= matches(block, block_in, first, "loaded");
      std::printf("2. transformer block, bundle %s (%ju bytes): load to first result first %.2f ms, median %.2f ms of %zu   "
                  "acceptance <= 10 ms: %s\n",
                  file.c_str(), static_cast<uintmax_t>(std::filesystem::file_size(file)), load_ms.front(), median(load_ms),
                  load_ms.size(), median(load_ms) <= 10 ? "met" : "NOT met");
      std::printf("   phases (medians): bundle read + checked %.2f ms, steps loaded + memory allocated %.2f ms (the Runner "
                  "%.2f ms of it), inputs uploaded %.2f ms, launch + run %.2f ms, outputs copied back %.2f ms\n",
                  median(read_ms), median(steps_ms), median(runner_ms), median(upload_ms), median(gpu_ms), median(download_ms));
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
            const bool read = f && std::fread(bytes.data(), 1, bytes.size(), f) == bytes.size();
            if (f) std::fclose(f);
            if (!read) throw Error(ErrorCode::io, "read " + file);
          }));
          hash_ms.push_back(wall_ms([&] { (void)cuda::sha256(bytes.data(), bytes.size()); }));
          parse_ms.push_back(wall_ms([&] { (void)Plan::from_bytes(bytes, file); }));
        }
        std::printf("   bundle read + checked, in parts (medians): file read %.2f ms, SHA-256 of all bytes %.2f ms "
                    "(SHA extensions: %s), parse + checks from memory %.2f ms\n",
                    median(file_ms), median(hash_ms), cuda::sha256_uses_cpu_extensions() ? "yes" : "no", median(parse_ms));
        // Inside "launch + run": the first enqueue of a fresh load, synchronized (lazy module loading
        // and vendor first-call costs land here), then the whole plan again.
        const Plan loaded = Plan::load(file);
        Runner runner(loaded);
        DeviceTensors io(loaded);
        io.bind(runner);
        io.upload(block_in, stream);
        stream.synchronize();
        const double first_ms = wall_ms([&] { runner.enqueue(stream); stream.synchronize(); });
        const double again = wall_ms([&] { runner.enqueue(stream); stream.synchronize(); });
        std::printf("   first enqueue of a fresh load %.3f ms (synchronized); the whole plan again %.3f ms\n", first_ms,
                    again);
      }
      std::filesystem::remove(file);

      // 3. Rebinding: exec update versus capture + instantiate, for both graphs.
      for (const Plan& plan : {chain_plan, make_plan(block, {}, kernels.str())}) {
        const Graph& g = plan.graph();
        const TensorMap& in = g.name() == chain.name() ? chain_in : block_in;
        // Two sets of buffers holding the same inputs.
        DeviceTensors own(plan), other(plan);
        own.upload(in, stream);
        other.upload(in, stream);
        const std::unique_ptr<Runner> graph = graph_runner(plan, own);
        graph->enqueue(stream);  // the first capture + instantiate
        stream.synchronize();
        const size_t nodes = bench::captured_graph_nodes(plan, own, stream);
        std::vector<double> update, recapture;
        for (int r = 0; r < runs; ++r) {
          DeviceTensors& next = r % 2 ? own : other;
          update.push_back(wall_ms([&] {
            next.bind(*graph);
            graph->enqueue(stream);
          }));
          stream.synchronize();
          const std::unique_ptr<Runner> fresh = graph_runner(plan, own);
          recapture.push_back(wall_ms([&] { fresh->enqueue(stream); }));
          stream.synchronize();
        }
        const RunnerStats st = graph->stats();
        std::printf("3. rebind %-22s (%zu nodes): exec update %.1f us, capture + instantiate %.1f us (medians of %d; "
                    "exec update: set_tensor_address of every input and output to other buffers, then one enqueue "
                    "(capture, cudaGraphExecUpdate, launch); capture + instantiate: a fresh graph-mode runner's first "
                    "enqueue (capture, cudaGraphInstantiate, launch)); updates %d, updates refused: %d\n",
                    g.name().c_str(), nodes, median(update) * 1e3, median(recapture) * 1e3, runs, st.updates,
                    st.refused_updates);
        ok &= st.refused_updates == 0 && st.updates == runs;
      }
    }  // parts 1-3
    // 4. The decode stack: build, save, load, run, then one decode step per execution mode.
    {
      const Graph stack = examples::llama_decode_stack();
      const std::string sfile = temp_file("sinter_bench_stack_");
      const double build_ms = wall_ms([&] { make_plan(stack, {}, kernels.str()).save(sfile); });
      BenchPlan sx(Plan::load(sfile));
      const TensorMap in = random_inputs(stack, 13);
      const TensorMap out = sx.run(in);
      const TensorMap stack_want = run_reference(stack, in);
      const bool stack_ok = matches_want(stack, stack_want, out, "stack");
      ok &= stack_ok;
      const std::unique_ptr<Runner> sg = graph_runner(sx.plan(), sx.io());
      const bool graph_ok = runner_matches(stack, in, *sg, sx.io(), sx.stream(), "graph", &stack_want);
      ok &= graph_ok;
      const std::unique_ptr<Runner> chain_g = graph_runner(sx.plan(), sx.io(), 1);
      const double stream_ms = batch_ms(sx.stream(), 1, runs, [&] { sx.enqueue(); });
      const double graph_ms = batch_ms(sx.stream(), 1, runs, [&] { sg->enqueue(sx.stream()); });
      const double chain_ms = batch_ms(sx.stream(), 1, runs, [&] { chain_g->enqueue(sx.stream()); });
      const size_t nodes = bench::captured_graph_nodes(sx.plan(), sx.io(), sx.stream());
      const double gb = graph_cost(stack).min_bytes / 1e9;
      std::printf("4. llama decode stack (16 layers, d2048, ff8192, GQA 32/8, cache 1024; %.2f GB read per step, "
                  "%zu steps, %zu graph nodes): build + save %.0f ms, bundle %ju bytes, outputs %s; one decode step: "
                  "stream executor %.3f ms, graph executor %.3f ms (%.2f TB/s) (medians of %d)\n",
                  gb, sx.steps().size(), nodes, build_ms,
                  static_cast<uintmax_t>(std::filesystem::file_size(sfile)), stack_ok ? "correct" : "WRONG",
                  stream_ms, graph_ms, gb / graph_ms, runs);
      const RunnerStats gs = sg->stats();
      std::printf("4g. graph executor: independent steps on branches (%d capture streams; the longest chain of "
                  "dependent launches %d of %d; outputs %s) %.3f ms; the steps captured as one chain %.3f ms (%.3fx)\n",
                  gs.capture_streams, gs.capture_chain, gs.capture_launches, graph_ok ? "correct" : "WRONG", graph_ms,
                  chain_ms, chain_ms / graph_ms);
      // The floor: the same bytes read once, in this process, on this GPU.
      const bench::ReadFloor floor = bench::read_once_floor(static_cast<size_t>(graph_cost(stack).min_bytes),
                                                            sx.stream(), runs);
      std::printf("4f. read-once floor of the stack's %.2f GB: %.3f ms (%.2f TB/s, %d CTAs/SM); stream executor %.0f%% "
                  "of the floor's speed, graph executor %.0f%%   acceptance >= 80%%: %s\n",
                  gb, floor.ms, floor.tb_per_s, floor.ctas_per_sm, 100 * floor.ms / stream_ms, 100 * floor.ms / graph_ms,
                  floor.ms / graph_ms >= 0.8 ? "met" : "NOT met");
      // The stack as megakernels: on this plan (vendor steps split it into segments), and compiled
      // on our kernels only (one megakernel), beside that plan's graph executor.
      {
        const std::unique_ptr<Runner> sm = mega_runner(sx.plan(), sx.io(), kernels.str());
        const bool mega_ok = runner_matches(stack, in, *sm, sx.io(), sx.stream(), "mega", &stack_want);
        ok &= mega_ok;
        const double mega_ms = batch_ms(sx.stream(), 1, runs, [&] { sm->enqueue(sx.stream()); });
        std::printf("4m. the same plan in mega mode: %.3f ms (%.2f TB/s, %.0f%% of the floor's speed), outputs %s; %s\n",
                    mega_ms, gb / mega_ms, 100 * floor.ms / mega_ms, mega_ok ? "correct" : "WRONG", mega_summary(*sm).c_str());
        CompileOptions jo;
        jo.kernel_cache_dir = kernels.str();
        jo.engines = {"jit", "alias"};
        // compiled for megakernels: the engines rank first the candidates that run well as tasks
        // (the TMA decode tile where the weight layout allows it), and the plan carries its
        // megakernels; the graph executor runs the same steps
        jo.megakernels = true;
        const StackRun run{in, stack_want, runs, kernels.str(), trace_dir, floor.ms, gb};
        // before the traced lines below, so a call cut short still has it
        ok &= bench_unfolded_norms(stack, jo, run);
        ok &= bench_our_kernels(stack, jo, run, "4m. compiled on our kernels only (jit + alias) for megakernels", "jit", "decode_stack",
                                "the plan on our kernels only");
        // The same stack with nn.Linear's weight layout ([N, K], k-contiguous), where the decode
        // tiles that stream k-contiguous weights (the TMA tile) may take the projections. The same
        // logical inputs, so the same reference.
        examples::LlamaConfig nk;
        nk.weights_nk = true;
        nk.name = "llama_decode_stack_nk";
        ok &= bench_our_kernels(examples::llama_decode_stack(nk), jo, run,
                                "4m. the same, weights stored [N, K] (nn.Linear's layout)", "jit nk", "decode_stack_nk",
                                "the plan on our kernels only, weights [N, K]");
      }
      step_breakdown(sx, "the default plan", 16);
      std::filesystem::remove(sfile);
      // The same stack built with fast tuning: what timing the candidates buys over the heuristic.
      if (!tuned) {
        std::printf("4b. (the tuned build of the stack: run with --tuned)\n");
      } else {
        // A timing cache of this run's own, empty at the start.
        const bench::ScratchDir timing_dir("sinter_bench_plan_timing_");
        std::optional<Plan> tuned_plan;
        const double tune_ms = wall_ms([&] {
          tuned_plan.emplace(make_plan(stack, {}, kernels.str(), (timing_dir.path() / "timing.json").string()));
        });
        BenchPlan tx(*tuned_plan);
        const bool tuned_ok = matches(stack, in, tx.run(in), "tuned");
        ok &= tuned_ok;
        const std::unique_ptr<Runner> tg = graph_runner(tx.plan(), tx.io());
        const double tuned_graph_ms = batch_ms(tx.stream(), 1, runs, [&] { tg->enqueue(tx.stream()); });
        std::map<std::string, int> engines;
        // The cache's entries: one per region timed here (a region whose twin was timed before it
        // in this compile found that timing in the cache).
        int entries = 0;
        for (const StepDescription& st : tx.steps()) {
          engines[st.engine] += 1;
          entries += !st.from_timing_cache && !st.tried.empty();
        }
        std::string mix;
        for (const auto& [e, c] : engines) mix += (mix.empty() ? "" : ", ") + e + " " + std::to_string(c);
        std::printf("4b. the stack tuned (fast, %d timing entries, build %.0f ms): outputs %s; graph executor %.3f ms "
                    "(%.2f TB/s); steps by engine: %s\n",
                    entries, tune_ms, tuned_ok ? "correct" : "WRONG", tuned_graph_ms, gb / tuned_graph_ms, mix.c_str());
        // Mega mode of the tuned plan: each segment as the megakernel or as its steps, whichever
        // the compile measured faster.
        const std::unique_ptr<Runner> tm = mega_runner(tx.plan(), tx.io(), kernels.str());
        const bool tm_ok = runner_matches(stack, in, *tm, tx.io(), tx.stream(), "tuned mega", &stack_want);
        ok &= tm_ok;
        const double tm_ms = batch_ms(tx.stream(), 1, runs, [&] { tm->enqueue(tx.stream()); });
        int as_steps = 0;
        for (const MegaDescription::Outside& x : tm->mega_description().outside) {
          as_steps += x.why.find("ran faster as separate launches") != std::string::npos;
        }
        std::printf("4b. the tuned plan in mega mode, each segment as its megakernel or its steps as measured: %.3f ms "
                    "(%.0f%% of the floor's speed), outputs %s; %d steps launched on their own for speed; %s\n",
                    tm_ms, 100 * floor.ms / tm_ms, tm_ok ? "correct" : "WRONG", as_steps, mega_summary(*tm).c_str());
      }
    }
    std::printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinter_bench_plan: %s\n", e.what());
    return 1;
  }
}
