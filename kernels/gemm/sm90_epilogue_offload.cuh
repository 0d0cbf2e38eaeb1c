// The offloaded epilogue of the coop held-store Hopper kernels (gemm/sm90_gemm_direct.cuh): the
// consumers only round a full tile's accumulator to the matmul's 16-bit type (hold_accumulators,
// a bare GEMM's cost) and stage it chunk by chunk under the next tile's k-blocks; the producer
// warpgroup's three idle warps (1-3, 56 registers each after setmaxnreg, the consumers 224) run
// the region's epilogue on each staged chunk and write it with a TMA store. The epilogue's arithmetic (bias,
// GELU, amax: ~14 instructions an element) then runs beside the wgmma instead of while the
// tensor cores wait at each tile's end. The helpers see the matmul's result rounded to its 16-bit
// type, as the graph defines it (the in-line epilogue reads the f32 accumulator).
//
// Protocol, per consumer warp w (0-7) and slot s (its two 2 KB store slots, as store_held_chunk):
// every consumer warp posts the same sequence of messages (4 a tile: a 128-column tile's last two,
// the first tile's and partial tiles' are empty; then one "done"), message n in slot n % 2:
//   consumer: wait free[w][s] (the helper is done with message n - 2), stage the chunk (or
//     nothing), lane 0 writes mail[w][s] = {column, row} (or kOffloadSkip / kOffloadDone), every
//     lane arrives on full[w][s] (count 32; mbarrier.arrive releases the lane's writes).
//   helper warp h (1-3) serves consumer warps h - 1, h + 2, h + 5 in turn, message by message:
//     wait full, read the mail, load the chunk in the fragment layout (ldmatrix, the inverse of
//     the stmatrix that staged it), run the epilogue on its 16 words a lane, stage the outputs
//     back, one TMA store; every lane arrives on free once that store has read the slot (checked
//     after the helper's next store is issued, or before it would wait for a message).
// Every consumer warp posting as many messages as the others keeps the helpers' turns free of
// deadlock: a helper waiting on message n of one warp has freed every message before n - 1 of
// all its warps, so no consumer warp (and no warpgroup it would hold up in the wgmma) waits on
// it. The consumers post a message every few k-blocks (the generator's offload_spacing: 8; at 4
// the helpers fell behind and the consumers waited for their slots).
// The CTA's last tile runs its epilogue in line (three warps behind the kernel's end would be
// the whole tail), and the helpers wait for their TMA stores before the kernel ends.
#pragma once

#include "gemm/sm90_epilogue.cuh"

enum : int { kOffloadSkip = -1, kOffloadDone = -2 };

struct HopperOffload {
  u64* full;   // [8 warps][2 slots]
  u64* free_;  // [8 warps][2 slots]
  int2* mail;  // [8 warps][2 slots]: chunk origin {column, row}, or {kOffloadSkip / kOffloadDone, 0}
};

// Thread 0, with the kernel's other barriers.
__device__ __forceinline__ void hopper_offload_init(const HopperOffload& o) {
  for (int i = 0; i < 16; ++i) {
    mbarrier_init(&o.full[i], 32);
    mbarrier_init(&o.free_[i], 32);
  }
}

// The inverse of stage_fragment_rows_sw128: the 4 words a lane would have staged there.
__device__ __forceinline__ void load_fragment_rows_sw128(const char* slot, u32 (&w)[4], int half, int group) {
  const int lane = threadIdx.x & 31;
  const int r = 8 * half + (lane & 7), unit = 4 * group + (lane >> 3);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "r"(smem_addr(slot + r * 128 + ((unit ^ (r & 7)) << 4)))
               : "memory");
}

// Consumer: chunk p (0-3) of the held words (store_held_chunk's layout) to the helpers, with its
// origin (col0 + 64 p, row0), or an empty message where nothing is `holding`, so that this warp
// posts as many messages as the others. A tile posts 4, so message p of any tile goes to slot
// p % 2 and the message before it there is the tile's p - 2 (p >= 2: the free barrier's even
// phase) or the previous tile's p + 2 (odd phase; before the first tile the barrier's fresh
// state counts as that phase completed): no counter a consumer would have to keep.
template <int kWords>
__device__ __forceinline__ void hopper_offload_post(const HopperOffload& o, char* store_stage, const u32 (&held)[kWords],
                                                    int p, bool holding, int col0, int row0) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 7, s = p & 1, i = 2 * w + s;
  mbarrier_wait(&o.free_[i], p >= 2 ? 0u : 1u);
  __syncwarp();  // stmatrix below needs the warp converged after each lane's wait loop
  if (holding && 8 * (2 * p + 1) + 8 <= kWords) {  // (p is a constant where the caller unrolls)
    stage_held_chunk(held_store_slot(store_stage, w, s), held, p);
  }
  if (lane == 0) o.mail[i] = holding ? make_int2(col0 + 64 * p, row0) : make_int2(kOffloadSkip, 0);
  mbarrier_arrive(&o.full[i]);  // release: the staged words and the mail
}

