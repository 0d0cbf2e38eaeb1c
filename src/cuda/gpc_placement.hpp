// Where the hardware places the units of a persistent grid: the GPC of each cluster, in cluster
// index order, for a launch of one CTA an SM on an idle GPU.
//
// Why: the L2 request coalescer (Hopper's LRC, between the crossbar and the L2 slices) merges
// identical reads that arrive within a few hundred cycles from SMs of one GPC, and hardly at all
// from SMs of different GPCs (bench/experiments/l2_coalesce_window_probe.cu; measurements in
// docs/benchmark-log.md). A GEMM whose co-located units read the same operand rows at the same k-block reads
// fewer sectors from L2 and runs faster (src/engines/jit/gpc_order.hpp). PTX has no GPC
// register, so this measures it (bench/experiments/gpc_map_probe.cu is the standalone probe):
//   1. the CTAs of one cluster always share a GPC: clusters of 8, 7, ..., 2 CTAs, as many as fit,
//      record their SM; a union-find over "same cluster" groups the SMs into GPCs;
//   2. a launch of as many `cluster_size` clusters as fit records each cluster's SM, hence GPC.
// The hardware hands out clusters in index order by a fixed rule (the same on every launch of
// an idle H100, and a smaller grid's placement is a prefix of a larger one's), so the result
// serves any grid up to that size. Under other work on the GPU, or under a programmatic launch
// that starts while its predecessor's CTAs still hold SMs, the placement can differ: a unit
// order made from it must stay correct under any placement and only lose its speed.
#pragma once

#include <vector>

namespace sinter::cuda {

// GPC index (0, 1, ... in order of first appearance) of each cluster of `cluster_size` CTAs (1 or
// 2) of a persistent launch, one CTA an SM; measured once per device and size, then cached
// (a failure too: ErrorCode::cuda with the first attempt's message, every later call).
// ErrorCode::invalid_argument for another cluster size.
const std::vector<int>& cluster_gpcs(int device, int cluster_size);

}  // namespace sinter::cuda
