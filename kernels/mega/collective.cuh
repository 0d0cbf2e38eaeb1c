// The collectives of a megakernel (all_reduce, all_gather, reduce_scatter among the ranks of a
// group) as two task kernels over memory every rank can read and write (symmetric memory: NCCL
// windows on several GPUs, or one GPU's memory for virtual ranks):
//
//   push (task s): copies slice s of what this rank sends into the receive buffer of every rank,
//                  into this rank's slot; the dispatcher then adds one to slice s's arrival
//                  counter on every rank (SINTER_MEGA_PUBLISH_RANKS, after a system-scope fence);
//   combine (task s): waits (as a task wait, under the watchdog) until slice s has arrived from
//                  every rank, then sums (or takes the max of) the ranks' slices in rank order,
//                  or places them one after another (all_gather), into this rank's output.
//
// Every rank sums in the same order in float (integers in their own type) and rounds once, so
// the ranks' results are bit-identical. Receive buffers alternate between two halves by launch
// epoch: a rank writes launch e + 2's data into the half launch e used only after its launch
// e + 1 saw every rank's push of launch e + 1, which each rank made after finishing launch e.
//
// Only a megakernel runs these: they read the launch epoch and rely on the dispatcher's counters
// (megakernel.cuh, included first, so that blockIdx and blockDim are the task's). The arguments
// are SinterCollectiveArgs (mega_abi.h). Slices count elements of one rank's slot
// (`slot_elems`: the all_reduce tensor, one rank's all_gather input, one rank's reduce_scatter
// output).
#pragma once

#include "common/types.cuh"
#include "mega/mega_abi.h"
#include "mega/megakernel.cuh"

// Rank `sender`'s slot in a receive buffer, in the half of launch `epoch`.
__device__ __forceinline__ u64 sinter_collective_slot(const SinterCollectiveArgs& a, u64 epoch, u32 sender) {
  return ((epoch & 1) * a.world + sender) * a.slot_elems * a.elem_bytes;
}

// `bytes` from `from` to `to` by the task's threads: 16 bytes a load where both are 16-aligned.
__device__ __forceinline__ void sinter_collective_copy(char* to, const char* from, u64 bytes) {
  const u32 t = threadIdx.x, n = blockDim.x;
  if (((reinterpret_cast<u64>(to) | reinterpret_cast<u64>(from) | bytes) & 15) == 0) {
    uint4* d = reinterpret_cast<uint4*>(to);
    const uint4* s = reinterpret_cast<const uint4*>(from);
    for (u64 i = t; i < bytes / 16; i += n) d[i] = s[i];
  } else {
    for (u64 i = t; i < bytes; i += n) to[i] = from[i];
  }
}

// The elements [lo, lo + n) of this task's slice of a rank's slot; false when the task has none.
__device__ __forceinline__ bool sinter_collective_slice(const SinterCollectiveArgs& a, u64& lo, u64& n) {
  lo = static_cast<u64>(blockIdx.x) * a.slice_elems;
  if (lo >= a.slot_elems) return false;
  n = min(static_cast<u64>(a.slice_elems), a.slot_elems - lo);
  return true;
}

// Task s of the push kernel.
__device__ __forceinline__ void sinter_collective_push(const SinterCollectiveArgs& a) {
  u64 lo, n;
  if (!sinter_collective_slice(a, lo, n)) return;
  const u64 epoch = sinter_mega_launch_epoch();
  for (u32 k = 0; k < a.world; ++k) {
    const u32 q = (a.rank + k) % a.world;  // start with the next rank: the ranks spread their writes
    // reduce_scatter sends rank q the q-th part of the input; the others send the whole slot
    const u64 from = (a.op == SINTER_COLLECTIVE_REDUCE_SCATTER ? q * a.slot_elems : 0) + lo;
    sinter_collective_copy(a.recv[q] + sinter_collective_slot(a, epoch, a.rank) + lo * a.elem_bytes,
                           a.in + from * a.elem_bytes, n * a.elem_bytes);
  }
}

// Task s of the combine kernel of a reducing collective, elements of storage type T.
template <typename T>
__device__ __forceinline__ void sinter_collective_reduce(const SinterCollectiveArgs& a) {
  typedef typename ComputeOf<T>::type C;
  u64 lo, n;
  if (!sinter_collective_slice(a, lo, n)) return;
  const u64 epoch = sinter_mega_launch_epoch();
  const char* mine = a.recv[a.rank];
  T* out = reinterpret_cast<T*>(a.out) + lo;
  for (u64 i = threadIdx.x; i < n; i += blockDim.x) {
    C acc = load_as_compute(reinterpret_cast<const T*>(mine + sinter_collective_slot(a, epoch, 0))[lo + i]);
    for (u32 r = 1; r < a.world; ++r) {
      const C x = load_as_compute(reinterpret_cast<const T*>(mine + sinter_collective_slot(a, epoch, r))[lo + i]);
      if (a.reduce == SINTER_COLLECTIVE_SUM) {
        acc = acc + x;
      } else if (x != x || acc != acc) {  // max: NaN wins, as in the CPU reference
        acc = x != x ? x : acc;
      } else {
        acc = x > acc ? x : acc;
      }
    }
    out[i] = store_from_compute<T>(acc);
  }
}

// Task s of the combine kernel of an all_gather: each rank's slice s to its place in the output.
__device__ __forceinline__ void sinter_collective_gather(const SinterCollectiveArgs& a) {
  u64 lo, n;
  if (!sinter_collective_slice(a, lo, n)) return;
  const u64 epoch = sinter_mega_launch_epoch();
  for (u32 r = 0; r < a.world; ++r) {
    sinter_collective_copy(a.out + (r * a.slot_elems + lo) * a.elem_bytes,
                           a.recv[a.rank] + sinter_collective_slot(a, epoch, r) + lo * a.elem_bytes, n * a.elem_bytes);
  }
}
