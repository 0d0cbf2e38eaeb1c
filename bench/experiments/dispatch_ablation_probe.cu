// dispatch_ablation_probe: where the megakernel dispatcher's per-task time goes, by taking its
// pieces away one at a time (issue 40: <= 0.30 us per dependent op; the real dispatcher costs
// ~0.79 us per empty task on an H100, mega_chain_probe, while chain_probe's mimic of it costs
// ~0.33 us over a bare op: the difference is not yet located).
//
// 200 dependent tasks on one CTA of 256 threads (the 200-op chain's shape: each task one 1024-f32
// op reading what the one before wrote), every task kernel's 192-byte argument struct its own.
// Loops, each with the tasks empty / minimal (a float4 sigmoid) / mixed (the generated pointwise
// sigmoid, tanh, neg in turn):
//   real           kernels/mega/megakernel.cuh's sinter_mega_main, as the megakernel runs it (its
//                  queue in chunks, each brought into shared memory by one bulk copy)
//   global_args    thread 0 reads the task record from global memory, and the task reads its
//                  arguments straight from global memory
//   preloaded      every record and argument struct of the CTA's queue copied into shared memory
//                  at launch start (all threads, one barrier); per task: thread 0 reads the record
//                  from shared memory, writes the task's view, barrier, task, barrier
//   preloaded_1bar preloaded with one barrier per task: the view is written for the next task
//                  before the barrier that ends this one (valid here: every task is block 0 of a
//                  grid of 1; a real dispatcher would keep two views)
//   bare           no dispatcher: the tasks called in a loop with one barrier between them, each
//                  task's function and arguments from its index (no table read)
// Each: microseconds per task (launch included, median of 15 launches) and clock64 cycles per
// task inside the loop (thread 0, loop start to end).
#include "mega_chain_tasks.cuh"

__device__ __forceinline__ long long probe_clock() { return clock64(); }

// blockIdx and blockDim are the task's view from here on (megakernel.cuh's macros): the loops read
// the real ones from the special registers.
__device__ __forceinline__ u32 real_cta() {
  u32 v;
  asm("mov.u32 %0, %%ctaid.x;" : "=r"(v));
  return v;
}
__device__ __forceinline__ u32 real_threads() {
  u32 v;
  asm("mov.u32 %0, %%ntid.x;" : "=r"(v));
  return v;
}

__device__ __forceinline__ void set_view(const SinterMegaTask& t) {
  sinter_mega_block_idx = make_uint3(t.block_x, t.block_yz & 0xffffu, t.block_yz >> 16);
  sinter_mega_grid_dim = make_uint3(t.grid_x, t.grid_y, t.grid_z);
  sinter_mega_block_dim = make_uint3(t.threads, 1, 1);
  sinter_mega_threads = t.threads;
}

// The loops below use the real barrier (bar.sync 0), not the task's (the macro).
__device__ __forceinline__ void cta_sync() { asm volatile("bar.sync 0;" ::: "memory"); }

enum Loop { kReal, kGlobalArgs, kPreloaded, kPreloaded1Bar, kBare };
const char* const kLoopNames[] = {"real", "global_args", "preloaded", "preloaded_1bar", "bare"};

extern "C" __global__ void __launch_bounds__(256, 2) probe_real(const __grid_constant__ SinterMegaParams p,
                                                                long long* cycles) {
  const long long t0 = probe_clock();
  sinter_mega_main(p, Dispatch{}, SinterMegaNoPrologue{});
  if (threadIdx.x == 0) cycles[0] = probe_clock() - t0;
}

extern "C" __global__ void __launch_bounds__(256, 2) probe_global_args(const __grid_constant__ FlatTables p,
                                                                       long long* cycles) {
  __shared__ const char* args_s;
  __shared__ u32 function_s;
  const long long t0 = probe_clock();
  const u32 begin = 0, end = p.count;
  for (u32 i = begin; i < end; ++i) {
    if (threadIdx.x == 0) {
      const SinterMegaTask t = p.tasks[i];
      set_view(t);
      args_s = p.args + t.args_offset;
      function_s = t.function;
    }
    cta_sync();
    Dispatch{}(function_s, args_s);
    cta_sync();
  }
  if (threadIdx.x == 0) cycles[0] = probe_clock() - t0;
}

// The CTA's queue in dynamic shared memory: its records, then its argument structs.
__device__ __forceinline__ void preload(const FlatTables& p, u32 begin, u32 end, SinterMegaTask* tasks,
                                        char* args) {
  const u32 n = end - begin;
  const int4* from = reinterpret_cast<const int4*>(p.tasks + begin);
  int4* to = reinterpret_cast<int4*>(tasks);
  for (u32 w = threadIdx.x; w < n * sizeof(SinterMegaTask) / 16; w += real_threads()) to[w] = from[w];
  for (u32 k = 0; k < n; ++k) {
    const SinterMegaTask& t = p.tasks[begin + k];  // read through L1 by every thread: cheap after the first
    const int4* a = reinterpret_cast<const int4*>(p.args + t.args_offset);
    int4* b = reinterpret_cast<int4*>(args + k * SINTER_MEGA_ARGS_BYTES);
    for (u32 w = threadIdx.x; w < t.args_bytes / 16; w += real_threads()) b[w] = a[w];
  }
}

