// The 200-op chain's tasks and tables for the probes that run the megakernel's dispatcher on
// hand-built tables (mega_chain_probe, dispatch_ablation_probe): the task functions (empty, a
// hand-written float4 sigmoid, and the pointwise template's task as the jit engine generates it:
// sigmoid, tanh, neg), their 192-byte argument struct, the dispatch switch, and, on the host, the
// chain's buffers, argument structs and task records. Include it first: it includes
// kernels/mega/megakernel.cuh, whose macros make blockIdx, gridDim and blockDim the task's view.
#pragma once

#define SINTER_MEGAKERNEL 1
#define SINTER_MEGA_ARGS_BYTES 192  // the chain's argument struct (the preloaded loops' stride)
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

#include <cstdlib>
#include <cstring>
#include <vector>

#include "ir/error.cpp"           // sinter::Error, which the layout throws
#include "mega/queue_image.cpp"  // the megakernel's own queue layout (src/mega/queue_image.*)
#include "probe_check.cuh"

// The flat tables the comparison loops of dispatch_ablation_probe read: every task's record and
// argument struct by index (args_offset into `args`).
struct FlatTables {
  const SinterMegaTask* tasks;
  const char* args;
  unsigned count;
};

// The chain's device tables: task i reads buffer i % 2 and writes the other (1024 f32 each); its
// own task kernel i with its own argument struct. params() lays the queues out as the megakernel
// does (CTA 0 runs every task; the others have none); flat() gives the same tasks as flat tables.
struct ChainTables {
  char* args = nullptr;
  SinterMegaTask* tasks = nullptr;
  SinterMegaQueue* queues = nullptr;
  char* image = nullptr;
  unsigned long long *counters = nullptr, *control = nullptr;
  SinterMegaFault* fault = nullptr;
  int count = 0, max_ctas = 0;
  std::vector<Args> host_args;
  std::vector<SinterMegaTask> host_tasks;

  ChainTables(int task_count, int elems, int ctas) : count(task_count), max_ctas(ctas) {
    float* bufs;
    CHECK(cudaMalloc(&bufs, sizeof(float) * elems * 2));
    std::vector<float> h(2 * static_cast<size_t>(elems));
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
    CHECK(cudaMemcpy(bufs, h.data(), sizeof(float) * h.size(), cudaMemcpyHostToDevice));
    host_args.resize(count);
    for (int i = 0; i < count; ++i) {
      Args& a = host_args[i];
      std::memset(&a, 0, sizeof(Args));
      a.shape.rank = 1;
      a.shape.numel = elems;
      a.shape.size[0] = elems;
      a.in0 = bufs + (i & 1) * elems;
      a.out0 = bufs + ((i + 1) & 1) * elems;
    }
    CHECK(cudaMalloc(&args, sizeof(Args) * count + 64));
    CHECK(cudaMemcpy(args, host_args.data(), sizeof(Args) * count, cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&tasks, sizeof(SinterMegaTask) * count));
    CHECK(cudaMalloc(&queues, sizeof(SinterMegaQueue) * max_ctas));
    CHECK(cudaMalloc(&image, image_bytes()));
    CHECK(cudaMalloc(&counters, 128));
    CHECK(cudaMalloc(&control, SINTER_MEGA_CONTROL_WORDS * 128));
    CHECK(cudaMalloc(&fault, sizeof(SinterMegaFault)));
  }

  // Every task runs `function` (Dispatch's case; -1: sigmoid, tanh, neg in turn), waits for
  // nothing and publishes nothing.
  void set_tasks(int function) {
    host_tasks.assign(count, SinterMegaTask{});
    for (int i = 0; i < count; ++i) {
      SinterMegaTask& t = host_tasks[i];
      t.function = function >= 0 ? static_cast<unsigned>(function) : 2 + i % 3;
      t.threads = 256;
      t.grid_x = t.grid_y = t.grid_z = 1;
      t.kernel = i;
      t.publish = t.publish_range = SINTER_MEGA_NO_COUNTER;
      t.args_offset = i * sizeof(Args);
      t.args_bytes = sizeof(Args);
    }
    CHECK(cudaMemcpy(tasks, host_tasks.data(), sizeof(SinterMegaTask) * count, cudaMemcpyHostToDevice));
  }

  // room for the image: a record and an argument struct a task, each chunk's header and padding
  size_t image_bytes() const { return (sizeof(SinterMegaTask) + sizeof(Args) + 128) * count + 4096; }

  FlatTables flat() const { return FlatTables{tasks, args, static_cast<unsigned>(count)}; }

  // The chunk buffers' size (the megakernel's default) and the dynamic shared memory a launch
  // of the dispatcher needs for the two of them.
  static constexpr unsigned kChunkBytes = 8192;
  static constexpr size_t dynamic() { return 2 * kChunkBytes; }

  // `ctas` queues: CTA 0 runs every task, in chunks of kChunkBytes. Resets the control words.
  SinterMegaParams params(int ctas) const {
    if (ctas > max_ctas) std::abort();
    std::vector<std::vector<sinter::mega::QueuedTask>> q(ctas);
    for (const SinterMegaTask& t : host_tasks) q[0].push_back({t, {}});
    sinter::mega::QueueImage im =
        sinter::mega::lay_out_queues(q, std::vector<size_t>(count, sizeof(Args)), kChunkBytes);
    if (im.bytes.size() > image_bytes()) std::abort();
    for (int i = 0; i < count; ++i) sinter::mega::write_arguments(im, i, &host_args[i], sizeof(Args));
    CHECK(cudaMemcpy(image, im.bytes.data(), im.bytes.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(queues, im.queues.data(), sizeof(SinterMegaQueue) * ctas, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(control, 0, SINTER_MEGA_CONTROL_WORDS * 128));
    SinterMegaParams p{};
    p.queues = queues;
    p.image = image;
    p.chunk_at = 0;
    p.chunk_bytes = kChunkBytes;
    p.counters = counters;
    p.control = control;
    p.fault = fault;
    p.trace = nullptr;
    p.watchdog_ns = 5000000000ull;
    return p;
  }
};
