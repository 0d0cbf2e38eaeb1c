// The megakernel's device side: the persistent loop that runs a CTA's queue of tasks (each one
// CTA of a step's standalone kernel), the counters between them, and the watchdog. The host side
// (tables, schedule, source) is src/mega/; the tables' layout is mega_abi.h.
//
// A generated megakernel includes this header first, then the kernel templates its steps use,
// then each step kernel's source in a namespace of its own with its __global__ entry turned into
// a __device__ function (src/mega/mega_source.cpp). The macros at the end of this header make
// that code see the task's block index, grid and block size where it reads blockIdx, gridDim and
// blockDim, and synchronize only the task's threads where it calls __syncthreads(): the task
// kernels run unchanged. Everything above the macros sees the real values.
//
// Memory order: a task's threads finish their stores, the CTA synchronizes, and thread 0 adds to
// the task kernel's counter after a fence (release). A waiting CTA's thread 0 reads the counters
// with ld.acquire.gpu, then the CTA synchronizes before the task reads anything. Task kernels are
// compiled with SINTER_MEGAKERNEL, which turns their read-only-path loads into plain ones
// (common/types.cuh): data written earlier in the same launch is read coherently.
//
// Counters only grow: launch e (from 0) waits for (e + 1) * tasks of a producer kernel, so a
// replay needs no reset. The epoch is read at the start of a launch; the last CTA to leave
// advances it. A wait that outlasts SinterMegaParams::watchdog_ns records what it waited for in
// SinterMegaFault (host-mapped), raises the abort flag, and every CTA leaves at its next wait or
// task boundary: a megakernel never hangs on a missing producer.
#pragma once

#include "common/types.cuh"
#include "mega/mega_abi.h"

// The task running now on this CTA, as its code sees it (the macros below).
__shared__ uint3 sinter_mega_block_idx;
__shared__ uint3 sinter_mega_grid_dim;
__shared__ uint3 sinter_mega_block_dim;
__shared__ unsigned int sinter_mega_threads;

// __syncthreads() of a task: only its threads (barrier 15; the task kernels use no named barriers).
__device__ __forceinline__ void sinter_mega_task_sync() {
  asm volatile("bar.sync 15, %0;" ::"r"(sinter_mega_threads) : "memory");
}

