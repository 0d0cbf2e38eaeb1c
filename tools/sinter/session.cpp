#include "session.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "format.hpp"
#include "npy.hpp"

namespace sinter::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(ErrorCode::cuda, std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

LogCallback stderr_log(const Common& c) {
  const int verbosity = c.verbosity;
  return [verbosity](LogSeverity s, std::string_view message) {
    const bool show = s == LogSeverity::error || (s == LogSeverity::warning && verbosity >= 1) ||
                      (s == LogSeverity::info && verbosity >= 2) || (s == LogSeverity::debug && verbosity >= 3);
    if (show) std::fprintf(stderr, "sinter: %s: %.*s\n", std::string(to_string(s)).c_str(), int(message.size()), message.data());
  };
}

CompileOptions compile_options(const Common& c, const BuildChoices& b) {
  CompileOptions o;
  const auto mode = parse_tune_mode(b.tune);
  if (!mode) throw Error(ErrorCode::invalid_argument, "--tune must be heuristic, fast or exhaustive; found '" + b.tune + "'");
  o.tuning = *mode;
  if (b.engine != "auto") {
    o.engines = {b.engine};
  } else if (b.our_kernels) {
    o.engines = {"jit"};
  }
  if (b.no_fusion) o.fusion = FusionOptions::none();
  if (b.unfolded_norms) o.fusion.fold_norms_into_matmuls = false;
  o.megakernels = b.megakernels;
  o.device = c.device;
  if (!c.no_timing_cache) o.timing_cache = c.timing_cache.empty() ? default_timing_cache_path() : c.timing_cache;
  o.on_log = stderr_log(c);
  // Progress on a terminal: one line, rewritten.
  if (c.verbosity >= 1 && ::isatty(STDERR_FILENO)) {
    o.on_progress = [](const CompileProgress& p) {
      std::fprintf(stderr, "\rtuning: region %d/%d, candidate %d/%d, best so far: %-60.60s", p.region + 1, p.regions,
                   p.candidate, p.candidates, std::string(p.best).c_str());
      if (p.region + 1 == p.regions && p.candidate == p.candidates) std::fprintf(stderr, "\n");
    };
  }
  return o;
}

bool is_plan_bundle_file(const std::string& path) {
  // Only a regular file is sniffed: reading a pipe's first bytes here would take them from the
  // graph loader (`sinter run /dev/stdin < graph.json`). A bundle to run or bench is a file.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, "SINTERPL", 8) == 0;
}

void require_gpu(const char* what) {
  const GpuAvailability gpu = gpu_availability();
  if (!gpu.available) throw Error(ErrorCode::unsupported, std::string(what) + " needs a GPU: " + gpu.reason);
}

LoadedPlan plan_from_file(const Common& c, const std::string& path, const BuildChoices& b) {
  const auto t0 = std::chrono::steady_clock::now();
  if (is_plan_bundle_file(path)) {
    LoadedPlan out{Plan::load(path), true, 0};
    out.ms = ms_since(t0);
    return out;
  }
  const Graph g = load_graph_file(path);
  LoadedPlan out = plan_from_graph(c, g, b);
  out.ms = ms_since(t0);
  return out;
}

LoadedPlan plan_from_graph(const Common& c, const Graph& g, const BuildChoices& b) {
  const auto t0 = std::chrono::steady_clock::now();
  require_gpu("building a plan");
  LoadedPlan out{compile(g, compile_options(c, b)), false, 0};
  out.ms = ms_since(t0);
  return out;
}

RunnerOptions runner_options(const Common& c, const ExecutorOptions& e, bool trace) {
  RunnerOptions o{ExecMode::stream, nullptr, 0, c.device, stderr_log(c)};
  if (e.executor == "graph") {
    o.mode = ExecMode::graph;
  } else if (e.executor == "mega") {
    o.mode = ExecMode::mega;
  } else if (e.executor != "stream") {
    throw Error(ErrorCode::invalid_argument, "--executor must be stream, graph or mega; found '" + e.executor + "'");
  }
  if (o.mode != ExecMode::mega && (e.watchdog_ms > 0 || trace)) {
    throw Error(ErrorCode::invalid_argument, std::string(trace ? "--trace" : "--watchdog-ms") +
                                                 " applies to the mega executor; add --executor mega (found --executor " +
                                                 e.executor + ")");
  }
  if (o.mode != ExecMode::graph && e.graph_streams > 0) {
    throw Error(ErrorCode::invalid_argument,
                "--graph-streams applies to the graph executor; add --executor graph (found --executor " + e.executor + ")");
  }
  if (e.graph_streams > 0) o.graph_streams = e.graph_streams;
  if (e.watchdog_ms > 0) o.mega.watchdog_ms = e.watchdog_ms;
  o.mega.trace = trace;
  return o;
}

PlanSession::PlanSession(const Plan& plan, const RunnerOptions& options)
    : runner_(plan, options), io_(plan, options.device) {
  check(cudaSetDevice(options.device), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  io_.bind(runner_);
}

PlanSession::~PlanSession() {
  if (stream_) cudaStreamDestroy(stream_);
}

void PlanSession::stage(const TensorMap& inputs) {
  io_.upload(inputs, stream_);
  io_.poison_outputs(stream_);
  runner_.poison_intermediates(stream_);
}

void PlanSession::enqueue() { runner_.enqueue(stream_); }

void PlanSession::start(const TensorMap& inputs) {
  stage(inputs);
  enqueue();
}

TensorMap PlanSession::finish() {
  TensorMap outputs = io_.download(stream_);  // waits for the stream
  runner_.check();
  return outputs;
}

TensorMap PlanSession::run(const TensorMap& inputs) {
  start(inputs);
  return finish();
}

std::vector<float> PlanSession::time(int iters, int warmup) { return time_together({this}, iters, warmup)[0]; }

std::vector<std::vector<float>> time_together(const std::vector<PlanSession*>& sessions, int iters, int warmup) {
  for (int i = 0; i < warmup; ++i) {
    for (PlanSession* s : sessions) s->runner().enqueue(s->stream());
  }
  std::vector<std::vector<cudaEvent_t>> events(sessions.size(), std::vector<cudaEvent_t>(2 * static_cast<size_t>(iters)));
  for (auto& e : events) {
    for (cudaEvent_t& x : e) check(cudaEventCreate(&x), "cudaEventCreate");
  }
  for (int i = 0; i < iters; ++i) {
    for (size_t k = 0; k < sessions.size(); ++k) {
      check(cudaEventRecord(events[k][2 * i], sessions[k]->stream()), "cudaEventRecord");
      sessions[k]->runner().enqueue(sessions[k]->stream());
      check(cudaEventRecord(events[k][2 * i + 1], sessions[k]->stream()), "cudaEventRecord");
    }
  }
  std::vector<std::vector<float>> ms(sessions.size(), std::vector<float>(static_cast<size_t>(iters)));
  for (size_t k = 0; k < sessions.size(); ++k) {
    sessions[k]->wait_and_check();
    for (int i = 0; i < iters; ++i) {
      check(cudaEventElapsedTime(&ms[k][i], events[k][2 * i], events[k][2 * i + 1]), "cudaEventElapsedTime");
    }
    for (cudaEvent_t e : events[k]) cudaEventDestroy(e);
  }
  return ms;
}

std::vector<float> PlanSession::time_steps(int iters) {
  std::vector<float> ms = runner_.time_steps(stream_, iters);
  wait_and_check();
  return ms;
}

void PlanSession::enqueue_and_wait() {
  runner_.enqueue(stream_);
  wait_and_check();
}

void PlanSession::wait_and_check() {
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  runner_.check();
}

bool print_comparison(const Graph& g, const TensorMap& got, const TensorMap& ref) {
  bool ok = true;
  for (TensorId id : g.outputs()) {
    const TensorInfo& info = g.tensor(id);
    const double err = relative_l2_error(got.at(info.name), ref.at(info.name));
    const double bound = relative_l2_bound(g, id);
    const bool pass = err <= bound;
    ok = ok && pass;
    std::printf("   %-14s %-22s rel L2 vs reference %-10.3g (bound %g) %s\n", info.name.c_str(),
                type_string(info).c_str(), err, bound, pass ? "ok" : "FAIL");
  }
  return ok;
}

TensorMap load_or_random_inputs(const Graph& g, const std::string& folder, uint64_t seed) {
  if (folder.empty()) return random_inputs(g, seed);
  TensorMap out;
  for (TensorId id : g.inputs()) {
    const TensorInfo& info = g.tensor(id);
    const std::string path = folder + "/" + npy_file_name(info.name);
    HostTensor t = read_npy(path, info.dtype);
    if (t.dims() != info.dims) {
      throw Error(ErrorCode::invalid_argument, "--load-inputs: '" + path + "' has shape " + dims_to_string(t.dims()) +
                                                   "; input '" + info.name + "' is " + dims_to_string(info.dims));
    }
    out.emplace(info.name, std::move(t));
  }
  return out;
}

Percentiles percentiles(std::vector<float> ms) {
  Percentiles p;
  if (ms.empty()) return p;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return double(ms[std::min(ms.size() - 1, size_t(q * double(ms.size() - 1) + 0.5))]); };
  p.min = ms.front();
  p.max = ms.back();
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  p.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / double(ms.size());
  return p;
}

}  // namespace sinter::cli
