// chain_probe: what one dependent tiny op costs inside a persistent kernel, piece by piece -- the
// floor under the megakernel's "200 dependent ops" figure (issue 40: <= 0.25-0.30 us per op).
//
// Each variant runs kOps dependent ops over kElems f32 values (sigmoid, as the chain benchmark's
// first op): op i reads what op i-1 wrote. Thread t owns elements 4t..4t+3 (a float4), as the
// pointwise tile does with 256 threads. Variants add one cost at a time:
//   shared        the values stay in shared memory: compute + one CTA barrier per op
//   global        ping-pong between two global buffers: + a store and a load through L2 per op
//   global_fresh  op i writes buffer i (the arena without reuse): the load misses L1 for sure
//   global_cg     ld.global.cg: the load bypasses L1
//   global_shift  thread t reads what thread t+32 wrote (another warp): no same-thread st->ld
//   dispatch      global + the dispatcher's per-task work: thread 0 copies the next task's
//                 192-byte arguments and 64-byte record with cp.async, decodes a block index
//                 (divisions), writes the task's view to shared memory, two more barriers; the
//                 op reads its pointers from the shared argument copy through a __noinline__ call
//   dispatch_acq  dispatch + one satisfied ld.acquire.gpu per task (a met wait: L1 invalidated)
//   dispatch_pub  dispatch + a fence and an atomicAdd per task (a published counter)
//   two_ctas      global, op i on CTA i % 2 (two SMs): each op waits (ld.acquire poll) for the
//                 other CTA's counter: the cross-SM hand-off a remote wait costs
// One CTA of 256 threads (two for two_ctas); cycles and ns per op, the median of 9 launches.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "probe_check.cuh"

constexpr int kThreads = 256, kElems = 1024, kOps = 200, kArgsBytes = 192;

enum Variant { kShared, kGlobal, kGlobalFresh, kGlobalCg, kGlobalShift, kDispatch, kDispatchAcq, kDispatchPub, kTwoCtas };
const char* const kNames[] = {"shared",   "global",       "global_fresh", "global_cg", "global_shift",
                              "dispatch", "dispatch_acq", "dispatch_pub", "two_ctas"};

struct TaskArgs {  // what a task reads from its argument copy (padded to the chain's 192 bytes)
  const float* in;
  float* out;
  char pad[kArgsBytes - 16];
};

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float4 op4(float4 v) {
  return make_float4(sigmoid(v.x), sigmoid(v.y), sigmoid(v.z), sigmoid(v.w));
}

__device__ __forceinline__ unsigned long long acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void fetch16(void* to, const void* from) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(from) : "memory");
}

__device__ __noinline__ void task_body(const TaskArgs& a) {
  const float4 v = reinterpret_cast<const float4*>(a.in)[threadIdx.x];
  reinterpret_cast<float4*>(a.out)[threadIdx.x] = op4(v);
}

template <int V>
__global__ void __launch_bounds__(kThreads) chain(float* bufs, const TaskArgs* args, const uint4* records,
                                                  unsigned long long* counters, unsigned long long* cycles,
                                                  unsigned long long* ns) {
  __shared__ float4 sh[kElems / 4];
  __shared__ __align__(16) TaskArgs args_s[2];
  __shared__ __align__(16) uint4 record_s[3][4];
  __shared__ uint3 view_s;
  const int t = threadIdx.x;
  if (V == kShared) sh[t] = reinterpret_cast<const float4*>(bufs)[t];
  if (V >= kDispatch && V <= kDispatchPub && t == 0) {  // task 0's arguments, records 0 and 1
    for (int o = 0; o < kArgsBytes / 16; ++o) {
      fetch16(reinterpret_cast<char*>(&args_s[0]) + 16 * o, reinterpret_cast<const char*>(&args[0]) + 16 * o);
    }
    for (int o = 0; o < 8; ++o) fetch16(&record_s[o / 4][o % 4], &records[o]);
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
  }
  __syncthreads();
  unsigned long long c0 = clock64(), g0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  for (int i = 0; i < kOps; ++i) {
    float4* src = reinterpret_cast<float4*>(bufs + (i & 1) * kElems);
    float4* dst = reinterpret_cast<float4*>(bufs + ((i + 1) & 1) * kElems);
    if (V == kShared) {
      const float4 v = sh[t];
      __syncthreads();
      sh[t] = op4(v);
    } else if (V == kGlobal) {
      dst[t] = op4(src[t]);
    } else if (V == kGlobalFresh) {
      reinterpret_cast<float4*>(bufs + (i + 1) * kElems)[t] = op4(reinterpret_cast<const float4*>(bufs + i * kElems)[t]);
    } else if (V == kGlobalCg) {
      dst[t] = op4(__ldcg(src + t));
    } else if (V == kGlobalShift) {
      dst[(t + 32) % kThreads] = op4(src[t]);
    } else if (V == kTwoCtas) {
      if ((i & 1) == static_cast<int>(blockIdx.x)) {
        if (t == 0 && i > 0) {
          while (acquire(&counters[(i - 1) & 1]) < static_cast<unsigned long long>(i + 1) / 2) {
          }
        }
        __syncthreads();
        dst[t] = op4(src[t]);
        __syncthreads();
        if (t == 0) {
          __threadfence();
          atomicAdd(&counters[i & 1], 1ull);
        }
      }
    } else {  // the dispatcher's work around the op
      if (t == 0) {
        if (i + 1 < kOps) {
          for (int o = 0; o < kArgsBytes / 16; ++o) {
            fetch16(reinterpret_cast<char*>(&args_s[(i + 1) & 1]) + 16 * o,
                    reinterpret_cast<const char*>(&args[i + 1]) + 16 * o);
          }
          for (int o = 0; o < 4; ++o) fetch16(&record_s[(i + 2) % 3][o], &records[4 * (i + 2) + o]);
          asm volatile("cp.async.commit_group;" ::: "memory");
        }
        if (V == kDispatchAcq) (void)acquire(&counters[0]);
        const uint4 r = record_s[i % 3][0];
        const unsigned gx = r.x | 1u, gy = r.y | 1u;
        view_s = make_uint3(r.z % gx, r.z / gx % gy, r.z / (gx * gy));
      }
      __syncthreads();
      if (view_s.x < 0xffffffffu) task_body(args_s[i & 1]);
      asm volatile("bar.sync 15, %0;" ::"r"(kThreads) : "memory");
      if (t == 0) asm volatile("cp.async.wait_group 0;" ::: "memory");
      __syncthreads();
      if (V == kDispatchPub && t == 0) {
        __threadfence();
        atomicAdd(&counters[1], 1ull);
      }
      continue;
    }
    __syncthreads();
  }
  unsigned long long c1 = clock64(), g1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
  if (t == 0) {
    cycles[blockIdx.x] = c1 - c0;
    ns[blockIdx.x] = g1 - g0;
  }
  if (V == kShared) reinterpret_cast<float4*>(bufs)[t] = sh[t];
}

