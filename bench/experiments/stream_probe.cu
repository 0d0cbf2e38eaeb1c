// How close can a streaming kernel get to cudaMemcpy on this GPU, and how fast can a read-only
// stream (a decode GEMV's weight) go? A probe, not a product kernel: it decides which structure
// the pointwise tile (issue 3: a 10-op chain at 90% of copy) and the decode GEMV (issue 4: 85% of
// copy for the weight bytes) should take. Each variant is timed as the median of many launches
// with CUDA events; copies count bytes read + written, reads the bytes read.
//   nvcc -O3 -std=c++17 -arch=sm_90a -I kernels bench/experiments/stream_probe.cu -o stream_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/bulk_copy.cuh"
#include "common/stream_memory.cuh"  // st_stream_16
#include "probe_check.cuh"


// As stream_memory.cuh's ld_stream_16 without its L2::256B prefetch hint (what this probe timed).
__device__ __forceinline__ uint4 ld_nc(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
// a bf16x2 add in each word: the work of a cheap pointwise op
__device__ __forceinline__ uint4 bump(uint4 v) {
  const u32 one = 0x3f803f80u;  // (1.0, 1.0) in bf16
  asm("add.rn.bf16x2 %0, %0, %1;" : "+r"(v.x) : "r"(one));
  asm("add.rn.bf16x2 %0, %0, %1;" : "+r"(v.y) : "r"(one));
  asm("add.rn.bf16x2 %0, %0, %1;" : "+r"(v.z) : "r"(one));
  asm("add.rn.bf16x2 %0, %0, %1;" : "+r"(v.w) : "r"(one));
  return v;
}

// Persistent grid-stride copy: a tile is kUnroll vectors per thread, lanes adjacent.
template <int kUnroll, bool kHints, bool kBump>
__global__ void copy_persistent(const uint4* __restrict__ src, uint4* __restrict__ dst, long long n) {
  const long long tile = static_cast<long long>(blockDim.x) * kUnroll;
  for (long long base = blockIdx.x * tile; base < n; base += static_cast<long long>(gridDim.x) * tile) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long i = base + u * blockDim.x + threadIdx.x;
      if (i < n) v[u] = kHints ? ld_nc(src + i) : src[i];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long i = base + u * blockDim.x + threadIdx.x;
      if (kBump) v[u] = bump(v[u]);
      if (i < n) {
        if (kHints) st_stream_16(dst + i, v[u]); else dst[i] = v[u];
      }
    }
  }
}

// One tile per CTA, no loop: the grid covers the array (what a plain elementwise kernel does).
template <int kUnroll>
__global__ void copy_flat(const uint4* __restrict__ src, uint4* __restrict__ dst, long long n) {
  const long long base = static_cast<long long>(blockIdx.x) * blockDim.x * kUnroll;
  uint4 v[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const long long i = base + u * blockDim.x + threadIdx.x;
    if (i < n) v[u] = src[i];
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const long long i = base + u * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = v[u];
  }
}

// A ring of kStages chunk buffers fed by cp.async.bulk: chunk c of src into buffer s, counted on
// full[s] (thread 0 issues).
template <int kChunk>
__device__ __forceinline__ void ring_load(char* smem, u64* full, int s, const char* src, long long c) {
  mbarrier_arrive_expect_tx(&full[s], kChunk);
  bulk_copy_g2s(smem + s * kChunk, src + c * kChunk, kChunk, &full[s]);
}
// This CTA's chunks are blockIdx.x, + gridDim.x, ...; returns how many. Every thread calls it:
// thread 0 sets up the barriers and loads the first kStages chunks.
template <int kChunk, int kStages>
__device__ long long ring_start(const char* src, long long bytes, char* smem, u64* full) {
  const long long chunks = bytes / kChunk, first = blockIdx.x, stride = gridDim.x;
  const long long mine = first < chunks ? (chunks - first + stride - 1) / stride : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) mbarrier_init(&full[s], 1);
    fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages && s < mine; ++s) ring_load<kChunk>(smem, full, s, src, first + s * stride);
  }
  return mine;
}

