// Several GPUs of one host (or virtual ranks on one GPU), one rank per GPU driven from this process
// (Communicator::create_local), one thread per rank, every rank running the same plan:
//   1. gemm_ar: y = x[M, K] w[K, N] split along K over W ranks (rank r: x_r [M, K/W] times
//      w_r [K/W, N], then all_reduce(sum) of the [M, N] partial sums), bf16, K = N = 8192, M of
//      --m: cuBLASLt then NCCL (CompileOptions::engines {"cublaslt"}, the stream executor),
//      Sinter's stream plan (every engine), the megakernel executor (the all_reduce as tasks over
//      symmetric memory), and the matmul alone and the all_reduce alone (stream executor), which
//      give the share of the all_reduce the megakernel hides: (matmul + all_reduce - mega) /
//      all_reduce.
//   2. decode_tp: one decode step of the Llama stack of --models (1b: Llama-3.2-1B's 16 layers
//      of d 2048 with LM head and argmax; 8b: Llama-3-8B's shape) sharded over W ranks, through
//      the stream, graph and megakernel executors.
// Checks, once per case: gemm_ar at M = 16 and a two-layer stack of the model's layer against the
// CPU reference of the ranks (run_reference_ranks), and the stack's outputs gathered from the ranks
// (gather_outputs) against the unsharded graph's reference; the larger GEMMs' other executors against
// cuBLASLt then NCCL, within the dtype bound (virtual ranks: every rank's all_reduce equal to rank
// 0's and finite). A failed check fails the program.
// Times: each rank's median of --runs enqueues (CUDA events on its stream, after warm-up); the
// slowest rank's median is reported. JSON lines: {"case", "world", "ranks" ("gpus" | "virtual"),
// "executor", "ms"} and, for gemm_ar, {"case", "hidden"}.
//
//   sinter_bench_multi_gpu [--world W] [--virtual W] [--runs N] [--cases gemm_ar,decode_tp]
//                          [--m 16,128,1024,4096] [--models 1b,8b] [--trace-dir DIR]
//     --world W    the first W GPUs (default every visible GPU); fewer than 2 GPUs: a line saying
//                  so, and exit status 3 (nothing to measure)
//     --virtual W  W virtual ranks on GPU 0 (Communicator::create_virtual), megakernel executor
//                  only, each on 1/W of the SMs: the protocol's dry run on one GPU; its times are
//                  not multi-GPU times
//     --trace-dir DIR  one more megakernel decode step with every task recorded: each rank's
//                  Chrome/Perfetto trace in DIR/decode_tp_MODEL_wW_rankR.trace.json
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_plan_timing.hpp"
#include "example_graphs.hpp"
#include "sinter/sinter.hpp"

using namespace sinter;
using bench::median;

namespace {

struct Args {
  int world = 0;          // 0: every visible GPU
  int virtual_ranks = 0;  // > 0: that many on GPU 0
  int runs = 21;
  std::vector<std::string> cases = {"gemm_ar", "decode_tp"};
  std::vector<int64_t> m = {16, 128, 1024, 4096};
  std::vector<std::string> models = {"1b"};
  std::string trace_dir;  // "": no traces
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The ranks of one measurement: communicators, and per rank a runner of the plan, its tensors and
// stream on its GPU.
class Ranks {
 public:
  Ranks(const std::vector<Communicator>& comms, bool virtual_ranks) : comms_(comms), virtual_(virtual_ranks) {}
  int world() const { return static_cast<int>(comms_.size()); }
  int device(int r) const { return virtual_ ? 0 : comms_[r].device(); }
  const char* kind() const { return virtual_ ? "virtual" : "gpus"; }

  // A runner per rank of `plans[r]` (compiled for its GPU) in `mode`, made on every rank at once:
  // a megakernel's symmetric memory is registered collectively (every rank or none). `trace`: the
  // megakernels record every task (Runner::mega_trace).
  void load(const std::vector<Plan>& plans, ExecMode mode, bool trace = false) {
    rank_.clear();
    rank_.resize(world());
    const int sms = device_info(0).sm_count;
    each([&](int r) {
      RunnerOptions o;
      o.mode = mode;
      o.device = device(r);
      o.communicators["tp"] = comms_[r];
      if (virtual_) o.mega.sm_count = sms / world();
      o.mega.trace = trace;
      rank_[r] = std::make_unique<Rank>(plans[r], o, device(r));
    });
  }