template <int V>
void measure(float* bufs, const TaskArgs* args, const uint4* records, unsigned long long* counters,
             unsigned long long* d_cycles, unsigned long long* d_ns) {
  const int ctas = V == kTwoCtas ? 2 : 1;
  std::vector<double> per_ns, per_cycles;
  for (int rep = 0; rep < 9; ++rep) {
    CHECK(cudaMemset(counters, 0, 2 * sizeof(unsigned long long)));
    chain<V><<<ctas, kThreads>>>(bufs, args, records, counters, d_cycles, d_ns);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    unsigned long long c[2], n[2];
    CHECK(cudaMemcpy(c, d_cycles, sizeof(c), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(n, d_ns, sizeof(n), cudaMemcpyDeviceToHost));
    per_cycles.push_back(static_cast<double>(c[0]) / kOps);
    per_ns.push_back(static_cast<double>(n[0]) / kOps);
  }
  std::sort(per_ns.begin(), per_ns.end());
  std::sort(per_cycles.begin(), per_cycles.end());
  std::printf("%-14s %8.0f cycles/op %8.3f us/op\n", kNames[V], per_cycles[4], per_ns[4] / 1000.0);
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("chain_probe on %s: %d dependent sigmoid ops over %d f32, %d threads, median of 9\n", prop.name, kOps,
              kElems, kThreads);
  float* bufs;
  CHECK(cudaMalloc(&bufs, sizeof(float) * kElems * (kOps + 1)));
  std::vector<float> h(static_cast<size_t>(kElems) * (kOps + 1));
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  CHECK(cudaMemcpy(bufs, h.data(), sizeof(float) * h.size(), cudaMemcpyHostToDevice));
  std::vector<TaskArgs> ha(kOps + 1);
  for (int i = 0; i <= kOps; ++i) ha[i] = TaskArgs{bufs + (i & 1) * kElems, bufs + ((i + 1) & 1) * kElems, {}};
  TaskArgs* args;
  CHECK(cudaMalloc(&args, sizeof(TaskArgs) * ha.size()));
  CHECK(cudaMemcpy(args, ha.data(), sizeof(TaskArgs) * ha.size(), cudaMemcpyHostToDevice));
  std::vector<uint4> hr(4 * (kOps + 2), make_uint4(1, 1, 0, 0));
  uint4* records;
  CHECK(cudaMalloc(&records, sizeof(uint4) * hr.size()));
  CHECK(cudaMemcpy(records, hr.data(), sizeof(uint4) * hr.size(), cudaMemcpyHostToDevice));
  unsigned long long *counters, *d_cycles, *d_ns;
  CHECK(cudaMalloc(&counters, 2 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&d_cycles, 2 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&d_ns, 2 * sizeof(unsigned long long)));
  measure<kShared>(bufs, args, records, counters, d_cycles, d_ns);
  measure<kGlobal>(bufs, args, records, counters, d_cycles, d_ns);
  measure<kGlobalFresh>(bufs, args, records, counters, d_cycles, d_ns);
  measure<kGlobalCg>(bufs, args, records, counters, d_cycles, d_ns);
  measure<kGlobalShift>(bufs, args, records, counters, d_cycles, d_ns);
  measure<kDispatch>(bufs, args, records, counters, d_cycles, d_ns);
  measure<kDispatchAcq>(bufs, args, records, counters, d_cycles, d_ns);
  measure<kDispatchPub>(bufs, args, records, counters, d_cycles, d_ns);
  measure<kTwoCtas>(bufs, args, records, counters, d_cycles, d_ns);
  return 0;
}
