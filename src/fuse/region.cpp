#include <algorithm>

#include "fuse/region.hpp"

namespace sinter::fuse {

std::string_view to_string(RegionKind k) {
  switch (k) {
    case RegionKind::pointwise: return "pointwise";
    case RegionKind::rowwise: return "rowwise";
    case RegionKind::reduction: return "reduction";
    case RegionKind::matmul: return "matmul";
    case RegionKind::conv: return "conv";
    case RegionKind::sdpa: return "sdpa";
    case RegionKind::layout: return "layout";
    case RegionKind::alias: return "alias";
    case RegionKind::gather: return "gather";
    case RegionKind::collective: return "collective";
  }
  return "?";
}

std::string_view to_string(ExitReduction r) {
  switch (r) {
    case ExitReduction::global: return "global";
    case ExitReduction::rows: return "rows";
    case ExitReduction::columns: return "columns";
  }
  return "?";
}

std::vector<NodeId> Region::nodes() const {
  std::vector<NodeId> out(constants);
  out.insert(out.end(), prologue.begin(), prologue.end());
  if (anchor >= 0) out.push_back(anchor);
  out.insert(out.end(), epilogue.begin(), epilogue.end());
  for (const ExitReduce& r : reductions) out.push_back(r.node);
  return out;
}

}  // namespace sinter::fuse
