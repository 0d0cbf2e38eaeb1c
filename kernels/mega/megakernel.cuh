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
// the task kernel's counter after a fence (release); a kernel no other CTA waits for publishes
// nothing (the host decides, SinterMegaTask::publish). A waiting CTA's thread 0 reads the counters
// with ld.acquire.gpu, then the CTA synchronizes before the task reads anything. Task kernels are
// compiled with SINTER_MEGAKERNEL, which turns their read-only-path loads into plain ones
// (common/types.cuh): data written earlier in the same launch is read coherently.
//
// Counters only grow: launch e (from 0) waits for (e + 1) * tasks of a producer kernel, so a
// replay needs no reset. The epoch is read at the start of a launch; the last CTA to leave
// advances it. A wait that outlasts SinterMegaParams::watchdog_ns records what it waited for in
// SinterMegaFault (host-mapped), raises the abort flag, and every CTA leaves at its next wait (a
// task that waits for nothing runs to its end): a megakernel never hangs on a missing producer.
//
// Collectives (mega/collective.cuh) reach other ranks: a push task's arrival is added to the
// counter of every rank of the group (SinterMegaParams::rank_counters) after a system-scope
// fence, and a combine task's wait on it (SINTER_MEGA_WAIT_RANKS) acquires at system scope.
#pragma once

#include "common/types.cuh"
#include "mega/mega_abi.h"

// The largest argument struct of the segment's task kernels, rounded up to 16 (the generated
// source defines it).
#ifndef SINTER_MEGA_ARGS_BYTES
#define SINTER_MEGA_ARGS_BYTES 1024
#endif

// The task running now on this CTA, as its code sees it (the macros below).
__shared__ uint3 sinter_mega_block_idx;
__shared__ uint3 sinter_mega_grid_dim;
__shared__ uint3 sinter_mega_block_dim;
__shared__ unsigned int sinter_mega_threads;
// The launch's epoch (0 for the first launch): tasks that alternate buffers between launches (the
// collectives' receive buffers) read it through sinter_mega_launch_epoch().
__shared__ u64 sinter_mega_epoch_s;
__device__ __forceinline__ u64 sinter_mega_launch_epoch() { return sinter_mega_epoch_s; }

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

// A counter other GPUs add to (a collective's arrivals): acquire at system scope.
__device__ __forceinline__ u64 sinter_mega_acquire_system(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ u64* sinter_mega_counter(const SinterMegaParams& p, u32 i) {
  return p.counters + static_cast<u64>(i) * SINTER_MEGA_COUNTER_STRIDE;
}
__device__ __forceinline__ u64* sinter_mega_control(const SinterMegaParams& p, int word) {
  return p.control + static_cast<u64>(word) * SINTER_MEGA_COUNTER_STRIDE;
}

// Thread 0: waits until counter >= target (`system`: other GPUs add to it). False when the launch
// is aborting (this wait timed out, or another CTA's did). Polls without sleeping first (a
// producer on another SM is usually a few hundred nanoseconds away), then backs off; the abort
// flag and the clock are read every 16th poll.
__device__ __noinline__ bool sinter_mega_wait(const SinterMegaParams& p, u32 counter, u64 target, bool system,
                                              u32 task, u32 kernel, u64 epoch, u64& waited) {
  const u64* c = sinter_mega_counter(p, counter);
  u64 seen = system ? sinter_mega_acquire_system(c) : sinter_mega_acquire(c);
  if (seen >= target) return true;
  volatile u64* abort = sinter_mega_control(p, SINTER_MEGA_ABORT);
  const u64 start = sinter_mega_now();
  for (u32 polls = 1;; ++polls) {
    if (polls > 64) __nanosleep(polls > 256 ? 256 : 64);
    seen = system ? sinter_mega_acquire_system(c) : sinter_mega_acquire(c);
    if (seen >= target) {
      waited += sinter_mega_now() - start;
      return true;
    }
    if ((polls & 15) != 0) continue;
    if (*abort != 0) return false;
    const u64 now = sinter_mega_now();
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

// Thread 0: starts copying `bytes` (a multiple of 16, both addresses 16-aligned) from global to
// shared memory; sinter_mega_fetch_commit then sinter_mega_fetch_wait complete them.
__device__ __forceinline__ void sinter_mega_fetch(void* to, const void* from, u32 bytes) {
  const u32 s = static_cast<u32>(__cvta_generic_to_shared(to));
  const char* g = static_cast<const char*>(from);
  for (u32 o = 0; o < bytes; o += 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s + o), "l"(g + o) : "memory");
  }
}
__device__ __forceinline__ void sinter_mega_fetch_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void sinter_mega_fetch_wait() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Thread 0: starts copying the first SINTER_MEGA_SHARED_WAITS waits of task `t` into `to`.
__device__ __forceinline__ void sinter_mega_fetch_waits(SinterMegaWait* to, const SinterMegaParams& p,
                                                        const SinterMegaTask& t) {
  const u32 n = t.wait_count < SINTER_MEGA_SHARED_WAITS ? t.wait_count : SINTER_MEGA_SHARED_WAITS;
  const u32 s = static_cast<u32>(__cvta_generic_to_shared(to));
  for (u32 w = 0; w < n; ++w) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(s + 8 * w), "l"(p.waits + t.first_wait + w) : "memory");
  }
}

