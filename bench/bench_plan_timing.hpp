// What the benchmark programs share: a graph compiled through the public API (sinter/compile.hpp)
// and timed the way Sinter times its kernels (DESIGN.md, "Timing"): a Runner and device memory for
// the plan's inputs and outputs, a non-blocking stream of its own, CUDA events around each enqueue,
// warm-up first, the median.
//
//   sinter::bench::BenchPlan p(graph, options);
//   TensorMap out = p.run(inputs);             // once, outputs poisoned first
//   double ms = p.time_ms(100, 10, cold_l2);   // median of 100 enqueues
#pragma once

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sinter/sinter.hpp"

namespace sinter::bench {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(ErrorCode::cuda, std::string(what) + ": " + cudaGetErrorString(e));
}

// The first thing each program does after reading its arguments: without a usable GPU it says so
// and the program exits with status 1 (there is nothing it could measure).
inline bool have_gpu(const char* program) {
  const GpuAvailability gpu = gpu_availability();
  if (!gpu.available) std::fprintf(stderr, "%s needs a GPU: %s\n", program, gpu.reason.c_str());
  return gpu.available;
}

// A folder under the system's temporary folder named for this process, made empty, removed
// with its contents when this goes away: a kernel cache of the run's own.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix)
      : path_(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string str() const { return path_.string(); }
  std::filesystem::path path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class Stream {
 public:
  explicit Stream(int device = 0) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }
  void synchronize() const { check_cuda(cudaStreamSynchronize(s_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t s_ = nullptr;
};

// The time of each of `iters` calls of `call` on `stream`, in milliseconds, each between two
// events. Every call is enqueued before the host waits once, so no interval holds the host's
// launch latency (the GPU runs call i while the host enqueues call i + 1). `before_each`
// (optional) runs before each call's start event, outside its interval.
inline std::vector<float> time_calls(cudaStream_t stream, int iters, const std::function<void()>& call,
                                     const std::function<void()>& before_each = {}) {
  std::vector<cudaEvent_t> events(2 * static_cast<size_t>(std::max(iters, 1)), nullptr);
  struct Destroy {
    std::vector<cudaEvent_t>& e;
    ~Destroy() {
      for (cudaEvent_t x : e) {
        if (x) cudaEventDestroy(x);
      }
    }
  } destroy{events};
  for (cudaEvent_t& e : events) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
  const size_t n = events.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    if (before_each) before_each();
    check_cuda(cudaEventRecord(events[2 * i], stream), "cudaEventRecord");
    call();
    check_cuda(cudaEventRecord(events[2 * i + 1], stream), "cudaEventRecord");
  }
  check_cuda(cudaEventSynchronize(events.back()), "cudaEventSynchronize");
  std::vector<float> ms(n);
  for (size_t i = 0; i < n; ++i) {
    check_cuda(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]), "cudaEventElapsedTime");
  }
  return ms;
}

// `s` inside a JSON string: quotes and backslashes escaped, control characters dropped.
inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
  }
  return out;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}
inline double median(const std::vector<float>& v) { return median(std::vector<double>(v.begin(), v.end())); }

// A buffer twice the size of the GPU's L2 cache (at least 2 MiB), overwritten on a stream before
// a timed launch: the launch finds none of its operands in L2, as in a model that streams each
// weight once per step. One per device, kept for the process.
class L2Flush {
 public:
  static L2Flush& of(int device) {
    static std::map<int, std::unique_ptr<L2Flush>> all;
    std::unique_ptr<L2Flush>& f = all[device];
    if (!f) f.reset(new L2Flush(device));
    return *f;
  }
  void operator()(cudaStream_t stream) {
    check_cuda(cudaMemsetAsync(data_, fills_++ & 0xff, bytes_, stream), "cudaMemsetAsync (L2 flush)");
  }
  ~L2Flush() {
    if (data_) cudaFree(data_);  // at exit; an error then has no one to tell
  }

 private:
  explicit L2Flush(int device) : bytes_(2 * std::max<size_t>(device_info(device).l2_cache_bytes, size_t{1} << 20)) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    check_cuda(cudaMalloc(&data_, bytes_), "cudaMalloc (L2 flush buffer)");
  }
  size_t bytes_;
  void* data_ = nullptr;
  int fills_ = 0;
};