// Through shared memory with the bulk copy engine: chunks of kChunk bytes in a ring of kStages,
// one thread issuing loads and stores; with kBump every thread transforms the chunk in place
// (the shape a bulk-staged pointwise tile would have). n is a multiple of kChunk here.
template <int kChunk, int kStages, bool kBump>
__global__ void __launch_bounds__(256) copy_bulk(const char* __restrict__ src, char* __restrict__ dst, long long bytes) {
  extern __shared__ __align__(128) char smem[];
  __shared__ u64 full[kStages];
  const long long first = blockIdx.x, stride = gridDim.x;
  const long long mine = ring_start<kChunk, kStages>(src, bytes, smem, full);
  // a pure copy needs one thread; the others would only wait (and could fall two phases behind)
  if (!kBump && threadIdx.x != 0) return;
  for (long long j = 0; j < mine; ++j) {
    const int s = static_cast<int>(j % kStages);
    mbarrier_wait(&full[s], static_cast<u32>((j / kStages) & 1));
    char* buf = smem + s * kChunk;
    if (kBump) {
      uint4* b = reinterpret_cast<uint4*>(buf);
      for (int i = threadIdx.x; i < kChunk / 16; i += blockDim.x) b[i] = bump(b[i]);
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + (first + j * stride) * kChunk),
                   "r"(smem_addr(buf)), "n"(kChunk)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      // refill the previous chunk's buffer once its store has read it (this one may still run)
      if (j >= 1 && j - 1 + kStages < mine) {
        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        ring_load<kChunk>(smem, full, static_cast<int>((j - 1) % kStages), src, first + (j - 1 + kStages) * stride);
      }
    }
    if (kBump) __syncthreads();  // nobody writes buffer s again before its refill lands
  }
  if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Read-only streams: a fold of every 32-bit word (kept so the loads are not dead).
// One tile: kUnroll vectors per thread, lanes adjacent, starting at vector `base`.
template <int kUnroll>
__device__ __forceinline__ unsigned fold_tile(const uint4* __restrict__ src, long long base, long long n) {
  uint4 v[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const long long i = base + u * blockDim.x + threadIdx.x;
    v[u] = i < n ? ld_nc(src + i) : make_uint4(0, 0, 0, 0);
  }
  unsigned acc = 0;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) acc += v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  return acc;
}

template <int kUnroll>
__global__ void read_persistent(const uint4* __restrict__ src, long long n, unsigned* out) {
  const long long tile = static_cast<long long>(blockDim.x) * kUnroll;
  unsigned acc = 0;
  for (long long base = blockIdx.x * tile; base < n; base += static_cast<long long>(gridDim.x) * tile) {
    acc += fold_tile<kUnroll>(src, base, n);
  }
  if (acc == 0x12345678u) *out = acc;
}

// One tile per CTA, the grid covering the array.
template <int kUnroll>
__global__ void read_flat(const uint4* __restrict__ src, long long n, unsigned* out) {
  const unsigned acc = fold_tile<kUnroll>(src, static_cast<long long>(blockIdx.x) * blockDim.x * kUnroll, n);
  if (acc == 0x12345678u) *out = acc;
}

template <int kChunk, int kStages>
__global__ void __launch_bounds__(256) read_bulk(const char* __restrict__ src, long long bytes, unsigned* out) {
  extern __shared__ __align__(128) char smem[];
  __shared__ u64 full[kStages];
  const long long first = blockIdx.x, stride = gridDim.x;
  const long long mine = ring_start<kChunk, kStages>(src, bytes, smem, full);
  unsigned acc = 0;
  for (long long j = 0; j < mine; ++j) {
    const int s = static_cast<int>(j % kStages);
    mbarrier_wait(&full[s], static_cast<u32>((j / kStages) & 1));
    const uint4* b = reinterpret_cast<const uint4*>(smem + s * kChunk);
    for (int i = threadIdx.x; i < kChunk / 16; i += blockDim.x) {
      const uint4 v = b[i];
      acc += v.x ^ v.y ^ v.z ^ v.w;
    }
    __syncthreads();  // everyone is done with buffer s
    if (threadIdx.x == 0 && j + kStages < mine) ring_load<kChunk>(smem, full, s, src, first + (j + kStages) * stride);
  }
  if (acc == 0x12345678u) *out = acc;
}

struct Timer {
  cudaEvent_t a, b;
  Timer() { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  template <typename F>
  double median_ms(F&& launch, int reps = 25) {
    launch();
    CHECK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) {
      CHECK(cudaEventRecord(a));
      launch();
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      t.push_back(ms);
    }
    CHECK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const long long copy_bytes = 512ll << 20;          // 2^28 bf16
  const long long weight_bytes = 4096ll * 14336 * 2;  // the decode weight
  char *src, *dst;
  unsigned* sink;
  CHECK(cudaMalloc(&src, copy_bytes));
  CHECK(cudaMalloc(&dst, copy_bytes));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(src, 0x3c, copy_bytes));
  Timer timer;
  const long long n16 = copy_bytes / 16;
  auto report = [](const char* name, double ms, double bytes) {
    std::printf("%-52s %8.4f ms %6.3f TB/s\n", name, ms, bytes / ms / 1e9);
  };
  report("cudaMemcpy D2D", timer.median_ms([&] { CHECK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice)); }),
         2.0 * copy_bytes);