  // `body(r)` on every rank at once, one thread each; the first error is rethrown.
  void each(const std::function<void(int)>& body) {
    std::vector<std::string> errors(world());
    std::vector<ErrorCode> codes(world(), ErrorCode::internal);
    std::vector<std::thread> threads;
    for (int r = 0; r < world(); ++r) {
      threads.emplace_back([&, r] {
        try {
          bench::check_cuda(cudaSetDevice(device(r)), "cudaSetDevice");
          body(r);
        } catch (const Error& e) {
          errors[r] = e.message();
          codes[r] = e.code();
        } catch (const std::exception& e) {
          errors[r] = e.what();
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < world(); ++r) {
      if (!errors[r].empty()) throw Error(codes[r], "rank " + std::to_string(r) + ": " + errors[r]);
    }
  }

  std::vector<TensorMap> run(const std::vector<TensorMap>& inputs) {
    std::vector<TensorMap> out(world());
    each([&](int r) {
      Rank& k = *rank_[r];
      k.io.upload(inputs[r], k.stream);
      k.io.poison_outputs(k.stream);
      k.runner.poison_intermediates(k.stream);
      k.runner.enqueue(k.stream);
      out[r] = k.io.download(k.stream);
      k.runner.check();
    });
    return out;
  }

  // Each rank's megakernel trace of its last enqueue as a Chrome/Perfetto file DIR/LABEL_rankR.trace.json.
  void write_traces(const std::string& dir, const std::string& label) {
    for (int r = 0; r < world(); ++r) {
      const std::string path = dir + "/" + label + "_rank" + std::to_string(r) + ".trace.json";
      const std::string json = mega_trace_json(rank_[r]->runner.mega_description(), rank_[r]->runner.mega_trace());
      std::FILE* f = std::fopen(path.c_str(), "w");
      if (!f) throw Error(ErrorCode::io, "cannot write '" + path + "'");
      std::fwrite(json.data(), 1, json.size(), f);
      std::fclose(f);
      std::printf("{\"case\": \"%s\", \"rank\": %d, \"trace\": \"%s\"}\n", label.c_str(), r,
                  bench::json_escape(path).c_str());
    }
  }

  // The slowest rank's median milliseconds of `runs` enqueues, after warm-up.
  double time_ms(int runs) {
    std::vector<double> ms(world());
    each([&](int r) {
      Rank& k = *rank_[r];
      for (int i = 0; i < 3; ++i) k.runner.enqueue(k.stream);
      ms[r] = median(bench::time_calls(k.stream, runs, [&] { k.runner.enqueue(k.stream); }));
      k.runner.check();
    });
    return *std::max_element(ms.begin(), ms.end());
  }

 private:
  struct Rank {
    Rank(const Plan& plan, const RunnerOptions& o, int device)
        : stream(device), runner(plan, o), io(plan, device) {
      io.bind(runner);
    }
    bench::Stream stream;
    Runner runner;
    DeviceTensors io;
  };
  std::vector<Communicator> comms_;
  bool virtual_ = false;
  std::vector<std::unique_ptr<Rank>> rank_;
};

// One plan, compiled on GPU 0, for every rank: the ranks must run the same program (the same
// task graphs, counters and allocations), and the GPUs of one host are alike.
std::vector<Plan> compile_ranks(const Ranks& ranks, const Graph& g, const CompileOptions& base) {
  CompileOptions o = base;
  o.device = ranks.device(0);
  return std::vector<Plan>(ranks.world(), compile(g, o));
}

// The megakernel's plan: virtual ranks share one GPU, so every step must be a task of it (our
// kernels only, the runner refuses a step launched on its own); separate GPUs take any engine.
CompileOptions mega_options(const Args& a) {
  CompileOptions o;
  if (a.virtual_ranks > 0) o.engines = {"jit"};
  return o;
}

bool close_enough(const Graph& g, const std::vector<TensorMap>& want, const std::vector<TensorMap>& got,
                  const std::string& what) {
  bool ok = true;
  for (size_t r = 0; r < want.size(); ++r) {
    for (TensorId id : g.outputs()) {
      const std::string& name = g.tensor(id).name;
      const double err = relative_l2_error(got[r].at(name), want[r].at(name)), bound = relative_l2_bound(g, id);
      if (err > bound || !(err == err)) {
        std::printf("{\"case\": \"%s\", \"check\": \"fail\", \"rank\": %zu, \"output\": \"%s\", \"rel_l2\": %.3g, "
                    "\"bound\": %.3g}\n",
                    what.c_str(), r, name.c_str(), err, bound);
        ok = false;
      }
    }
  }
  return ok;
}

// Virtual ranks refuse a plan with a step outside the megakernel (Runner::enqueue): that case is
// skipped, saying why, and the others go on.
bool refused_on_virtual_ranks(const Args& a, const Error& e) {
  return a.virtual_ranks > 0 && e.code() == ErrorCode::unsupported &&
         e.message().find("must run inside its megakernel") != std::string::npos;
}

void skipped(const std::string& c, const Ranks& ranks, const Error& e) {
  std::printf("{\"case\": \"%s\", \"world\": %d, \"ranks\": \"%s\", \"executor\": \"mega\", \"skipped\": \"%s\"}\n",
              c.c_str(), ranks.world(), ranks.kind(), bench::json_escape(e.message()).c_str());
  std::fflush(stdout);
}

void emit(const std::string& c, const Ranks& ranks, const std::string& executor, double ms) {
  std::printf("{\"case\": \"%s\", \"world\": %d, \"ranks\": \"%s\", \"executor\": \"%s\", \"ms\": %.5f}\n", c.c_str(),
              ranks.world(), ranks.kind(), executor.c_str(), ms);
  std::fflush(stdout);
}

// Rank r's program of gemm_ar: x_r [M, K / W] times w_r [K / W, N], all_reduce(sum).
Graph gemm_ar_graph(int64_t m, int world, bool matmul, bool all_reduce) {
  const int64_t k = 8192, n = 8192;
  Graph g("gemm_ar_m" + std::to_string(m) + "_w" + std::to_string(world));
  Tensor y = matmul ? g.matmul(g.input("x", DType::bf16, {m, k / world}), g.input("w", DType::bf16, {k / world, n}))
                    : g.input("partial", DType::bf16, {m, n});
  if (all_reduce) y = g.all_reduce(y, "tp", world);
  g.output(y, "y");
  g.validate();
  return g;
}

std::vector<TensorMap> rank_inputs(const Graph& g, int world, uint64_t seed) {
  std::vector<TensorMap> in;
  for (int r = 0; r < world; ++r) in.push_back(random_inputs(g, seed + 1000003ull * r));
  return in;
}

bool gemm_ar(Ranks& ranks, const Args& a) {
  bool ok = true;
  const int w = ranks.world();
  for (int64_t m : a.m) {
    const std::string c = "gemm_ar_m" + std::to_string(m);
    const Graph g = gemm_ar_graph(m, w, true, true);
    const std::vector<TensorMap> in = rank_inputs(g, w, 41 + m);
    std::optional<std::vector<TensorMap>> stream_out;  // the first executor's (cuBLASLt then NCCL)
    auto measure = [&](const Graph& graph, const CompileOptions& co, ExecMode mode, const std::string& executor,
                       bool check) {
      ranks.load(compile_ranks(ranks, graph, co), mode);
      const std::vector<TensorMap> got = ranks.run(&graph == &g ? in : rank_inputs(graph, w, 43 + m));
      if (check && &graph == &g) {
        if (m <= 16) {
          ok &= close_enough(g, run_reference_ranks(std::vector<Graph>(w, g), in), got, c + " " + executor);
        } else if (stream_out) {
          ok &= close_enough(g, *stream_out, got, c + " " + executor + " against cublaslt+nccl");
        } else if (a.virtual_ranks > 0) {
          // no stream plan to compare with (virtual ranks run only megakernels): every rank's
          // all_reduce must be the same numbers, and finite
          ok &= close_enough(g, std::vector<TensorMap>(w, got[0]), got, c + " " + executor + " ranks agree");
        } else {
          stream_out = got;
        }
      }
      const double ms = ranks.time_ms(a.runs);
      emit(c, ranks, executor, ms);
      return ms;
    };
    double matmul_ms = 0, ar_ms = 0, mega_ms = 0;
    if (a.virtual_ranks == 0) {
      CompileOptions cublas;
      cublas.engines = {"cublaslt"};
      measure(g, cublas, ExecMode::stream, "cublaslt+nccl", true);
      measure(g, {}, ExecMode::stream, "stream", true);
      matmul_ms = measure(gemm_ar_graph(m, w, true, false), {}, ExecMode::stream, "matmul_only", false);
      ar_ms = measure(gemm_ar_graph(m, w, false, true), {}, ExecMode::stream, "all_reduce_only", false);
    }
    try {
      mega_ms = measure(g, mega_options(a), ExecMode::mega, "mega", true);
    } catch (const Error& e) {
      // virtual ranks: a plan with a step outside the megakernel is refused (the runner says why)
      if (!refused_on_virtual_ranks(a, e)) throw;
      skipped(c, ranks, e);
      continue;
    }
    if (ar_ms > 0) {
      std::printf("{\"case\": \"%s\", \"world\": %d, \"hidden\": %.3f}\n", c.c_str(), w,
                  (matmul_ms + ar_ms - mega_ms) / ar_ms);
    }
  }
  return ok;
}

bool decode_tp(Ranks& ranks, const Args& a) {
  bool ok = true;
  const int w = ranks.world();
  for (const std::string& model : a.models) {
    examples::LlamaConfig c = model == "8b" ? examples::llama_3_8b() : examples::llama_3_2_1b();
    // the check: two layers of the same shape against the ranks' CPU reference and, gathered, the
    // unsharded graph's
    examples::LlamaConfig small = c;
    small.layers = 2;
    const Graph small_full = examples::llama_decode_stack(small);
    const std::vector<Graph> small_ranks = examples::llama_decode_stack_tp(small, w);
    const std::vector<Graph> graphs = examples::llama_decode_stack_tp(c, w);
    const std::string name = "decode_tp_" + model;
    std::vector<ExecMode> modes = {ExecMode::mega};
    if (a.virtual_ranks == 0) modes = {ExecMode::stream, ExecMode::graph, ExecMode::mega};
    for (ExecMode mode : modes) {
      const char* executor = mode == ExecMode::stream ? "stream" : mode == ExecMode::graph ? "graph" : "mega";
      try {
        ranks.load(compile_ranks(ranks, small_ranks[0], mode == ExecMode::mega ? mega_options(a) : CompileOptions{}), mode);
        const TensorMap values = random_inputs(small_full, 77);
        const std::vector<TensorMap> small_in = shard_inputs(small_full, small_ranks, values);
        const std::vector<TensorMap> got = ranks.run(small_in);
        ok &= close_enough(small_ranks[0], run_reference_ranks(small_ranks, small_in), got,
                           name + " (2 layers) " + executor);
        ok &= close_enough(small_full, {run_reference(small_full, values)},
                           {gather_outputs(small_full, small_ranks, got)},
                           name + " (2 layers) " + executor + " against the unsharded graph");
        const CompileOptions co = mode == ExecMode::mega ? mega_options(a) : CompileOptions{};
        ranks.load(compile_ranks(ranks, graphs[0], co), mode);
        std::vector<TensorMap> in;
        for (int r = 0; r < w; ++r) in.push_back(random_inputs(graphs[r], 91 + r));
        ranks.run(in);
        emit(name, ranks, executor, ranks.time_ms(a.runs));
        if (mode == ExecMode::mega && !a.trace_dir.empty()) {
          // one more step with every task recorded, each rank's timeline in a file of its own
          ranks.load(compile_ranks(ranks, graphs[0], co), mode, /*trace=*/true);
          ranks.run(in);
          ranks.write_traces(a.trace_dir, name + "_w" + std::to_string(w));
        }
      } catch (const Error& e) {
        if (!refused_on_virtual_ranks(a, e)) throw;
        skipped(name, ranks, e);
      }
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool value = i + 1 < argc;
    if (arg == "--world" && value) {
      a.world = std::atoi(argv[++i]);
    } else if (arg == "--virtual" && value) {
      a.virtual_ranks = std::atoi(argv[++i]);
    } else if (arg == "--runs" && value) {
      a.runs = std::max(3, std::atoi(argv[++i]));
    } else if (arg == "--cases" && value) {
      a.cases = split(argv[++i]);
    } else if (arg == "--m" && value) {
      a.m.clear();
      for (const std::string& s : split(argv[++i])) a.m.push_back(std::atoll(s.c_str()));
    } else if (arg == "--models" && value) {
      a.models = split(argv[++i]);
    } else if (arg == "--trace-dir" && value) {
      a.trace_dir = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: sinter_bench_multi_gpu [--world W] [--virtual W] [--runs N] [--cases gemm_ar,decode_tp] "
                   "[--m 16,128,1024,4096] [--models 1b,8b] [--trace-dir DIR]\n");
      return 2;
    }
  }
  if (!bench::have_gpu("sinter_bench_multi_gpu")) return 1;
  try {
    std::vector<Communicator> comms;
    const bool virtual_ranks = a.virtual_ranks > 0;
    if (virtual_ranks) {
      comms = Communicator::create_virtual(a.virtual_ranks, 0);
    } else {
      const int gpus = gpu_availability().count;
      const int world = a.world > 0 ? std::min(a.world, gpus) : gpus;
      if (world < 2) {
        std::printf("{\"case\": \"multi_gpu\", \"skipped\": \"needs 2 GPUs or more of one host; this machine has %d "
                    "(--virtual W runs the megakernel's collectives on one)\"}\n",
                    gpus);
        return 3;
      }
      std::vector<int> devices;
      for (int d = 0; d < world; ++d) devices.push_back(d);
      comms = Communicator::create_local(devices);
    }
    Ranks ranks(comms, virtual_ranks);
    bool ok = true;
    for (const std::string& c : a.cases) {
      if (c == "gemm_ar") {
        ok &= gemm_ar(ranks, a);
      } else if (c == "decode_tp") {
        ok &= decode_tp(ranks, a);
      } else {
        std::fprintf(stderr, "sinter_bench_multi_gpu: no case '%s' (gemm_ar, decode_tp)\n", c.c_str());
        return 2;
      }
    }
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::printf("{\"case\": \"multi_gpu\", \"error\": \"%s\"}\n", bench::json_escape(e.message()).c_str());
    std::fprintf(stderr, "sinter_bench_multi_gpu: %s\n", e.message().c_str());
    return 1;
  }
}
