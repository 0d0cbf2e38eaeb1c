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
// the task kernel's counter after a fence.acq_rel (release); a kernel no other CTA waits for publishes
// nothing (the host decides, SinterMegaTask::publish). A waiting CTA's thread 0 reads the counters
// with ld.acquire.gpu, then the CTA synchronizes before the task reads anything. Task kernels are
// compiled with SINTER_MEGAKERNEL, which turns their read-only-path loads into plain ones
// (common/types.cuh): data written earlier in the same launch is read coherently.
//
// Counters only grow: launch e (from 0) waits for (e + 1) * tasks of a producer kernel, so a
// replay needs no reset. The epoch is read at the start of a launch; the last CTA to leave
// advances it. A wait that outlasts SinterMegaParams::watchdog_ns records what it waited for in
// SinterMegaFault (host-mapped), raises the abort flag, and every CTA leaves at its next wait that
// has to poll (a wait already met and a task that waits for nothing go on to their end): a
// megakernel never hangs on a missing producer.
//
// Collectives (mega/collective.cuh) reach other ranks: a push task's arrival is added to the
// counter of every rank of the group (SinterMegaParams::rank_counters) after a system-scope
// fence, and a combine task's wait on it (SINTER_MEGA_WAIT_RANKS) acquires at system scope.
#pragma once

#include "common/bulk_copy.cuh"
#include "common/hopper.cuh"
#include "common/types.cuh"
#include "mega/mega_abi.h"


// The task running now on this CTA, as its code sees it (the macros below).
__shared__ uint3 sinter_mega_block_idx;
__shared__ uint3 sinter_mega_grid_dim;
__shared__ uint3 sinter_mega_block_dim;
__shared__ unsigned int sinter_mega_threads;
// The launch's epoch (0 for the first launch): tasks that alternate buffers between launches (the
// collectives' receive buffers) read it through sinter_mega_launch_epoch().
__shared__ u64 sinter_mega_epoch_s;
__device__ __forceinline__ u64 sinter_mega_launch_epoch() { return sinter_mega_epoch_s; }
// The running task's argument struct as it lies in the queue image in global memory (its task
// code reads the copy in shared memory): TMA reads a tensor map in it from there, since it
// cannot read one from shared memory.
__shared__ const char* sinter_mega_args_global_s;
// Whether the dispatcher ran the running task's prologue before its waits (the task's kernel
// then skips what the prologue did).
__shared__ u32 sinter_mega_prologue_ran_s;
__device__ __forceinline__ bool sinter_mega_prologue_ran() { return sinter_mega_prologue_ran_s != 0; }
// Where `field`, a member of the running task's argument struct `args` (the shared copy), lies in
// the global copy.
__device__ __forceinline__ const void* sinter_mega_global_copy(const void* args, const void* field) {
  return sinter_mega_args_global_s + (static_cast<const char*>(field) - static_cast<const char*>(args));
}