// Consumer, after its last tile: waits until the helpers are done with both slots (the caller
// may then store from them itself: the last tile's messages 2 and 3, odd phases) and posts
// "done" as the next tile's message 0.
__device__ __forceinline__ void hopper_offload_finish(const HopperOffload& o) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 7;
  mbarrier_wait(&o.free_[2 * w], 1u);
  mbarrier_wait(&o.free_[2 * w + 1], 1u);
  if (lane == 0) o.mail[2 * w] = make_int2(kOffloadDone, 0);
  mbarrier_arrive(&o.full[2 * w]);
}

// Helper warp (1-3 of the producer warpgroup): serves its consumer warps until they post
// "done". `epilogue(grow, gcol, words)`: the region's epilogue on 16 rows from matrix row `grow`
// (this lane's rows as in the consumer warp: l / 4 and + 8) by 32 columns from `gcol`,
// words[4 h + i] = word i of the stmatrix block of row half h, replaced by the outputs; a chunk
// is two such groups (32 columns each: 8 words a lane, within the helpers' 56 registers).
template <class Epilogue>
__device__ __forceinline__ void hopper_offload_serve(const HopperOffload& o, char* store_stage, const SinterTensorMap* map,
                                                     Epilogue&& epilogue) {
  const int lane = threadIdx.x & 31, h0 = (threadIdx.x >> 5) - 1;
  // A chunk's slot is released once its TMA store has read it: not waited for right after the
  // store, but when the next chunk's store has been issued (its read wait then covers one store
  // in flight) or when the helper would wait for a message anyway.
  int pending = -1;  // the barrier index of a slot whose store may still be reading it
  auto release_pending = [&](bool all) {
    if (pending < 0) return;
    if (lane == 0) {
      if (all) {
        bulk_wait_group_read<0>();
      } else {
        bulk_wait_group_read<1>();
      }
    }
    __syncwarp();
    mbarrier_arrive(&o.free_[pending]);
    pending = -1;
  };
  // (the mail is read again from shared memory where it is needed, so that the epilogue has the
  // rest of the registers)
  for (int seq = 0;; ++seq) {
    const int s = seq & 1;
    for (int w = h0; w < 8; w += 3) {
      const int i = 2 * w + s;
      const u32 parity = static_cast<u32>((seq >> 1) & 1);
      // (one lane's view decides for the warp: release_pending and ldmatrix need it converged;
      // lanes 1-31 acquire through lane 0's test_wait and the __syncwarp after it)
      if (!__shfl_sync(0xffffffffu, mbarrier_test_wait(&o.full[i], parity), 0)) {
        release_pending(true);  // idle anyway
        mbarrier_wait(&o.full[i], parity);
      }
      __syncwarp();
      const int x = o.mail[i].x;
      if (x == kOffloadDone) goto served;  // every consumer warp posts "done" as the same message
      if (x == kOffloadSkip) {
        mbarrier_arrive(&o.free_[i]);
        continue;
      }
      char* slot = held_store_slot(store_stage, w, s);
#pragma unroll 1
      for (int g = 0; g < 2; ++g) {
        u32 words[8];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          u32 q[4];
          load_fragment_rows_sw128(slot, q, h, g);
#pragma unroll
          for (int j = 0; j < 4; ++j) words[4 * h + j] = q[j];
        }
        const volatile int* m = &o.mail[i].x;  // {column, row}
        epilogue(static_cast<i64>(m[1]), static_cast<i64>(m[0] + 32 * g), words);
        __syncwarp();  // an epilogue with lane-dependent branches must not reach stmatrix diverged
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const u32 q[4] = {words[4 * h], words[4 * h + 1], words[4 * h + 2], words[4 * h + 3]};
          stage_fragment_rows_sw128(slot, q, h, g);
        }
      }
      fence_proxy_async_shared();
      __syncwarp();
      if (lane == 0) {
        const volatile int* m = &o.mail[i].x;
        tma_store_3d(map, slot, m[0], m[1], 0);
        bulk_commit_group();
      }
      release_pending(false);  // the store before this one has read its slot
      pending = i;
    }
  }
served:
  release_pending(true);
  if (lane == 0) bulk_wait_all();  // the stores' writes are done before the kernel ends
}