template <bool kOneBarrier>
__device__ __forceinline__ void preloaded_loop(const FlatTables& p, long long* cycles) {
  extern __shared__ __align__(16) char dyn[];
  const long long t0 = probe_clock();
  const u32 begin = 0, end = p.count;
  SinterMegaTask* tasks = reinterpret_cast<SinterMegaTask*>(dyn);
  char* args = dyn + (end - begin) * sizeof(SinterMegaTask);
  preload(p, begin, end, tasks, args);
  cta_sync();
  if (threadIdx.x == 0 && begin < end) set_view(tasks[0]);
  cta_sync();
  for (u32 k = 0; k < end - begin; ++k) {
    if (!kOneBarrier) {
      if (threadIdx.x == 0) set_view(tasks[k]);
      cta_sync();
    }
    Dispatch{}(tasks[k].function, args + k * SINTER_MEGA_ARGS_BYTES);
    if (kOneBarrier && threadIdx.x == 0 && k + 1 < end - begin) set_view(tasks[k + 1]);
    cta_sync();
  }
  if (threadIdx.x == 0) cycles[0] = probe_clock() - t0;
}

extern "C" __global__ void __launch_bounds__(256, 2) probe_preloaded(const __grid_constant__ FlatTables p,
                                                                     long long* cycles) {
  preloaded_loop<false>(p, cycles);
}
extern "C" __global__ void __launch_bounds__(256, 2) probe_preloaded_1bar(const __grid_constant__ FlatTables p,
                                                                          long long* cycles) {
  preloaded_loop<true>(p, cycles);
}

// No dispatcher at all: the task functions in a loop, one barrier between them; each task's
// function and argument struct follow from its index (`which`: 0 empty, 1 minimal, 2 mixed), so no
// table is read. The tasks still read their arguments from global memory.
extern "C" __global__ void __launch_bounds__(256, 2) probe_bare(const __grid_constant__ FlatTables p,
                                                                long long* cycles, int which, u32 tasks) {
  const long long t0 = probe_clock();
  if (threadIdx.x == 0) {
    sinter_mega_block_idx = make_uint3(0, 0, 0);
    sinter_mega_grid_dim = make_uint3(1, 1, 1);
    sinter_mega_block_dim = make_uint3(256, 1, 1);
    sinter_mega_threads = 256;
  }
  cta_sync();
  for (u32 i = 0; i < tasks; ++i) {
    Dispatch{}(which < 2 ? static_cast<u32>(which) : 2 + i % 3, p.args + i * sizeof(Args));
    cta_sync();
  }
  if (threadIdx.x == 0) cycles[0] = probe_clock() - t0;
}

#undef blockIdx
#undef gridDim
#undef blockDim
#undef __syncthreads

#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  constexpr int kTasks = 200, kElems = 1024;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  std::printf("dispatch_ablation_probe on %s: %d dependent tasks of %d f32 on one CTA of 256 threads\n", prop.name,
              kTasks, kElems);
  ChainTables chain(kTasks, kElems, 1);
  long long* d_cycles;
  CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  const size_t preload_bytes = kTasks * (sizeof(SinterMegaTask) + SINTER_MEGA_ARGS_BYTES);
  CHECK(cudaFuncSetAttribute(probe_preloaded, cudaFuncAttributeMaxDynamicSharedMemorySize, preload_bytes));
  CHECK(cudaFuncSetAttribute(probe_preloaded_1bar, cudaFuncAttributeMaxDynamicSharedMemorySize, preload_bytes));

  using FlatKernel = void (*)(FlatTables, long long*);
  const FlatKernel flat_kernels[] = {nullptr, probe_global_args, probe_preloaded, probe_preloaded_1bar};
  const char* tasks_names[] = {"empty", "minimal", "mixed"};
  std::printf("%-16s %-8s %10s %12s\n", "loop", "tasks", "us/task", "cycles/task");
  for (int which = 0; which < 3; ++which) {
    chain.set_tasks(which < 2 ? which : -1);
    for (int loop = 0; loop < 5; ++loop) {
      const SinterMegaParams p = chain.params(1);
      const FlatTables f = chain.flat();
      const size_t dyn = loop == kPreloaded || loop == kPreloaded1Bar ? preload_bytes : 0;
      std::vector<float> us;
      std::vector<long long> cyc;
      for (int rep = 0; rep < 16; ++rep) {
        CHECK(cudaEventRecord(e0));
        if (loop == kReal) {
          probe_real<<<1, 256, ChainTables::dynamic()>>>(p, d_cycles);
        } else if (loop == kBare) {
          probe_bare<<<1, 256>>>(f, d_cycles, which, kTasks);
        } else {
          flat_kernels[loop]<<<1, 256, dyn>>>(f, d_cycles);
        }
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaGetLastError());
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        long long c;
        CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
        if (rep > 0) us.push_back(ms * 1000.0f / kTasks), cyc.push_back(c / kTasks);
      }
      std::sort(us.begin(), us.end());
      std::sort(cyc.begin(), cyc.end());
      std::printf("%-16s %-8s %10.3f %12lld\n", kLoopNames[loop], tasks_names[which], us[us.size() / 2],
                  cyc[cyc.size() / 2]);
    }
  }
  std::printf("(cycles at the SM clock; %d MHz is the device's base clock)\n", clock_khz / 1000);
  return 0;
}
