// How fast an SM turns f32 into packed bf16 pairs, by three routes, and whether two routes
// overlap (issue 4: the GEMM's tile end converts 32768 f32 accumulators while the tensor cores
// idle; session 17 put that at ~1000 cycles a tile from a throughput figure nobody measured).
//   nvcc -O3 -arch=sm_90a -o convert_probe bench/experiments/convert_probe.cu && ./convert_probe
// One CTA of 256 threads per SM (two warps per scheduler, as the GEMM's consumers), each thread
// converting 32 independent values per loop step (16 pairs) for many steps; prints cycles per
// packed pair per SM (lower is better) and the bit-exactness of each route against cvt.rn on a
// sweep of inputs (ties, NaNs, infinities, overflow, denormals).
//   f2fp      cvt.rn.bf16x2.f32 (F2FP.BF16.F32.PACK_AB)
//   veltkamp  hi = x*(2^16+1) - (x*(2^16+1) - x) on the FMA pipe, then one PRMT a pair
//   integer   x + 0x7fff + bit16(x) on the ALU pipe (NaN kept by a select), one PRMT a pair
//   mix       half the pairs f2fp, half integer, interleaved
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>

constexpr int kPairs = 16;
constexpr int kSteps = 4096;

__device__ __forceinline__ uint32_t cvt_f2fp(float a, float b) {
  uint32_t r;
  asm volatile("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(a), "f"(b));
  return r;
}
// Veltkamp's split keeps the top 8 significand bits, rounded to nearest.
__device__ __forceinline__ uint32_t cvt_veltkamp(float a, float b) {
  uint32_t r;
  asm volatile(
      "{\n .reg .f32 ga, gb, da, db, ha, hb;\n"
      " mul.rn.f32 ga, %1, 0f47800080;\n"  // 65537 = 2^16 + 1
      " mul.rn.f32 gb, %2, 0f47800080;\n"
      " sub.rn.f32 da, ga, %1;\n"
      " sub.rn.f32 db, gb, %2;\n"
      " sub.rn.f32 ha, ga, da;\n"
      " sub.rn.f32 hb, gb, db;\n"
      " prmt.b32 %0, ha, hb, 0x7632;\n}"
      : "=r"(r)
      : "f"(a), "f"(b));
  return r;
}
// Round half to even on the bit pattern; a NaN keeps its top half with the quiet bit set.
__device__ __forceinline__ uint32_t cvt_integer(float a, float b) {
  uint32_t r;
  asm volatile(
      "{\n .reg .u32 xa, xb, ta, tb;\n .reg .pred na, nb;\n"
      " mov.b32 xa, %1;\n mov.b32 xb, %2;\n"
      " shr.u32 ta, xa, 16;\n shr.u32 tb, xb, 16;\n"
      " and.b32 ta, ta, 1;\n and.b32 tb, tb, 1;\n"
      " add.u32 ta, ta, xa;\n add.u32 tb, tb, xb;\n"
      " add.u32 ta, ta, 0x7fff;\n add.u32 tb, tb, 0x7fff;\n"
      " setp.nan.f32 na, %1, %1;\n setp.nan.f32 nb, %2, %2;\n"
      " or.b32 xa, xa, 0x400000;\n or.b32 xb, xb, 0x400000;\n"
      " selp.b32 ta, xa, ta, na;\n selp.b32 tb, xb, tb, nb;\n"
      " prmt.b32 %0, ta, tb, 0x7632;\n}"
      : "=r"(r)
      : "f"(a), "f"(b));
  return r;
}

template <int kRoute>
__global__ void __launch_bounds__(256) probe(const float* in, uint32_t* out, long long* cycles) {
  float v[2 * kPairs];
#pragma unroll
  for (int i = 0; i < 2 * kPairs; ++i) v[i] = in[(threadIdx.x * 2 * kPairs + i) % 4096];
  uint32_t acc = 0;
  __syncthreads();
  const long long t0 = clock64();
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
      uint32_t w;
      if constexpr (kRoute == 0) w = cvt_f2fp(v[2 * p], v[2 * p + 1]);
      if constexpr (kRoute == 1) w = cvt_veltkamp(v[2 * p], v[2 * p + 1]);
      if constexpr (kRoute == 2) w = cvt_integer(v[2 * p], v[2 * p + 1]);
      if constexpr (kRoute == 3) w = p % 2 ? cvt_integer(v[2 * p], v[2 * p + 1]) : cvt_f2fp(v[2 * p], v[2 * p + 1]);
      if constexpr (kRoute == 4) w = p % 2 ? cvt_veltkamp(v[2 * p], v[2 * p + 1]) : cvt_f2fp(v[2 * p], v[2 * p + 1]);
      acc ^= w;
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int kRoute>
__global__ void exact(const float* in, uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * i + 1 >= n) return;
  uint32_t w;
  if constexpr (kRoute == 0) w = cvt_f2fp(in[2 * i], in[2 * i + 1]);
  if constexpr (kRoute == 1) w = cvt_veltkamp(in[2 * i], in[2 * i + 1]);
  if constexpr (kRoute == 2) w = cvt_integer(in[2 * i], in[2 * i + 1]);
  out[i] = w;
}

static uint32_t rng = 12345u;
static uint32_t next_u32() {
  rng ^= rng << 13;
  rng ^= rng >> 17;
  rng ^= rng << 5;
  return rng;
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device %s, %d SMs\n", prop.name, sms);
  // inputs: random bit patterns (every class), plus ties and edges
  const int n = 1 << 20;
  float* h = new float[n];
  for (int i = 0; i < n; ++i) {
    uint32_t u = next_u32();
    if (i % 4 == 1) u = (u & 0xffff0000u) | 0x8000u;          // exact ties
    if (i % 4 == 2) u = (u & 0x807fffffu) | (0x7f7u << 20);    // near FLT_MAX
    std::memcpy(&h[i], &u, 4);
  }
  const uint32_t edges[] = {0x7f800000u, 0xff800000u, 0x7fffffffu, 0x7f800001u, 0xffc00000u, 0x7f7fffffu,
                            0x7f7f8000u, 0x00000001u, 0x80008000u, 0x00018000u, 0x3f808000u, 0x3f818000u};
  for (int i = 0; i < 12; ++i) std::memcpy(&h[i * 8], &edges[i], 4);
  float* d_in;
  uint32_t *d_out, *d_ref;
  long long* d_cyc;
  cudaMalloc(&d_in, n * 4);
  cudaMalloc(&d_out, n * 2);
  cudaMalloc(&d_ref, n * 2);
  cudaMalloc(&d_cyc, sms * 8);
  cudaMemcpy(d_in, h, n * 4, cudaMemcpyHostToDevice);
  exact<0><<<n / 2 / 256, 256>>>(d_in, d_ref, n);
  uint32_t* ref = new uint32_t[n / 2];
  uint32_t* got = new uint32_t[n / 2];
  cudaMemcpy(ref, d_ref, n * 2, cudaMemcpyDeviceToHost);
  for (int route = 1; route <= 2; ++route) {
    if (route == 1) exact<1><<<n / 2 / 256, 256>>>(d_in, d_out, n);
    if (route == 2) exact<2><<<n / 2 / 256, 256>>>(d_in, d_out, n);
    cudaMemcpy(got, d_out, n * 2, cudaMemcpyDeviceToHost);
    long bad = 0, bad_nan = 0;
    for (int i = 0; i < n / 2; ++i) {
      for (int half = 0; half < 2; ++half) {
        const uint32_t r = (ref[i] >> (16 * half)) & 0xffffu, g = (got[i] >> (16 * half)) & 0xffffu;
        const bool rnan = (r & 0x7fffu) > 0x7f80u, gnan = (g & 0x7fffu) > 0x7f80u;
        if (rnan && gnan) continue;
        if (r != g) {
          ++bad;
          if (rnan || gnan) ++bad_nan;
          if (bad <= 4) {
            uint32_t u;
            std::memcpy(&u, &h[2 * i + half], 4);
            std::printf("  route %d: x=0x%08x cvt.rn=0x%04x got=0x%04x\n", route, u, r, g);
          }
        }
      }
    }
    std::printf("exactness %s: %ld of %d values differ from cvt.rn (%ld involve NaN)\n",
                route == 1 ? "veltkamp" : "integer", bad, n, bad_nan);
  }
  const char* names[] = {"f2fp", "veltkamp", "integer", "mix f2fp+integer", "mix f2fp+veltkamp"};
  long long* cyc = new long long[sms];
  for (int route = 0; route < 5; ++route) {
    for (int rep = 0; rep < 2; ++rep) {
      if (route == 0) probe<0><<<sms, 256>>>(d_in, d_out, d_cyc);
      if (route == 1) probe<1><<<sms, 256>>>(d_in, d_out, d_cyc);
      if (route == 2) probe<2><<<sms, 256>>>(d_in, d_out, d_cyc);
      if (route == 3) probe<3><<<sms, 256>>>(d_in, d_out, d_cyc);
      if (route == 4) probe<4><<<sms, 256>>>(d_in, d_out, d_cyc);
    }
    cudaMemcpy(cyc, d_cyc, sms * 8, cudaMemcpyDeviceToHost);
    long long worst = 0;
    for (int i = 0; i < sms; ++i) worst = cyc[i] > worst ? cyc[i] : worst;
    const double pairs_per_sm = 256.0 * kSteps * kPairs;
    std::printf("throughput %-18s %.4f cycles a packed pair per SM (%.1f values a cycle per SM)\n", names[route],
                worst / pairs_per_sm, 2.0 * pairs_per_sm / worst);
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("status %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