// __syncthreads() of a task: only its threads (barrier 15; a task's own named barriers are 1-14, and
// its barrier 0 is this one: named_barrier_sync in common/hopper.cuh).
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
                                             u32 task, u32 kernel, u64 epoch) {
  const u64* c = sinter_mega_counter(p, counter);
  u64 seen = system ? sinter_mega_acquire_system(c) : sinter_mega_acquire(c);
  if (seen >= target) return true;
  volatile u64* abort = sinter_mega_control(p, SINTER_MEGA_ABORT);
  const u64 start = sinter_mega_now();
  for (u32 polls = 1;; ++polls) {
    if (polls > 64) __nanosleep(polls > 256 ? 256 : 64);
    seen = system ? sinter_mega_acquire_system(c) : sinter_mega_acquire(c);
    if (seen >= target) return true;
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

// Thread 0, after the barrier that ends a task: makes the CTA's stores before that barrier
// visible to whoever acquires a counter it adds to next (release: the fence, then relaxed adds).
__device__ __forceinline__ void sinter_mega_release() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
// Thread 0: adds one to a counter tasks of this GPU wait on, after sinter_mega_release.
__device__ __forceinline__ void sinter_mega_publish(u64* counter) {
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(counter) : "memory");
}

// Thread 0: starts copying chunk bytes [from, from + bytes) of the image into `to`; `full`
// completes when they have landed. The proxy fence orders the threads' earlier reads of `to`
// (generic proxy, before the last barrier) before the copy's writes (async proxy).
__device__ __forceinline__ void sinter_mega_fetch_chunk(char* to, const char* from, u32 bytes, u64* full) {
  fence_proxy_async_shared();
  mbarrier_arrive_expect_tx(full, bytes);
  bulk_copy_g2s(to, from, bytes, full);
}

// The persistent loop: `dispatch(function, args)` runs one task's code on the task's threads;
// `prologue(function, args, drain)` runs, on thread 0 before a task's waits, the prologue of a
// task whose record asks for it (loads that do not depend on the producers), and with drain set,
// when the launch aborts in those waits, lets what the prologue started land.
// The CTA's queue arrives chunk by chunk (mega_abi.h): two chunk buffers in shared memory, the
// next chunk copied into one by a single bulk copy (thread 0) while the tasks of the other run,
// so a task's record, waits and arguments are read from shared memory. Per task: thread 0 waits
// for the task's counters and writes its view, a barrier, the task, a barrier, thread 0 publishes.
// Every chunk holds at least one task: its barriers keep thread 0 from refilling a buffer that a
// slower thread has yet to leave.
// The prologue switch of a megakernel none of whose tasks has a prologue.
struct SinterMegaNoPrologue {
  __device__ __forceinline__ void operator()(u32, const char*, bool) const {}
};

template <class Dispatch, class Prologue>
__device__ __forceinline__ void sinter_mega_main(const SinterMegaParams& p, const Dispatch& dispatch,
                                                 const Prologue& prologue) {
  // the two chunk buffers: in dynamic shared memory past the tasks' own (SinterMegaParams)
  extern __shared__ __align__(128) char sinter_mega_dynamic_s[];
  char* const chunks = sinter_mega_dynamic_s + p.chunk_at;  // buffer b at chunks + b * p.chunk_bytes
  __shared__ __align__(8) u64 full_s[2];  // buffer b has landed (one phase per chunk copied into it)
  __shared__ u32 first_bytes_s;
  __shared__ int go_s;
  u64 epoch = 0;
  u64 next_at = 0;                // thread 0: where the next chunk to fetch starts in the image
  u64 at_even = 0, at_odd = 0;    // thread 0: where the chunks in buffers 0 and 1 start there
  if (threadIdx.x == 0) {
    epoch = *reinterpret_cast<volatile u64*>(sinter_mega_control(p, SINTER_MEGA_EPOCH));
    sinter_mega_epoch_s = epoch;
    // An earlier launch aborted and the host has not reset the counters yet (launches queued
    // behind it): run nothing, so that nothing is published, to this rank or to others.
    const bool launch_go = *reinterpret_cast<volatile u64*>(sinter_mega_control(p, SINTER_MEGA_ABORT)) == 0;
    const SinterMegaQueue q = p.queues[blockIdx.x];
    first_bytes_s = launch_go ? q.bytes : 0;
    mbarrier_init(&full_s[0], 1);
    mbarrier_init(&full_s[1], 1);
    fence_barrier_init();
    if (launch_go && q.bytes != 0) sinter_mega_fetch_chunk(chunks, p.image + q.offset, q.bytes, &full_s[0]);
    at_even = q.offset;
    next_at = q.offset + q.bytes;
  }
  __syncthreads();
  u32 bytes = first_bytes_s;  // the current chunk's size (0: no more)
  u32 fetched = bytes != 0 ? 1 : 0;  // chunks whose copy thread 0 started
  u32 landed = 0;                    // chunks waited for
  u32 n = 0;                         // tasks of this CTA's queue started
  bool go = true;
  for (u32 c = 0; bytes != 0 && go; ++c) {
    const char* chunk = chunks + (c & 1) * p.chunk_bytes;
    mbarrier_wait(&full_s[c & 1], (c >> 1) & 1);
    ++landed;
    const SinterMegaChunk h = *reinterpret_cast<const SinterMegaChunk*>(chunk);
    // The other buffer held chunk c - 1, which every thread has left (the barrier ending its last
    // task): the next chunk goes there now.
    if (threadIdx.x == 0 && h.next_bytes != 0) {
      sinter_mega_fetch_chunk(chunks + ((c + 1) & 1) * p.chunk_bytes, p.image + next_at, h.next_bytes,
                              &full_s[(c + 1) & 1]);
      ((c + 1) & 1 ? at_odd : at_even) = next_at;
      next_at += h.next_bytes;
      ++fetched;
    }
    const char* chunk_global = p.image + (c & 1 ? at_odd : at_even);  // thread 0's
    const SinterMegaTask* records = reinterpret_cast<const SinterMegaTask*>(chunk + sizeof(SinterMegaChunk));
    for (u32 k = 0; k < h.tasks; ++k, ++n) {
      // every thread its own copy of the record (broadcast reads, all issued at once): the fields
      // below are registers, not a chain of dependent shared-memory reads
      const SinterMegaTask t = records[k];
      const u32 i = h.first_task + k;
      if (threadIdx.x == 0) {
        const u64 t_wait = p.trace != nullptr ? sinter_mega_now() : 0;
        // the task's view first: its prologue reads it
        sinter_mega_block_idx = make_uint3(t.block_x, t.block_yz & 0xffffu, t.block_yz >> 16);
        sinter_mega_grid_dim = make_uint3(t.grid_x, t.grid_y, t.grid_z);
        sinter_mega_block_dim = make_uint3(t.threads, 1, 1);
        sinter_mega_threads = t.threads;
        sinter_mega_args_global_s = chunk_global + t.args_offset;
        sinter_mega_prologue_ran_s = t.prologue;
        if (t.prologue != 0) prologue(t.function, chunk + t.args_offset, false);
        if (t.wait_count != 0) {
          int ok = 1;
          const SinterMegaWait* waits = reinterpret_cast<const SinterMegaWait*>(chunk + t.first_wait);
          for (u32 w = 0; w < t.wait_count && ok; ++w) {
            const SinterMegaWait wt = waits[w];
            ok = sinter_mega_wait(p, wt.counter, (epoch + 1) * (wt.tasks & ~SINTER_MEGA_WAIT_RANKS),
                                  (wt.tasks & SINTER_MEGA_WAIT_RANKS) != 0, n, t.kernel, epoch);
          }
          go_s = ok;
          if (!ok && t.prologue != 0) prologue(t.function, chunk + t.args_offset, true);
        }
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
      // go_s is written only for a task that waits: a launch that aborts stops at a wait
      if (t.wait_count != 0 && !go_s) {
        go = false;
        break;
      }
      if (threadIdx.x < t.threads) dispatch(t.function, chunk + t.args_offset);
      __syncthreads();
      if (threadIdx.x == 0) {
        if (t.publish != SINTER_MEGA_NO_COUNTER || (t.publish_range != SINTER_MEGA_NO_COUNTER && t.publish_ranks == 0)) {
          sinter_mega_release();
        }
        if (t.publish != SINTER_MEGA_NO_COUNTER) sinter_mega_publish(sinter_mega_counter(p, t.publish));
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
            sinter_mega_publish(sinter_mega_counter(p, t.publish_range));
          }
        }
        if (p.trace != nullptr) p.trace[static_cast<u64>(i) * SINTER_MEGA_TRACE_WORDS + 1] = sinter_mega_now();
      }
    }
    bytes = h.next_bytes;
  }
  if (threadIdx.x == 0) {
    // a chunk fetched but not run (the launch is aborting) lands before the CTA's shared memory goes
    for (u32 c = landed; c < fetched; ++c) mbarrier_wait(&full_s[c & 1], (c >> 1) & 1);
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
