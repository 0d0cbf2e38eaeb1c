// Sinter's first GEMM main loops, shared by matmul and conv (implicit GEMM): a 128x128 output tile
// per CTA of 256 threads. Operand tiles travel global -> registers (the next k-tile is fetched
// while the current one is multiplied) -> shared memory, converted on the way, so any strides,
// dtypes and partial tiles are handled in one place: the loaders. Two main loops:
//   - tensor cores (mma.sync m16n8k16, f32 accumulate) for f16, bf16 and fp8 inputs (fp8 becomes
//     f16 exactly); 8 warps as 2 (M) x 4 (N), each warp 64x32.
//   - FFMA for f32 inputs (keeps full f32 accuracy); each thread an 8x8 block.
// Both leave the f32 accumulator tile in shared memory (kGemmLdC floats per row) for the
// generated epilogue, which reads it with a layout that suits coalesced stores and reductions.
#pragma once

#include "common/memory.cuh"
#include "common/types.cuh"

constexpr int kGemmBM = 128, kGemmBN = 128, kGemmThreads = 256;
constexpr int kGemmBKMma = 32, kGemmBKFfma = 8;
constexpr int kGemmLdC = kGemmBN + 4;  // +4: float2/float4 fragment stores spread over banks
constexpr int kGemmSmemC = kGemmBM * kGemmLdC * 4;
// One operand stage of the mma loop, in 16-bit elements: [128][32 + 8] or [32][128 + 8].
constexpr int kMmaStage = kGemmBM * (kGemmBKMma + 8) > kGemmBKMma * (kGemmBM + 8)
                              ? kGemmBM * (kGemmBKMma + 8) : kGemmBKMma * (kGemmBM + 8);
constexpr int kFfmaLd = kGemmBM + 4;
constexpr int kFfmaStage = kGemmBKFfma * kFfmaLd;  // floats: [8][128 + 4]
constexpr int kGemmSmemMma = 2 * 2 * kMmaStage * 2;
constexpr int kGemmSmemFfma = 2 * 2 * kFfmaStage * 4;
// Dynamic shared memory of a GEMM CTA: the operand stages and the C tile share it.
constexpr int kGemmSmemBytes = kGemmSmemC > kGemmSmemMma ? kGemmSmemC : kGemmSmemMma;
static_assert(kGemmSmemC >= kGemmSmemFfma, "the C tile must cover the FFMA stages");

// ---- operand conversion -------------------------------------------------------------------------
// The 16-bit tensor-core operand bits of an input element: bf16 and f16 as they are, fp8 as the
// f16 of the same value (exact: both fp8 formats are subsets of f16).
__device__ __forceinline__ u16 mma_bits(bf16 x) { return x.bits; }
__device__ __forceinline__ u16 mma_bits(f16 x) { return x.bits; }
__device__ __forceinline__ u16 mma_bits(fp8e4m3 x) { return from_float<f16>(to_float(x)).bits; }
__device__ __forceinline__ u16 mma_bits(fp8e5m2 x) { return static_cast<u16>(static_cast<u16>(x.bits) << 8); }


// ---- per-thread operand registers ----------------------------------------------------------------
// A kRows x kBK operand tile (rows are M for A, N for B) is split into vectors of kVec elements
// along its contiguous direction: along k (kAlongK) or along rows. Thread t holds vectors
// t, t + kThreads, ... so that consecutive threads read consecutive memory.
template <typename T, int kRows, int kBK, int kThreads, bool kAlongK, int kVec>
struct TileRegs {
  static constexpr bool kK = kAlongK;
  static constexpr int kLine = (kAlongK ? kBK : kRows) / kVec;  // vectors per contiguous line
  static constexpr int kIters = kRows * kBK / kVec / kThreads;
  static_assert((kAlongK ? kBK : kRows) % kVec == 0, "a vector must not cross a tile line");
  static_assert(kRows * kBK / kVec % kThreads == 0, "the tile must split evenly over threads");
  // Shared-memory row length (16-bit elements) of the mma stage in the natural layout.
  static constexpr int kLdMma = kAlongK ? kBK + 8 : kRows + 8;