#define PERSIST(U, H, B, T, PER)                                                                          \
  report("persistent unroll " #U " hints " #H " bump " #B " threads " #T " ctas/SM " #PER,                \
         timer.median_ms([&] {                                                                            \
           copy_persistent<U, H, B><<<sms * PER, T>>>(reinterpret_cast<const uint4*>(src),                \
                                                      reinterpret_cast<uint4*>(dst), n16);                 \
         }),                                                                                              \
         2.0 * copy_bytes)
  PERSIST(4, false, false, 512, 4);
  PERSIST(4, true, false, 512, 4);
  PERSIST(8, false, false, 256, 8);
  PERSIST(8, true, false, 256, 8);
  PERSIST(4, false, true, 512, 4);
  PERSIST(2, false, false, 1024, 2);
  PERSIST(4, false, false, 256, 8);
  PERSIST(16, false, false, 128, 16);
#define FLAT(U, T)                                                                                   \
  report("flat unroll " #U " threads " #T, timer.median_ms([&] {                                    \
           copy_flat<U><<<static_cast<unsigned>((n16 + T * U - 1) / (T * U)), T>>>(               \
               reinterpret_cast<const uint4*>(src), reinterpret_cast<uint4*>(dst), n16);             \
         }),                                                                                         \
         2.0 * copy_bytes)
  FLAT(1, 256);
  FLAT(2, 256);
  FLAT(1, 512);
  FLAT(1, 128);
  FLAT(4, 256);
  FLAT(8, 128);
  FLAT(4, 512);
#define BULK(C, S, B, PER)                                                                                   \
  {                                                                                                          \
    auto k = copy_bulk<C, S, B>;                                                                             \
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, C * S));                     \
    report("bulk chunk " #C " stages " #S " bump " #B " ctas/SM " #PER, timer.median_ms([&] {               \
             k<<<sms * PER, 256, C * S>>>(src, dst, copy_bytes);                                              \
           }),                                                                                               \
           2.0 * copy_bytes);                                                                                \
  }
  BULK(16384, 4, false, 1);
  BULK(32768, 4, false, 1);
  BULK(16384, 6, false, 1);
  BULK(16384, 3, false, 2);
  BULK(8192, 4, false, 3);
  BULK(16384, 4, true, 1);
  BULK(16384, 3, true, 2);
  BULK(8192, 4, true, 3);
  for (long long bytes : {weight_bytes, copy_bytes}) {
    const long long w16 = bytes / 16;
    char label[96];
#define READP(U, T, PER)                                                                                   \
  std::snprintf(label, sizeof label, "read %lld MB persistent unroll " #U " threads " #T " ctas/SM " #PER, \
                bytes >> 20);                                                                              \
  report(label, timer.median_ms([&] {                                                                      \
           read_persistent<U><<<sms * PER, T>>>(reinterpret_cast<const uint4*>(src), w16, sink);           \
         }),                                                                                               \
         double(bytes))
#define READF(U, T)                                                                                      \
  std::snprintf(label, sizeof label, "read %lld MB flat unroll " #U " threads " #T, bytes >> 20);          \
  report(label, timer.median_ms([&] {                                                                      \
           read_flat<U><<<static_cast<unsigned>((w16 + T * U - 1) / (T * U)), T>>>(                        \
               reinterpret_cast<const uint4*>(src), w16, sink);                                            \
         }),                                                                                               \
         double(bytes))
    READF(1, 256);
    READF(2, 256);
    READF(4, 256);
    READF(8, 128);
    READP(4, 512, 4);
    READP(8, 256, 8);
    READP(8, 512, 4);
    READP(16, 256, 4);
    READP(16, 128, 8);
#define READB(C, S, PER)                                                                                    \
  {                                                                                                         \
    auto k = read_bulk<C, S>;                                                                               \
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, C * S));                    \
    std::snprintf(label, sizeof label, "read %lld MB bulk chunk " #C " stages " #S " ctas/SM " #PER,       \
                  bytes >> 20);                                                                             \
    report(label, timer.median_ms([&] { k<<<sms * PER, 256, C * S>>>(src, bytes / C * C, sink); }),        \
           double(bytes / C * C));                                                                          \
  }
    READB(16384, 4, 1);
    READB(16384, 6, 1);
    READB(32768, 6, 1);
    READB(16384, 4, 3);
    READB(8192, 8, 2);
  }
  return 0;
}
