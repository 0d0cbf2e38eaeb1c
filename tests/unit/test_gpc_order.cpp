// The GPC order of a persistent GEMM's units (engines/jit/gpc_order.hpp): always a permutation
// (a unit left without items, or two on the same ones, would be wrong results), and on the
// placement measured on an H100 each GPC's units take one raster row.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "engines/jit/gpc_order.hpp"

using namespace sinter;

namespace {

bool is_permutation(const SinterUnitOrder& o, int units) {
  std::set<int> seen;
  for (int u = 0; u < units; ++u) {
    if (o.first[u] >= units || !seen.insert(o.first[u]).second) return false;
  }
  return true;
}

// Each cluster's GPC for a 128-CTA launch of 2-CTA clusters on an H100 80GB HBM3
// (bench/experiments/gpc_map_probe.cu, the same on 5 launches): four lone TPCs
// (GPCs 8-11), then round robin over GPCs 0-7 until GPC 0's four TPCs are full, then over 1-7.
std::vector<int> h100_pairs() {
  std::vector<int> g = {8, 9, 10, 11};
  for (int c = 4; c < 36; ++c) g.push_back((c - 4) % 8);
  for (int c = 36; c < 64; ++c) g.push_back(1 + (c - 36) % 7);
  return g;
}

}  // namespace

TEST(GpcOrder, H100PairsPutEachGpcOnOneRasterRow) {
  const std::vector<int> gpcs = h100_pairs();
  const SinterUnitOrder o = jit::gpc_unit_order(gpcs, 64, 8);
  ASSERT_EQ(o.units, 64);
  ASSERT_TRUE(is_permutation(o, 64));
  // the raster row of unit u's items in every wave is first[u] mod 8
  std::map<int, std::set<int>> rows_of_gpc;
  for (int u = 0; u < 64; ++u) rows_of_gpc[gpcs[u]].insert(o.first[u] % 8);
  for (int gpc = 1; gpc <= 7; ++gpc) EXPECT_EQ(rows_of_gpc[gpc].size(), 1u) << "GPC " << gpc;
  EXPECT_EQ(rows_of_gpc[0].size(), 1u);
  // GPCs 1-7 have a row each, GPC 0 and the lone TPCs share the eighth
  std::set<int> rows;
  for (int gpc = 1; gpc <= 7; ++gpc) rows.insert(*rows_of_gpc[gpc].begin());
  EXPECT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows.count(*rows_of_gpc[0].begin()), 0u);
  // in index order (the identity) GPC 1's eight units would sit on 5 rows: the order is the point
  std::set<int> index_rows;
  for (int u = 0; u < 64; ++u) {
    if (gpcs[u] == 1) index_rows.insert(u % 8);
  }
  EXPECT_GT(index_rows.size(), 1u);
}

TEST(GpcOrder, AnyPlacementGivesAPermutation) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    const int units = 2 + static_cast<int>(rng() % (SINTER_MAX_ORDERED_UNITS - 1));
    const int group_m = 1 + static_cast<int>(rng() % 40);
    const int gpc_count = 1 + static_cast<int>(rng() % 12);
    std::vector<int> gpcs(static_cast<size_t>(units));
    for (int& g : gpcs) g = static_cast<int>(rng() % static_cast<unsigned>(gpc_count));
    const SinterUnitOrder o = jit::gpc_unit_order(gpcs, units, group_m);
    ASSERT_EQ(o.units, units) << "trial " << trial;
    ASSERT_TRUE(is_permutation(o, units)) << "trial " << trial << ": " << units << " units, group " << group_m;
  }
}

TEST(GpcOrder, IndexOrderWhereThePlacementCannotServe) {
  const std::vector<int> gpcs = h100_pairs();
  EXPECT_EQ(jit::gpc_unit_order(gpcs, 65, 8).units, 0) << "more units than the placement measured";
  EXPECT_EQ(jit::gpc_unit_order(std::vector<int>(200, 0), 133, 8).units, 0) << "more units than the table holds";
  EXPECT_EQ(jit::gpc_unit_order(gpcs, 1, 8).units, 0) << "one unit has nothing to order";
  EXPECT_EQ(jit::gpc_unit_order({}, 64, 8).units, 0) << "no placement (no GPU, or not measured)";
}