  T v[kIters][kVec];

  // Tile coordinates of element 0 of this thread's vector `it`; element j is at (row, k + j)
  // along k, or (row + j, k) along rows.
  __device__ __forceinline__ static void coords(int it, int& row, int& k) {
    const int e = it * kThreads + static_cast<int>(threadIdx.x);
    if (kAlongK) {
      row = e / kLine;
      k = (e % kLine) * kVec;
    } else {
      k = e / kLine;
      row = (e % kLine) * kVec;
    }
  }

  // mma stage, natural layout: [row][k] along k, [k][row] along rows (vectors stay contiguous).
  __device__ __forceinline__ void store_mma(u16* s) const {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      int row, k;
      coords(it, row, k);
      u16* dst = s + (kAlongK ? row * kLdMma + k : k * kLdMma + row);
      u16 b[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) b[j] = mma_bits(v[it][j]);
      if constexpr (kVec % 8 == 0) {  // 16-byte stores: rows are 80 or 272 bytes, vectors 16-byte aligned
#pragma unroll
        for (int c = 0; c < kVec / 8; ++c) {
          uint4 w;
          w.x = b[8 * c] | (static_cast<u32>(b[8 * c + 1]) << 16);
          w.y = b[8 * c + 2] | (static_cast<u32>(b[8 * c + 3]) << 16);
          w.z = b[8 * c + 4] | (static_cast<u32>(b[8 * c + 5]) << 16);
          w.w = b[8 * c + 6] | (static_cast<u32>(b[8 * c + 7]) << 16);
          reinterpret_cast<uint4*>(dst)[c] = w;
        }
      } else if constexpr (kVec % 2 == 0) {
#pragma unroll
        for (int c = 0; c < kVec / 2; ++c) {
          reinterpret_cast<u32*>(dst)[c] = b[2 * c] | (static_cast<u32>(b[2 * c + 1]) << 16);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) dst[j] = b[j];
      }
    }
  }

  // FFMA stage: always [k][row] floats (row length kRows + 4), whatever the global direction.
  __device__ __forceinline__ void store_f32(float* s) const {
    constexpr int ld = kRows + 4;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      int row, k;
      coords(it, row, k);
      if constexpr (!kAlongK && kVec == 4) {  // 16-byte store: rows are 528 bytes
        float4 f;
        f.x = to_float(v[it][0]);
        f.y = to_float(v[it][1]);
        f.z = to_float(v[it][2]);
        f.w = to_float(v[it][3]);
        *reinterpret_cast<float4*>(s + k * ld + row) = f;
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          s[kAlongK ? (k + j) * ld + row : k * ld + row + j] = to_float(v[it][j]);
        }
      }
    }
  }
};

// An operand read as a strided matrix: element (row, k) of the tile is p[row * srow + k * sk].
// `rows` valid rows start at p (may exceed kRows), the reduction has `kdim` elements; everything
// outside is zero. A vector is loaded whole when it lies inside, element by element otherwise,
// so kVec > 1 needs only stride 1 along the vector and aligned vector starts (the host checks).
template <typename T, int kRows, int kBK, int kThreads, bool kAlongK, int kVec>
struct StridedLoader : TileRegs<T, kRows, kBK, kThreads, kAlongK, kVec> {
  typedef TileRegs<T, kRows, kBK, kThreads, kAlongK, kVec> Regs;
  const T* p;
  i64 srow, sk;
  int rows, kdim;

  __device__ __forceinline__ StridedLoader(const T* p_, i64 srow_, i64 sk_, int rows_, int kdim_)
      : p(p_), srow(srow_), sk(sk_), rows(rows_), kdim(kdim_) {}

  __device__ __forceinline__ void load(int k0) {
#pragma unroll
    for (int it = 0; it < Regs::kIters; ++it) {
      int row, k;
      Regs::coords(it, row, k);
      const int kg = k0 + k;
      const T* base = p + static_cast<i64>(row) * srow + static_cast<i64>(kg) * sk;
      const bool whole = kAlongK ? (row < rows && kg + kVec <= kdim) : (row + kVec <= rows && kg < kdim);
      if (whole) {
        load_raw(base, this->v[it]);
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const bool in = kAlongK ? (row < rows && kg + j < kdim) : (row + j < rows && kg < kdim);
          this->v[it][j] = in ? base[kAlongK ? j * sk : j * srow] : T{};
        }
      }
    }
  }
};

