// The 200-op chain's tasks and tables for the probes that run the megakernel's dispatcher on
// hand-built tables (mega_chain_probe, dispatch_ablation_probe): the task functions (empty, a
// hand-written float4 sigmoid, and the pointwise template's task as the jit engine generates it:
// sigmoid, tanh, neg), their 192-byte argument struct, the dispatch switch, and, on the host, the
// chain's buffers, argument structs and task records. Include it first: it includes
// kernels/mega/megakernel.cuh, whose macros make blockIdx, gridDim and blockDim the task's view.
#pragma once

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

// ---- host side ----------------------------------------------------------------------------------

#include <cstring>
#include <vector>

#include "probe_check.cuh"

// The chain's device tables: task i reads buffer i % 2 and writes the other (1024 f32 each), its
// argument struct at args + i * sizeof(Args); a queue of up to `max_ctas` CTAs.
struct ChainTables {
  char* args = nullptr;
  SinterMegaTask* tasks = nullptr;
  unsigned* queue = nullptr;
  unsigned long long *counters = nullptr, *control = nullptr;
  SinterMegaFault* fault = nullptr;
  SinterMegaWait* waits = nullptr;
  int count = 0;

  ChainTables(int task_count, int elems, int max_ctas) : count(task_count) {
    float* bufs;
    CHECK(cudaMalloc(&bufs, sizeof(float) * elems * 2));
    std::vector<float> h(2 * static_cast<size_t>(elems));
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
    CHECK(cudaMemcpy(bufs, h.data(), sizeof(float) * h.size(), cudaMemcpyHostToDevice));
    std::vector<Args> a(count);
    for (int i = 0; i < count; ++i) {
      std::memset(&a[i], 0, sizeof(Args));
      a[i].shape.rank = 1;
      a[i].shape.numel = elems;
      a[i].shape.size[0] = elems;
      a[i].in0 = bufs + (i & 1) * elems;
      a[i].out0 = bufs + ((i + 1) & 1) * elems;
    }
    CHECK(cudaMalloc(&args, sizeof(Args) * count + 64));
    CHECK(cudaMemcpy(args, a.data(), sizeof(Args) * count, cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&tasks, sizeof(SinterMegaTask) * count));
    CHECK(cudaMalloc(&queue, sizeof(unsigned) * (max_ctas + 1)));
    CHECK(cudaMalloc(&counters, 128));
    CHECK(cudaMalloc(&control, SINTER_MEGA_CONTROL_WORDS * 128));
    CHECK(cudaMalloc(&fault, sizeof(SinterMegaFault)));
    CHECK(cudaMalloc(&waits, 16));
  }

  // Every task runs `function` (Dispatch's case; -1: sigmoid, tanh, neg in turn), waits for
  // nothing and publishes nothing.
  void set_tasks(int function) {
    std::vector<SinterMegaTask> t(count);
    for (int i = 0; i < count; ++i) {
      std::memset(&t[i], 0, sizeof(SinterMegaTask));
      t[i].function = function >= 0 ? static_cast<unsigned>(function) : 2 + i % 3;
      t[i].threads = 256;
      t[i].grid_x = t[i].grid_y = t[i].grid_z = 1;
      t[i].kernel = i;
      t[i].publish = t[i].publish_range = SINTER_MEGA_NO_COUNTER;
      t[i].args_offset = i * sizeof(Args);
      t[i].args_bytes = sizeof(Args);
    }
    CHECK(cudaMemcpy(tasks, t.data(), sizeof(SinterMegaTask) * count, cudaMemcpyHostToDevice));
  }

  // CTA 0 runs every task; CTAs 1 .. ctas - 1 have empty queues. Resets the control words.
  SinterMegaParams params(int ctas) const {
    std::vector<unsigned> q(ctas + 1, count);
    q[0] = 0;
    CHECK(cudaMemcpy(queue, q.data(), sizeof(unsigned) * q.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(control, 0, SINTER_MEGA_CONTROL_WORDS * 128));
    SinterMegaParams p{};
    p.waits = waits;
    p.tasks = tasks;
    p.queue_start = queue;
    p.args = args;
    p.counters = counters;
    p.control = control;
    p.fault = fault;
    p.trace = nullptr;
    p.watchdog_ns = 5000000000ull;
    return p;
  }
};