// A step's description, with the reason where it is not on the engine asked for.
inline std::string step_description(const StepDescription& s) {
  return s.description + (s.fallback.empty() ? "" : " (fallback from " + s.fallback + ")");
}
// "engine: description (fallback from ...)"
inline std::string step_text(const StepDescription& s) { return s.engine + ": " + step_description(s); }

// A compiled plan with a Runner, device memory for its graph inputs and outputs (bound to the
// runner) and a non-blocking stream.
class BenchPlan {
 public:
  BenchPlan(const Graph& g, const CompileOptions& options, ExecMode mode = ExecMode::stream)
      : BenchPlan(compile(g, options), mode, options.device) {}
  explicit BenchPlan(const Plan& plan, ExecMode mode = ExecMode::stream, int device = 0)
      : device_(device),
        stream_(device),
        plan_(plan),
        description_(plan.describe()),
        runner_(plan, RunnerOptions{mode, nullptr, 0, device, {}}),
        io_(plan, device) {
    io_.bind(runner_);
  }

  const Plan& plan() const { return plan_; }
  const Graph& graph() const { return plan_.graph(); }
  // The steps in order (engine, config, description, fallback), and what compiling did: the
  // candidates each region's tuning timed (StepDescription::tried) and the compile report.
  const PlanDescription& description() const { return description_; }
  const std::vector<StepDescription>& steps() const { return description_.steps; }
  Runner& runner() { return runner_; }
  DeviceTensors& io() { return io_; }
  cudaStream_t stream() const { return stream_; }

  // Copies the inputs to the device (asynchronous, on the plan's stream).
  void upload(const TensorMap& inputs) { io_.upload(inputs, stream_); }
  void enqueue() { runner_.enqueue(stream_); }
  // One run on `inputs`, every output and intermediate poisoned first (NaN bytes), so a value a
  // kernel fails to write cannot pass for a correct one.
  TensorMap run(const TensorMap& inputs) {
    upload(inputs);
    io_.poison_outputs(stream_);
    runner_.poison_intermediates(stream_);
    enqueue();
    return io_.download(stream_);
  }
  // The median milliseconds of `iters` enqueues (time_calls) after `warmup` untimed ones, on the
  // inputs uploaded last. cold_l2: L2Flush before each timed enqueue, outside its events.
  double time_ms(int iters, int warmup, bool cold_l2 = false) {
    for (int i = 0; i < warmup; ++i) enqueue();
    std::function<void()> flush;
    if (cold_l2) flush = [this] { L2Flush::of(device_)(stream_); };
    return median(time_calls(stream_, iters, [this] { enqueue(); }, flush));
  }
  // The median milliseconds of each step launched alone, `iters` times (Runner::time_steps).
  std::vector<float> step_ms(int iters) { return runner_.time_steps(stream_, iters); }

 private:
  int device_;
  Stream stream_;
  Plan plan_;
  PlanDescription description_;
  Runner runner_;
  DeviceTensors io_;
};

// The nodes of the CUDA graph one enqueue of `plan` records: a stream-mode runner on `io`'s
// buffers, enqueued once (the first enqueue also zeroes the step workspaces, which a graph-mode
// runner's capture does not hold), then captured once more on `stream`.
inline size_t captured_graph_nodes(const Plan& plan, const DeviceTensors& io, cudaStream_t stream, int device = 0) {
  Runner r(plan, RunnerOptions{ExecMode::stream, nullptr, 0, device, {}});
  io.bind(r);
  r.enqueue(stream);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t g = nullptr;
  try {
    r.enqueue(stream);
  } catch (...) {
    cudaStreamEndCapture(stream, &g);
    if (g) cudaGraphDestroy(g);
    throw;
  }
  check_cuda(cudaStreamEndCapture(stream, &g), "cudaStreamEndCapture");
  size_t nodes = 0;
  const cudaError_t e = cudaGraphGetNodes(g, nullptr, &nodes);
  cudaGraphDestroy(g);
  check_cuda(e, "cudaGraphGetNodes");
  return nodes;
}

}  // namespace sinter::bench