// ---- tensor-core main loop -------------------------------------------------------------------------
__device__ __forceinline__ u32 lds_u32(const u16* p) { return *reinterpret_cast<const u32*>(p); }
__device__ __forceinline__ u32 pack_u16x2(u16 lo, u16 hi) { return lo | (static_cast<u32>(hi) << 16); }

// m16n8k16 fragments (PTX ISA "Matrix Fragments for mma.m16n8k16"), with g = lane / 4 and
// t = lane % 4: A regs hold (row g | g+8, k 2t..2t+1 | 2t+8..2t+9) in the order (g, 2t), (g+8, 2t),
// (g, 2t+8), (g+8, 2t+8); B regs hold (k 2t..2t+1 | 2t+8..2t+9, n g). The lower k sits in the low
// half. kRowK: the stage is [row][k] (pairs are one 32-bit word), else [k][row] (two 16-bit loads).
template <bool kRowK, int kLd>
__device__ __forceinline__ void load_a_frag(const u16* s, int m, int k, u32 (&a)[4]) {
  const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
  if (kRowK) {
    const u16* p = s + (m + g) * kLd + k + 2 * t;
    a[0] = lds_u32(p);
    a[1] = lds_u32(p + 8 * kLd);
    a[2] = lds_u32(p + 8);
    a[3] = lds_u32(p + 8 * kLd + 8);
  } else {
    const u16* p = s + (k + 2 * t) * kLd + m + g;
    a[0] = pack_u16x2(p[0], p[kLd]);
    a[1] = pack_u16x2(p[8], p[kLd + 8]);
    a[2] = pack_u16x2(p[8 * kLd], p[9 * kLd]);
    a[3] = pack_u16x2(p[8 * kLd + 8], p[9 * kLd + 8]);
  }
}

template <bool kRowK, int kLd>
__device__ __forceinline__ void load_b_frag(const u16* s, int n, int k, u32 (&b)[2]) {
  const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
  if (kRowK) {
    const u16* p = s + (n + g) * kLd + k + 2 * t;
    b[0] = lds_u32(p);
    b[1] = lds_u32(p + 8);
  } else {
    const u16* p = s + (k + 2 * t) * kLd + n + g;
    b[0] = pack_u16x2(p[0], p[kLd]);
    b[1] = pack_u16x2(p[8 * kLd], p[9 * kLd]);
  }
}

