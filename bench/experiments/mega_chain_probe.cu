// mega_chain_probe: the megakernel's own dispatcher (kernels/mega/megakernel.cuh) on the 200-op
// chain, with hand-built tables, to split its cost per op between the dispatcher and the task code.
// chain_probe (the same folder) measured a mimic of the dispatcher at ~0.59 us per op on an H100
// while the generated chain megakernel takes ~1.14 us per op; this probe runs the real dispatcher
// loop with
//   empty      a task function that returns at once: the dispatcher alone
//   minimal    a hand-written float4 sigmoid reading its pointers from the same argument struct
//   pointwise  the pointwise template's task as the jit engine generates it (sigmoid)
//   mixed      the chain's real mix: pointwise sigmoid, tanh, neg in turn
// each on 1 CTA and on a full grid (2 CTAs per SM) of which all but one have empty queues (the real
// launch's shape), the median of 15 launches of 200 tasks, as microseconds per task.
#define SINTER_MEGAKERNEL 1
#define SINTER_MEGA_ARGS_BYTES 192
#include "mega/megakernel.cuh"
#include "pointwise/pointwise.cuh"

// clang-format off: the generated task shape (codegen_pointwise.cpp), one op per Op functor
struct OpSigmoid { __device__ __forceinline__ float operator()(float x) const { return op_sigmoid(x); } };
struct OpTanh { __device__ __forceinline__ float operator()(float x) const { return tanhf(x); } };
struct OpNeg { __device__ __forceinline__ float operator()(float x) const { return -x; } };
// clang-format on

struct Cfg {
  static constexpr int kVec = 4, kUnroll = 4, kBlock = 256;
  static constexpr int kRank = 1;
  static constexpr bool kIndex64 = false, kPipelined = false;
};
typedef IndexType<Cfg::kIndex64>::type Index;

struct Args {
  SinterIterShape shape;
  const float* in0;
  float* out0;
};
static_assert(sizeof(Args) == 192, "the chain's argument struct");

template <class Op>
struct Fused {
  static constexpr int kExits = 0;
  struct Loaded {
    float x0[Cfg::kUnroll][Cfg::kVec];
  };
  struct Scalars {};
  struct Acc {};
  static __device__ __forceinline__ Scalars scalars(const Args&) { return Scalars{}; }
  static __device__ __forceinline__ void init(Acc&) {}
  static __device__ __forceinline__ void load(const Args& a, int u, Index base, Loaded& L) {
    load_raw(a.in0 + base, L.x0[u]);
  }
  static __device__ __forceinline__ void compute(const Args& a, int u, Index base, const Loaded& L, const Scalars&,
                                                Acc&) {
    float y0[Cfg::kVec];
    float x0f[Cfg::kVec];
    convert_vec(L.x0[u], x0f);
#pragma unroll
    for (int j = 0; j < Cfg::kVec; ++j) y0[j] = Op()(x0f[j]);
    store_vec(a.out0 + base, y0);
  }
  static __device__ __noinline__ void element(const Args& a, i64 i) { store_one(a.out0 + i, Op()(load_one(a.in0 + i))); }
  static __device__ __forceinline__ void finish(const Args&, Acc&, float*) {}
};

template <class Op>
__device__ __noinline__ void pointwise_task(const Args& a) {
  pointwise_tiles<Cfg, Fused<Op>>(a);
}
__device__ __noinline__ void empty_task(const Args&) {}
__device__ __noinline__ void minimal_task(const Args& a) {
  const float4 v = reinterpret_cast<const float4*>(a.in0)[threadIdx.x];
  reinterpret_cast<float4*>(a.out0)[threadIdx.x] =
      make_float4(op_sigmoid(v.x), op_sigmoid(v.y), op_sigmoid(v.z), op_sigmoid(v.w));
}

struct Dispatch {
  __device__ __forceinline__ void operator()(u32 function, const char* args) const {
    const Args& a = *reinterpret_cast<const Args*>(args);
    switch (function) {
      case 0: empty_task(a); return;
      case 1: minimal_task(a); return;
      case 2: pointwise_task<OpSigmoid>(a); return;
      case 3: pointwise_task<OpTanh>(a); return;
      case 4: pointwise_task<OpNeg>(a); return;
      default: return;
    }
  }
};