// The persistent loop: `dispatch(function, args)` runs one task's code on the task's threads.
// Thread 0 fetches ahead into shared memory (cp.async, overlapping the running task): the next
// task's arguments and waits and the record of the task after it, so a task starts without a
// trip to global memory for its own description.
template <class Dispatch>
__device__ __forceinline__ void sinter_mega_main(const SinterMegaParams& p, const Dispatch& dispatch) {
  __shared__ __align__(16) SinterMegaTask task_s[3];                    // task n in task_s[n % 3]
  __shared__ __align__(16) char args_s[2][SINTER_MEGA_ARGS_BYTES];      // its arguments in args_s[n % 2]
  __shared__ __align__(16) SinterMegaWait waits_s[2][SINTER_MEGA_SHARED_WAITS];  // and its waits
  __shared__ int go_s, launch_go_s;
  const u32 begin = p.queue_start[blockIdx.x], end = p.queue_start[blockIdx.x + 1];
  u64 epoch = 0;
  if (threadIdx.x == 0) {
    epoch = *reinterpret_cast<volatile u64*>(sinter_mega_control(p, SINTER_MEGA_EPOCH));
    sinter_mega_epoch_s = epoch;
    // An earlier launch aborted and the host has not reset the counters yet (launches queued
    // behind it): run nothing, so that nothing is published, to this rank or to others.
    launch_go_s = *reinterpret_cast<volatile u64*>(sinter_mega_control(p, SINTER_MEGA_ABORT)) == 0;
    if (launch_go_s && begin < end) {
      sinter_mega_fetch(&task_s[0], &p.tasks[begin], sizeof(SinterMegaTask));
      sinter_mega_fetch_commit();
      sinter_mega_fetch_wait();
      sinter_mega_fetch(args_s[0], p.args + task_s[0].args_offset, task_s[0].args_bytes);
      sinter_mega_fetch_waits(waits_s[0], p, task_s[0]);
      if (begin + 1 < end) sinter_mega_fetch(&task_s[1], &p.tasks[begin + 1], sizeof(SinterMegaTask));
      sinter_mega_fetch_commit();
      sinter_mega_fetch_wait();
    }
  }
  __syncthreads();
  const u32 last = launch_go_s ? end : begin;
  for (u32 i = begin; i < last; ++i) {
    const u32 n = i - begin;
    const SinterMegaTask& t = task_s[n % 3];
    if (threadIdx.x == 0) {
      if (i + 1 < end) {
        const SinterMegaTask& next = task_s[(n + 1) % 3];
        sinter_mega_fetch(args_s[(n + 1) & 1], p.args + next.args_offset, next.args_bytes);
        sinter_mega_fetch_waits(waits_s[(n + 1) & 1], p, next);
        if (i + 2 < end) sinter_mega_fetch(&task_s[(n + 2) % 3], &p.tasks[i + 2], sizeof(SinterMegaTask));
        sinter_mega_fetch_commit();
      }
      const u64 t_wait = p.trace != nullptr ? sinter_mega_now() : 0;
      u64 waited = 0;
      int go = 1;
      for (u32 w = 0; w < t.wait_count && go; ++w) {
        const SinterMegaWait wt = w < SINTER_MEGA_SHARED_WAITS ? waits_s[n & 1][w] : p.waits[t.first_wait + w];
        go = sinter_mega_wait(p, wt.counter, (epoch + 1) * (wt.tasks & ~SINTER_MEGA_WAIT_RANKS),
                              (wt.tasks & SINTER_MEGA_WAIT_RANKS) != 0, n, t.kernel, epoch, waited);
      }
      sinter_mega_block_idx = make_uint3(t.block_x, t.block_yz & 0xffffu, t.block_yz >> 16);
      sinter_mega_grid_dim = make_uint3(t.grid_x, t.grid_y, t.grid_z);
      sinter_mega_block_dim = make_uint3(t.threads, 1, 1);
      sinter_mega_threads = t.threads;
      go_s = go;
      if (p.trace != nullptr) {
        u32 sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        u64* r = p.trace + static_cast<u64>(i) * SINTER_MEGA_TRACE_WORDS;
        r[0] = sinter_mega_now();
        r[2] = (static_cast<u64>(sm) << 32) | blockIdx.x;
        r[3] = r[0] - t_wait;
      }
    }
    __syncthreads();
    if (!go_s) break;
    if (threadIdx.x < sinter_mega_threads) dispatch(t.function, args_s[n & 1]);
    if (threadIdx.x == 0) sinter_mega_fetch_wait();
    __syncthreads();
    if (threadIdx.x == 0) {
      if (t.publish != SINTER_MEGA_NO_COUNTER || t.publish_range != SINTER_MEGA_NO_COUNTER) {
        __threadfence();
        if (t.publish != SINTER_MEGA_NO_COUNTER) {
          atomicAdd(reinterpret_cast<unsigned long long*>(sinter_mega_counter(p, t.publish)), 1ull);
        }
        if (t.publish_range != SINTER_MEGA_NO_COUNTER) {
          if (t.publish_ranks != 0) {
            // a collective's arrival: this task wrote into every rank's memory
            __threadfence_system();
            for (u32 r = 0; r < p.world; ++r) {
              atomicAdd_system(reinterpret_cast<unsigned long long*>(p.rank_counters[r]) +
                                   static_cast<u64>(t.publish_range) * SINTER_MEGA_COUNTER_STRIDE,
                               1ull);
            }
          } else {
            atomicAdd(reinterpret_cast<unsigned long long*>(sinter_mega_counter(p, t.publish_range)), 1ull);
          }
        }
      }
      if (p.trace != nullptr) p.trace[static_cast<u64>(i) * SINTER_MEGA_TRACE_WORDS + 1] = sinter_mega_now();
    }
  }
  if (threadIdx.x == 0) {
    sinter_mega_fetch_wait();
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
