// GPC map probe (issue 4, session 31). l2_coalesce_window_probe.cu found that the L2 request
// coalescer merges identical reads mostly when the readers sit in one GPC and run within a few
// hundred cycles of each other. A raster that wants merged reads must know which clusters of a
// persistent GEMM's grid share a GPC. PTX has no GPC register, so this probe infers it:
//   1. The SMs of one cluster are always in one GPC. Clusters of 16, 12, ..., 2 CTAs, as many as
//      fit, record their %smid; a union-find over "same cluster" gives the GPCs as SM sets.
//   2. Launches shaped like a GEMM's (one CTA an SM, 2-CTA clusters: ours, 128 CTAs on a 1-D grid;
//      cuBLASLt's (2, 66) grid) print each cluster's GPC, five times each, to see whether the
//      hardware places a cluster index on the same GPC every launch.
//   nvcc -O3 -std=c++17 -arch=sm_90a bench/experiments/gpc_map_probe.cu -o gpc_map_probe
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "probe_check.cuh"

constexpr int kSmem = 200 * 1024;  // one CTA an SM, as the GEMM

__global__ void record_sm(int* smid, long long spin) {
  const unsigned cta = blockIdx.y * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0) {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    smid[cta] = static_cast<int>(s);
  }
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

// A launch of record_sm over `grid` in clusters of `cluster` CTAs along x (attr: its storage).
cudaLaunchConfig_t cluster_config(dim3 grid, int cluster, cudaLaunchAttribute& attr) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(128);
  cfg.dynamicSmemBytes = kSmem;
  attr = cudaLaunchAttribute{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cfg;
}

// Launches grid x cluster CTAs (cluster along x) and returns each CTA's SM.
std::vector<int> launch(dim3 grid, int cluster, int* dev) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_config(grid, cluster, attr);
  const int n = static_cast<int>(grid.x * grid.y);
  CHECK(cudaMemset(dev, 0xff, n * sizeof(int)));
  CHECK(cudaLaunchKernelEx(&cfg, record_sm, dev, 200000LL));
  CHECK(cudaDeviceSynchronize());
  std::vector<int> host(n);
  CHECK(cudaMemcpy(host.data(), dev, n * sizeof(int), cudaMemcpyDeviceToHost));
  return host;
}

int max_clusters(int cluster) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_config(dim3(cluster * 64), cluster, attr);
  int n = 0;
  CHECK(cudaOccupancyMaxActiveClusters(&n, record_sm, &cfg));
  return n;
}

int main() {
  CHECK(cudaSetDevice(0));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaFuncSetAttribute(record_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CHECK(cudaFuncSetAttribute(record_sm, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int* dev = nullptr;
  CHECK(cudaMalloc(&dev, 4096 * sizeof(int)));
  UnionFind uf(sms);
  std::printf("max active clusters (one CTA an SM):");
  for (int size : {16, 14, 12, 10, 9, 8, 7, 6, 5, 4, 3, 2}) {
    const int n = max_clusters(size);
    std::printf(" %dx%d", size, n);
    if (n == 0) continue;
    for (int rep = 0; rep < 3; ++rep) {
      const std::vector<int> s = launch(dim3(size * n), size, dev);
      for (int c = 0; c < n; ++c) {
        for (int r = 1; r < size; ++r) uf.join(s[c * size], s[c * size + r]);
      }
    }
  }
  std::printf("\n");
  std::map<int, std::vector<int>> sets;
  for (int s = 0; s < sms; ++s) sets[uf.find(s)].push_back(s);
  std::map<int, int> gpc_of;  // SM -> GPC index (GPCs numbered by their lowest SM)
  int g = 0;
  for (auto& [root, members] : sets) {
    std::printf("GPC %d (%zu SMs):", g, members.size());
    for (int s : members) {
      std::printf(" %d", s);
      gpc_of[s] = g;
    }
    std::printf("\n");
    ++g;
  }
  struct Shape {
    const char* name;
    dim3 grid;
  };
  for (const Shape& sh : {Shape{"ours 128 CTAs, 1-D grid, clusters of 2", dim3(128)},
                          Shape{"132 CTAs, 1-D grid, clusters of 2", dim3(132)},
                          Shape{"cuBLASLt-like (2, 66) grid, clusters of 2", dim3(2, 66)}}) {
    std::printf("%s: each cluster's GPC, five launches\n", sh.name);
    std::set<std::string> distinct;
    for (int rep = 0; rep < 5; ++rep) {
      const std::vector<int> s = launch(sh.grid, 2, dev);
      std::string line;
      for (size_t c = 0; c * 2 < s.size(); ++c) {
        const int a = gpc_of.count(s[2 * c]) ? gpc_of[s[2 * c]] : -1;
        const int b = gpc_of.count(s[2 * c + 1]) ? gpc_of[s[2 * c + 1]] : -1;
        line += a == b ? std::to_string(a) : "?";
        line += c % 16 == 15 ? " | " : " ";
      }
      distinct.insert(line);
      std::printf("  %s\n", line.c_str());
    }
    std::printf("  %zu distinct placement(s) in 5 launches\n", distinct.size());
    const std::vector<int> s = launch(sh.grid, 2, dev);
    std::printf("  SMs of the last launch:");
    for (int v : s) std::printf(" %d", v);
    std::printf("\n");
  }
  CHECK(cudaFree(dev));
  return 0;
}
