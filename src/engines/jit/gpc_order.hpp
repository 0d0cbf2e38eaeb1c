// The GPC order of a persistent GEMM's units (gemm_abi.h SinterUnitOrder): which work item each
// unit (a CTA, or a cluster) starts at, so that the units one GPC holds compute items of the same
// row of the raster at the same time.
//
// Why: the units walk items first, first + units, ... in grouped order (kGroupM item rows walk
// down the columns together), so items whose index has the same residue mod group_m share an item
// row, hence the same A boxes at each k-block. That holds in every wave where units is a multiple
// of group_m and the wave stays inside one raster group (4096^3: 64 units, groups of 8 x 16
// items); other grids share rows in part. Hopper's L2 request coalescer merges such identical
// reads when they come from one GPC at about the same moment (cuda/gpc_placement.hpp). In index
// order the hardware deals consecutive units to different GPCs, so co-located units share little:
// on the H100 at 4096^3 the L2 served 33.3 M sectors with 1.4 M merged. With each GPC's units on
// one residue class (one item row): 29.6 M with 5.1 M merged, and the GEMM went from 1.005-1.006x
// cuBLASLt's time to 0.993-0.995x (docs/benchmarks.md). A GPC's units on one column
// instead (sharing B, which the CTA pairs multicast) merged nothing: the coalescer merges plain
// reads only, never multicast ones.
#pragma once

#include <span>
#include <vector>

#include "gemm/gemm_abi.h"

namespace sinter::jit {

// unit_gpc: the GPC of each unit in index order (at least `units` of them); group_m: item rows of
// the kernel's raster group. The result maps unit u to first[u], a permutation of 0 .. units - 1
// (best fit: GPCs from the largest, each onto the residue class mod group_m with the fewest free
// items that still holds all its units, else the one with the most, spilling over). units 0
// (the identity) when unit_gpc is shorter than `units` or units exceeds SINTER_MAX_ORDERED_UNITS.
SinterUnitOrder gpc_unit_order(std::span<const int> unit_gpc, int units, int group_m);

}  // namespace sinter::jit