__device__ __forceinline__ u64 sinter_mega_now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ u64 sinter_mega_acquire(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ u64* sinter_mega_counter(const SinterMegaParams& p, u32 i) {
  return p.counters + static_cast<u64>(i) * SINTER_MEGA_COUNTER_STRIDE;
}
__device__ __forceinline__ u64* sinter_mega_control(const SinterMegaParams& p, int word) {
  return p.control + static_cast<u64>(word) * SINTER_MEGA_COUNTER_STRIDE;
}

// Thread 0: waits until counter >= target. False when the launch is aborting (this wait timed
// out, or another CTA's did).
__device__ __noinline__ bool sinter_mega_wait(const SinterMegaParams& p, u32 counter, u64 target, u32 task,
                                              u32 kernel, u64 epoch, u64& waited) {
  const u64* c = sinter_mega_counter(p, counter);
  u64 seen = sinter_mega_acquire(c);
  if (seen >= target) return true;
  volatile u64* abort = sinter_mega_control(p, SINTER_MEGA_ABORT);
  const u64 start = sinter_mega_now();
  u32 backoff = 32;
  for (;;) {
    if (*abort != 0) return false;
    __nanosleep(backoff);
    backoff = backoff < 512 ? backoff * 2 : 512;
    seen = sinter_mega_acquire(c);
    const u64 now = sinter_mega_now();
    if (seen >= target) {
      waited += now - start;
      return true;
    }
    if (now - start > p.watchdog_ns) {
      if (atomicCAS(reinterpret_cast<unsigned long long*>(sinter_mega_control(p, SINTER_MEGA_FAULT_CLAIM)), 0ull,
                    1ull) == 0ull) {
        volatile SinterMegaFault* f = p.fault;
        u32 sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        f->sm = sm;
        f->cta = blockIdx.x;
        f->task = task;
        f->kernel = kernel;
        f->counter = counter;
        f->target = target;
        f->seen = seen;
        f->epoch = epoch;
        f->waited_ns = now - start;
        __threadfence_system();
        f->hit = 1;
        __threadfence_system();
      }
      atomicExch(reinterpret_cast<u64*>(const_cast<u64*>(abort)), 1ull);
      return false;
    }
  }
}

// The persistent loop: `dispatch(function, args)` runs one task's code on the task's threads.
template <class Dispatch>
__device__ __forceinline__ void sinter_mega_main(const SinterMegaParams& p, const Dispatch& dispatch) {
  __shared__ u64 epoch_s;
  __shared__ int go_s;
  __shared__ const char* args_s;
  __shared__ u32 function_s;
  if (threadIdx.x == 0) epoch_s = *reinterpret_cast<volatile u64*>(sinter_mega_control(p, SINTER_MEGA_EPOCH));
  __syncthreads();
  const u64 epoch = epoch_s;
  const u32 begin = p.queue_start[blockIdx.x], end = p.queue_start[blockIdx.x + 1];
  u32 ready = 0xffffffffu;  // thread 0: the kernel whose waits were met last (they hold for its next tasks)
  for (u32 i = begin; i < end; ++i) {
    if (threadIdx.x == 0) {
      const SinterMegaTask task = p.tasks[i];
      const SinterMegaKernel k = p.kernels[task.kernel];
      int go = *reinterpret_cast<volatile u64*>(sinter_mega_control(p, SINTER_MEGA_ABORT)) == 0;
      u64 waited = 0;
      const u64 t_wait = sinter_mega_now();
      const bool local = (task.block & SINTER_MEGA_LOCAL) != 0;
      const u32 block = task.block & ~SINTER_MEGA_LOCAL;
      if (go && task.kernel != ready && !local) {
        for (u32 w = 0; w < k.wait_count && go; ++w) {
          const SinterMegaWait wt = p.waits[k.first_wait + w];
          go = sinter_mega_wait(p, wt.counter, (epoch + 1) * wt.tasks, i - begin, task.kernel, epoch, waited);
        }
        ready = task.kernel;
      }
      const u32 gx = k.grid_x, gy = k.grid_y;
      if (local) ready = task.kernel;
      sinter_mega_block_idx = make_uint3(block % gx, block / gx % gy, block / (gx * gy));
      sinter_mega_grid_dim = make_uint3(gx, gy, k.grid_z);
      sinter_mega_block_dim = make_uint3(k.threads, 1, 1);
      sinter_mega_threads = k.threads;
      args_s = p.args + k.args_offset;
      function_s = k.function;
      go_s = go;
      if (p.trace != nullptr) {
        u32 sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        u64* t = p.trace + static_cast<u64>(i) * SINTER_MEGA_TRACE_WORDS;
        t[0] = sinter_mega_now();
        t[2] = (static_cast<u64>(sm) << 32) | blockIdx.x;
        t[3] = t[0] - t_wait;
      }
    }
    __syncthreads();
    if (!go_s) break;
    if (threadIdx.x < sinter_mega_threads) dispatch(function_s, args_s);
    __syncthreads();
    if (threadIdx.x == 0) {
      const SinterMegaTask task = p.tasks[i];
      __threadfence();
      atomicAdd(reinterpret_cast<unsigned long long*>(sinter_mega_counter(p, p.kernels[task.kernel].counter)), 1ull);
      if (p.trace != nullptr) p.trace[static_cast<u64>(i) * SINTER_MEGA_TRACE_WORDS + 1] = sinter_mega_now();
    }
  }
  if (threadIdx.x == 0) {
    const u64 ticket = atomicAdd(reinterpret_cast<unsigned long long*>(sinter_mega_control(p, SINTER_MEGA_EXITED)), 1ull);
    if (ticket == (epoch + 1) * gridDim.x - 1) {
      __threadfence();
      *reinterpret_cast<volatile u64*>(sinter_mega_control(p, SINTER_MEGA_EPOCH)) = epoch + 1;
    }
  }
}

// From here on, the task kernels' view.
#define blockIdx sinter_mega_block_idx
#define gridDim sinter_mega_grid_dim
#define blockDim sinter_mega_block_dim
#define __syncthreads() sinter_mega_task_sync()
