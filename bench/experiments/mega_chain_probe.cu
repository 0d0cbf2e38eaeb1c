// mega_chain_probe: the megakernel's own dispatcher (kernels/mega/megakernel.cuh) on the 200-op
// chain, with hand-built tables, to split its cost per op between the dispatcher and the task code.
// chain_probe (the same folder) measured a mimic of the dispatcher at ~0.59 us per op on an H100
// while the generated chain megakernel takes ~1.14 us per op; this probe runs the real dispatcher
// loop with
//   empty      a task function that returns at once: the dispatcher alone
//   minimal    a hand-written float4 sigmoid reading its pointers from the same argument struct
//   pointwise  the pointwise template's task as the jit engine generates it (sigmoid)
//   mixed      the chain's real mix: pointwise sigmoid, tanh, neg in turn
// each on 1 CTA and on a full grid (2 CTAs per SM) of which all but one have empty queues (the real
// launch's shape), the median of 15 launches of 200 tasks, as microseconds per task.
#include "mega_chain_tasks.cuh"

extern "C" __global__ void __launch_bounds__(256, 2) mega_chain(const __grid_constant__ SinterMegaParams p) {
  sinter_mega_main(p, Dispatch{}, SinterMegaNoPrologue{});
}

#undef blockIdx
#undef gridDim
#undef blockDim
#undef __syncthreads

#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  constexpr int kTasks = 200, kElems = 1024;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("mega_chain_probe on %s: the megakernel dispatcher over %d dependent tasks of %d f32, 256 threads\n",
              prop.name, kTasks, kElems);
  const int full = 2 * prop.multiProcessorCount;  // the megakernel's grid: __launch_bounds__(256, 2)
  ChainTables chain(kTasks, kElems, full);
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  const char* names[] = {"empty", "minimal", "pointwise", "mixed"};
  for (int variant = 0; variant < 4; ++variant) {
    chain.set_tasks(variant < 3 ? variant : -1);
    for (int ctas : {1, full}) {
      const SinterMegaParams p = chain.params(ctas);
      std::vector<float> us;
      for (int rep = 0; rep < 16; ++rep) {
        CHECK(cudaEventRecord(e0));
        mega_chain<<<ctas, 256, ChainTables::dynamic()>>>(p);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaGetLastError());
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep > 0) us.push_back(ms * 1000.0f / kTasks);
      }
      std::sort(us.begin(), us.end());
      std::printf("%-10s %3d CTAs  %.3f us per task (launch included)\n", names[variant], ctas, us[us.size() / 2]);
    }
  }
  return 0;
}
