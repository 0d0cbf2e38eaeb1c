#include "engines/jit/gpc_order.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "sinter/error.hpp"

namespace sinter::jit {

SinterUnitOrder gpc_unit_order(std::span<const int> unit_gpc, int units, int group_m) {
  SinterUnitOrder order{};
  if (units <= 1 || units > SINTER_MAX_ORDERED_UNITS || static_cast<int>(unit_gpc.size()) < units || group_m < 1) {
    return order;
  }
  // the units of each GPC, in index order
  std::map<int, std::vector<int>> by_gpc;
  for (int u = 0; u < units; ++u) by_gpc[unit_gpc[static_cast<size_t>(u)]].push_back(u);
  std::vector<std::vector<int>> gpcs;
  for (auto& [gpc, members] : by_gpc) gpcs.push_back(std::move(members));
  std::stable_sort(gpcs.begin(), gpcs.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  // the free items of each residue class, ascending
  const int classes = std::min(group_m, units);
  std::vector<std::vector<int>> free(static_cast<size_t>(classes));
  for (int s = units - 1; s >= 0; --s) free[static_cast<size_t>(s % group_m)].push_back(s);  // back() is the smallest
  for (const std::vector<int>& members : gpcs) {
    size_t next = 0;
    while (next < members.size()) {
      const size_t want = members.size() - next;
      int pick = -1;
      for (int c = 0; c < classes; ++c) {  // best fit: the smallest class that holds the rest
        const size_t n = free[static_cast<size_t>(c)].size();
        if (n >= want && (pick < 0 || n < free[static_cast<size_t>(pick)].size())) pick = c;
      }
      if (pick < 0) {  // none holds them all: the fullest, and the rest go on
        for (int c = 0; c < classes; ++c) {
          if (pick < 0 || free[static_cast<size_t>(c)].size() > free[static_cast<size_t>(pick)].size()) pick = c;
        }
      }
      std::vector<int>& slots = free[static_cast<size_t>(pick)];
      while (next < members.size() && !slots.empty()) {
        order.first[members[next++]] = static_cast<unsigned char>(slots.back());
        slots.pop_back();
      }
    }
  }
  // a permutation, or a bug here: a unit left without items, or two on the same ones, would be
  // wrong results, not a slow kernel
  std::vector<bool> seen(static_cast<size_t>(units), false);
  for (int u = 0; u < units; ++u) {
    const int f = order.first[u];
    if (f >= units || seen[static_cast<size_t>(f)]) {
      throw Error(ErrorCode::internal, "gpc_unit_order: not a permutation of " + std::to_string(units) + " units");
    }
    seen[static_cast<size_t>(f)] = true;
  }
  order.units = units;
  return order;
}

}  // namespace sinter::jit