extern "C" __global__ void __launch_bounds__(256, 2) mega_chain(const __grid_constant__ SinterMegaParams p) {
  sinter_mega_main(p, Dispatch{});
}

#undef blockIdx
#undef gridDim
#undef blockDim
#undef __syncthreads

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "probe_check.cuh"

int main() {
  constexpr int kTasks = 200, kElems = 1024;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("mega_chain_probe on %s: the megakernel dispatcher over %d dependent tasks of %d f32, 256 threads\n",
              prop.name, kTasks, kElems);
  float* bufs;
  CHECK(cudaMalloc(&bufs, sizeof(float) * kElems * 2));
  std::vector<float> h(2 * kElems);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  CHECK(cudaMemcpy(bufs, h.data(), sizeof(float) * h.size(), cudaMemcpyHostToDevice));
  std::vector<Args> args(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    std::memset(&args[i], 0, sizeof(Args));
    args[i].shape.rank = 1;
    args[i].shape.numel = kElems;
    args[i].shape.size[0] = kElems;
    args[i].in0 = bufs + (i & 1) * kElems;
    args[i].out0 = bufs + ((i + 1) & 1) * kElems;
  }
  char* d_args;
  CHECK(cudaMalloc(&d_args, sizeof(Args) * kTasks + 64));
  CHECK(cudaMemcpy(d_args, args.data(), sizeof(Args) * kTasks, cudaMemcpyHostToDevice));
  SinterMegaTask* d_tasks;
  CHECK(cudaMalloc(&d_tasks, sizeof(SinterMegaTask) * kTasks));
  unsigned* d_queue;
  const int full = 2 * prop.multiProcessorCount;  // the megakernel's grid: __launch_bounds__(256, 2)
  CHECK(cudaMalloc(&d_queue, sizeof(unsigned) * (full + 1)));
  unsigned long long *counters, *control;
  CHECK(cudaMalloc(&counters, 128));
  CHECK(cudaMalloc(&control, SINTER_MEGA_CONTROL_WORDS * 128));
  SinterMegaFault* fault;
  CHECK(cudaMalloc(&fault, sizeof(SinterMegaFault)));
  SinterMegaWait* waits;
  CHECK(cudaMalloc(&waits, 16));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  const char* names[] = {"empty", "minimal", "pointwise", "mixed"};
  for (int variant = 0; variant < 4; ++variant) {
    std::vector<SinterMegaTask> tasks(kTasks);
    for (int i = 0; i < kTasks; ++i) {
      SinterMegaTask& t = tasks[i];
      std::memset(&t, 0, sizeof(t));
      t.function = variant < 3 ? variant : 2 + i % 3;
      t.threads = 256;
      t.grid_x = t.grid_y = t.grid_z = 1;
      t.kernel = i;
      t.publish = t.publish_range = SINTER_MEGA_NO_COUNTER;
      t.args_offset = i * sizeof(Args);
      t.args_bytes = sizeof(Args);
    }
    CHECK(cudaMemcpy(d_tasks, tasks.data(), sizeof(SinterMegaTask) * kTasks, cudaMemcpyHostToDevice));
    for (int ctas : {1, full}) {
      std::vector<unsigned> queue(ctas + 1, kTasks);
      queue[0] = 0;
      CHECK(cudaMemcpy(d_queue, queue.data(), sizeof(unsigned) * queue.size(), cudaMemcpyHostToDevice));
      CHECK(cudaMemset(control, 0, SINTER_MEGA_CONTROL_WORDS * 128));
      SinterMegaParams p{};
      p.waits = waits;
      p.tasks = d_tasks;
      p.queue_start = d_queue;
      p.args = d_args;
      p.counters = counters;
      p.control = control;
      p.fault = fault;
      p.trace = nullptr;
      p.watchdog_ns = 5000000000ull;
      std::vector<float> us;
      for (int rep = 0; rep < 16; ++rep) {
        CHECK(cudaEventRecord(e0));
        mega_chain<<<ctas, 256>>>(p);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaGetLastError());
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep > 0) us.push_back(ms * 1000.0f / kTasks);
      }
      std::sort(us.begin(), us.end());
      std::printf("%-10s %3d CTAs  %.3f us per task (launch included)\n", names[variant], ctas, us[us.size() / 2]);
    }
  }
  return 0;
}
