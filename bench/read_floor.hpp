// The same-run floor of a memory-bound plan: how long the GPU takes to read a given number of
// bytes once, measured in the benchmark's own process on the same GPU, so a decode step's time can
// be said as a fraction of it (issue "decode at the bandwidth limit": >= 80% of this floor).
//
// The read-once kernel streams one buffer of exactly `bytes` (rounded up to 16) with 16-byte
// non-allocating loads, several in flight per thread, and XOR-folds what it read so nothing is
// optimized away. It is compiled here with NVRTC for the current GPU. Grids of 1 to 8 CTAs per SM
// are tried and the fastest median is the floor: the best this GPU reads in this run, not a
// datasheet figure. Buffers far larger than L2 make every run read from HBM. A step's minimum
// bytes count its outputs too (the decode stack's updated KV caches, ~3% of its bytes), which the
// floor reads instead of writing: writes cost HBM about what reads do.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "bench_plan_timing.hpp"
#include "cuda/buffer.hpp"
#include "cuda/device.hpp"
#include "cuda/library.hpp"
#include "cuda/nvrtc.hpp"

namespace sinter::bench {

inline constexpr const char* kReadOnceSource = R"(
extern "C" __global__ void __launch_bounds__(512) sinter_read_once(const uint4* p, unsigned long long n,
                                                                   unsigned int* sink) {
  constexpr int kInFlight = 4;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned int acc = 0;
  for (; i + (kInFlight - 1) * stride < n; i += kInFlight * stride) {
    uint4 v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w)
                   : "l"(p + i + j * stride));
    }
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) atomicAdd(sink, 1u);  // data-dependent: the loads cannot be dropped
}
)";

struct ReadFloor {
  double ms = 0;        // the median time of one read of all the bytes, at the best grid
  double tb_per_s = 0;  // bytes / ms
  int ctas_per_sm = 0;  // the grid that gave it
};

inline ReadFloor read_once_floor(std::size_t bytes, cudaStream_t stream, int runs) {
  const cuda::DeviceProperties dev = cuda::device_properties(cuda::current_device());
  cuda::CompileOptions opts;
  opts.arch = dev.arch;
  const cuda::CompileResult compiled = cuda::compile_cuda("read_once.cu", kReadOnceSource, opts);
  const cuda::Library lib = cuda::Library::load(compiled.cubin);
  const cuda::Kernel kernel = lib.get_kernel("sinter_read_once");
  const std::size_t vectors = (bytes + 15) / 16;
  cuda::DeviceBuffer buffer(vectors * 16);
  cuda::DeviceBuffer sink(64);
  check_cuda(cudaMemsetAsync(buffer.data(), 0x5a, buffer.size(), stream), "cudaMemsetAsync");
  check_cuda(cudaMemsetAsync(sink.data(), 0, sink.size(), stream), "cudaMemsetAsync");
  const uint4* p = static_cast<const uint4*>(buffer.data());
  unsigned long long n = vectors;
  unsigned int* s = static_cast<unsigned int*>(sink.data());
  void* args[] = {&p, &n, &s};
  ReadFloor best;
  for (int per_sm : {1, 2, 4, 8}) {
    const int threads = 512;
    if (kernel.max_active_blocks_per_sm(threads, 0) < per_sm) continue;
    cuda::LaunchConfig cfg;
    cfg.grid = dim3(static_cast<unsigned>(dev.sm_count * per_sm));
    cfg.block = dim3(threads);
    cfg.stream = stream;
    const auto launch = [&] { kernel.launch(cfg, args); };
    launch();  // warm-up
    const double ms = median(time_calls(stream, std::max(runs, 3), launch));
    if (best.ms == 0 || ms < best.ms) best = {ms, static_cast<double>(bytes) / ms / 1e9, per_sm};
  }
  return best;
}

}  // namespace sinter::bench