// d += a * b; kBf16 picks the operand type (bf16, else f16).
template <bool kBf16>
__device__ __forceinline__ void mma_16816(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  if (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// C[128][128] (row length kGemmLdC, in `smem`) = A[128 x kdim] * B[kdim x 128] with loaders whose
// tiles are kGemmBM x kGemmBKMma and kGemmBN x kGemmBKMma. Ends with a barrier: C is readable by
// every thread, and the next tile may reuse the operand stages after the caller's own barrier.
template <bool kBf16, class LoaderA, class LoaderB>
__device__ __forceinline__ void gemm_mma_mainloop(LoaderA& la, LoaderB& lb, int kdim, char* smem) {
  u16* sa = reinterpret_cast<u16*>(smem);  // [2][kMmaStage]
  u16* sb = sa + 2 * kMmaStage;            // [2][kMmaStage]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
  float acc[4][4][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

  const int ktiles = (kdim + kGemmBKMma - 1) / kGemmBKMma;
  la.load(0);
  lb.load(0);
  la.store_mma(sa);
  lb.store_mma(sb);
  __syncthreads();
  for (int kt = 0; kt < ktiles; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < ktiles;
    if (more) {  // in flight while this k-tile is multiplied
      la.load((kt + 1) * kGemmBKMma);
      lb.load((kt + 1) * kGemmBKMma);
    }
    const u16* as = sa + cur * kMmaStage;
    const u16* bs = sb + cur * kMmaStage;
#pragma unroll
    for (int kk = 0; kk < kGemmBKMma; kk += 16) {
      u32 af[4][4], bfr[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) load_a_frag<LoaderA::kK, LoaderA::kLdMma>(as, wm + mi * 16, kk, af[mi]);
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) load_b_frag<LoaderB::kK, LoaderB::kLdMma>(bs, wn + ni * 8, kk, bfr[ni]);
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mma_16816<kBf16>(acc[mi][ni], af[mi], bfr[ni]);
    }
    if (more) {
      // The other stage was last read in iteration kt - 1, which ended with a barrier.
      la.store_mma(sa + (cur ^ 1) * kMmaStage);
      lb.store_mma(sb + (cur ^ 1) * kMmaStage);
    }
    __syncthreads();
  }
  // C aliases the stages: the loop's last barrier guarantees every warp is done reading them.
  float* cs = reinterpret_cast<float*>(smem);
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const int row = wm + mi * 16 + g, col = wn + ni * 8 + 2 * t;
      float2 lo, hi;
      lo.x = acc[mi][ni][0];
      lo.y = acc[mi][ni][1];
      hi.x = acc[mi][ni][2];
      hi.y = acc[mi][ni][3];
      *reinterpret_cast<float2*>(cs + row * kGemmLdC + col) = lo;
      *reinterpret_cast<float2*>(cs + (row + 8) * kGemmLdC + col) = hi;
    }
  }
  __syncthreads();
}

// ---- FFMA main loop (f32 inputs) ---------------------------------------------------------------------
// Same contract as gemm_mma_mainloop with k-tiles of kGemmBKFfma. Thread (tx, ty) = (tid % 16,
// tid / 16) owns rows {4ty..4ty+3, 64+4ty..64+4ty+3} and the same pattern of columns with tx, so
// each k step is four float4 shared loads for 64 FMAs.
template <class LoaderA, class LoaderB>
__device__ __forceinline__ void gemm_ffma_mainloop(LoaderA& la, LoaderB& lb, int kdim, char* smem) {
  float* sa = reinterpret_cast<float*>(smem);  // [2][kGemmBKFfma][kFfmaLd]
  float* sb = sa + 2 * kFfmaStage;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  const int ktiles = (kdim + kGemmBKFfma - 1) / kGemmBKFfma;
  la.load(0);
  lb.load(0);
  la.store_f32(sa);
  lb.store_f32(sb);
  __syncthreads();
  for (int kt = 0; kt < ktiles; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < ktiles;
    if (more) {
      la.load((kt + 1) * kGemmBKFfma);
      lb.load((kt + 1) * kGemmBKFfma);
    }
    const float* as = sa + cur * kFfmaStage;
    const float* bs = sb + cur * kFfmaStage;
#pragma unroll
    for (int kk = 0; kk < kGemmBKFfma; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(as + kk * kFfmaLd + ty * 4);
      const float4 a1 = *reinterpret_cast<const float4*>(as + kk * kFfmaLd + 64 + ty * 4);
      const float4 b0 = *reinterpret_cast<const float4*>(bs + kk * kFfmaLd + tx * 4);
      const float4 b1 = *reinterpret_cast<const float4*>(bs + kk * kFfmaLd + 64 + tx * 4);
      const float ar[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
    }
    if (more) {
      la.store_f32(sa + (cur ^ 1) * kFfmaStage);
      lb.store_f32(sb + (cur ^ 1) * kFfmaStage);
    }
    __syncthreads();
  }
  float* cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4);
    float4 c0, c1;
    c0.x = acc[i][0]; c0.y = acc[i][1]; c0.z = acc[i][2]; c0.w = acc[i][3];
    c1.x = acc[i][4]; c1.y = acc[i][5]; c1.z = acc[i][6]; c1.w = acc[i][7];
    *reinterpret_cast<float4*>(cs + row * kGemmLdC + tx * 4) = c0;
    *reinterpret_cast<float4*>(cs + row * kGemmLdC + 64 + tx * 4) = c1;
  }
  __syncthreads();
}
